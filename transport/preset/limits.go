package preset

import (
	"math"

	"moebench/transport"
)

// deepEPV1 is the DeepEP commit the V1 limits are read at: the last
// before V2's release moved V1 under csrc/legacy (deepseek-ai/DeepEP
// 567632dd59810d77b3cc05553df953cc0f779799).
const deepEPV1 = "DeepEP 567632dd"

// ucclEP is the UCCL-EP commit its limits are read at
// (uccl-project/uccl 038d61ac5e97834f1991f4dbbc704e6169a90af0; its
// ep/include/ep_configs.cuh read at 072a55c951f62ccb2ca99412e0361baf3a2a4813).
const ucclEP = "UCCL-EP 038d61ac"

// ucclEPLimits are the bounds UCCL-EP's own code puts on a deployment:
// DeepEP V1's normal-mode buffer checks, with the RDMA ranks counted over
// the host's GPUs (get_num_max_nvl_peers, cudaGetDeviceCount) rather than
// a fixed 8.
func ucclEPLimits() []transport.LibraryLimit {
	return []transport.LibraryLimit{
		{Name: "uccl-ep.normal_nodes", Figure: transport.FigureNodes, Modes: []string{"normal"}, Max: 20,
			Words:  "the most nodes (RDMA ranks) UCCL-EP's normal-mode kernels take",
			Source: ucclEP + ", ep/include/ep_configs.cuh: NUM_MAX_RDMA_PEERS 20; ep/src/uccl_ep.cc Buffer::Buffer asserts num_ranks <= max_nvl_peers * NUM_MAX_RDMA_PEERS unless low_latency_mode (max_nvl_peers the host's GPUs), and internode_dispatch get_num_rdma_ranks() <= NUM_MAX_RDMA_PEERS"},
		{Name: "uccl-ep.normal_rdma_bytes", Figure: transport.FigureRDMABytes, Modes: []string{"normal"}, Max: math.MaxInt32,
			Words:  "the most bytes UCCL-EP's normal-mode RDMA buffer may take",
			Source: ucclEP + ", ep/src/uccl_ep.cc Buffer::Buffer: num_rdma_bytes <= std::numeric_limits<int>::max() unless low_latency_mode"},
		{Name: "uccl-ep.local_experts", Figure: transport.FigureLocalExperts, Modes: []string{"normal"}, Max: 1024,
			Words:  "the most experts a rank holds in UCCL-EP's normal-mode dispatch",
			Source: ucclEP + ", ep/src/uccl_ep.cc: NUM_MAX_LOCAL_EXPERTS 1024, the expert counters' array"},
	}
}

// deepEPV1Limits are the bounds DeepEP V1's own code puts on a
// deployment, whatever transport carries it (NVSHMEM's IBGDA or its
// libfabric proxy): what its host asserts refuse when the Buffer is built
// or a kernel launched.
func deepEPV1Limits() []transport.LibraryLimit {
	return []transport.LibraryLimit{
		{Name: "deepep-v1.normal_ranks", Figure: transport.FigureRanks, Modes: []string{"normal"}, Max: 8 * 20,
			Words:  "the most ranks DeepEP V1's normal-mode kernels take",
			Source: deepEPV1 + ", csrc/kernels/configs.cuh: NUM_MAX_NVL_PEERS 8 × NUM_MAX_RDMA_PEERS 20; csrc/deep_ep.cpp Buffer::Buffer asserts num_ranks <= NUM_MAX_NVL_PEERS * NUM_MAX_RDMA_PEERS unless low_latency_mode, and internode_dispatch num_rdma_ranks <= NUM_MAX_RDMA_PEERS"},
		{Name: "deepep-v1.normal_rdma_bytes", Figure: transport.FigureRDMABytes, Modes: []string{"normal"}, Max: math.MaxInt32,
			Words:  "the most bytes DeepEP V1's normal-mode RDMA buffer may take",
			Source: deepEPV1 + ", csrc/deep_ep.cpp Buffer::Buffer: num_rdma_bytes <= std::numeric_limits<int>::max() unless low_latency_mode"},
		{Name: "deepep-v1.local_experts", Figure: transport.FigureLocalExperts, Modes: []string{"normal"}, Max: 1024,
			Words:  "the most experts a rank holds in DeepEP V1's normal-mode dispatch",
			Source: deepEPV1 + ", csrc/kernels/configs.cuh: NUM_MAX_LOCAL_EXPERTS 1024; csrc/deep_ep.cpp intranode_dispatch and internode_dispatch assert num_experts / num_ranks <= NUM_MAX_LOCAL_EXPERTS"},
		{Name: "deepep-v1.ll_topk", Figure: transport.FigureTopK, Modes: []string{"ll"}, Max: 11,
			Words:  "the most experts per token DeepEP V1's LL kernels take",
			Source: deepEPV1 + ", csrc/kernels/internode_ll.cu: kNumMaxTopK = 11 in dispatch and combine, EP_HOST_ASSERT(num_topk <= kNumMaxTopK)"},
		{Name: "deepep-v1.ll_rdma_bytes", Figure: transport.FigureRDMABytes, Modes: []string{"ll"}, Max: 16*math.MaxInt32 - 1,
			Words:  "the most bytes DeepEP V1's LL RDMA buffer may take (16 B units an int counts)",
			Source: deepEPV1 + ", csrc/deep_ep.cpp Buffer::Buffer: num_rdma_bytes / sizeof(int4) < std::numeric_limits<int>::max()"},
	}
}
