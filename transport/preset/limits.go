package preset

import (
	"math"

	"moebench/moe"
)

// deepEPV1 is the DeepEP commit the V1 limits are read at: the last
// before V2's release moved V1 under csrc/legacy (deepseek-ai/DeepEP
// 567632dd59810d77b3cc05553df953cc0f779799).
const deepEPV1 = "DeepEP 567632dd"

// deepEPV1Limits are the bounds DeepEP V1's own code puts on a
// deployment, whatever transport carries it (NVSHMEM's IBGDA or its
// libfabric proxy): what its host asserts refuse when the Buffer is built
// or a kernel launched.
func deepEPV1Limits() []moe.LibraryLimit {
	return []moe.LibraryLimit{
		{Name: "deepep-v1.normal_ranks", Figure: moe.FigureRanks, Modes: []moe.Mode{moe.Normal}, Max: 8 * 20,
			Words:  "the most ranks DeepEP V1's normal-mode kernels take",
			Source: deepEPV1 + ", csrc/kernels/configs.cuh: NUM_MAX_NVL_PEERS 8 × NUM_MAX_RDMA_PEERS 20; csrc/deep_ep.cpp Buffer::Buffer asserts num_ranks <= NUM_MAX_NVL_PEERS * NUM_MAX_RDMA_PEERS unless low_latency_mode, and internode_dispatch num_rdma_ranks <= NUM_MAX_RDMA_PEERS"},
		{Name: "deepep-v1.normal_rdma_bytes", Figure: moe.FigureRDMABytes, Modes: []moe.Mode{moe.Normal}, Max: math.MaxInt32,
			Words:  "the most bytes DeepEP V1's normal-mode RDMA buffer may take",
			Source: deepEPV1 + ", csrc/deep_ep.cpp Buffer::Buffer: num_rdma_bytes <= std::numeric_limits<int>::max() unless low_latency_mode"},
		{Name: "deepep-v1.local_experts", Figure: moe.FigureLocalExperts, Modes: []moe.Mode{moe.Normal}, Max: 1024,
			Words:  "the most experts a rank holds in DeepEP V1's normal-mode dispatch",
			Source: deepEPV1 + ", csrc/kernels/configs.cuh: NUM_MAX_LOCAL_EXPERTS 1024; csrc/deep_ep.cpp intranode_dispatch and internode_dispatch assert num_experts / num_ranks <= NUM_MAX_LOCAL_EXPERTS"},
		{Name: "deepep-v1.ll_topk", Figure: moe.FigureTopK, Modes: []moe.Mode{moe.LL}, Max: 11,
			Words:  "the most experts per token DeepEP V1's LL kernels take",
			Source: deepEPV1 + ", csrc/kernels/internode_ll.cu: kNumMaxTopK = 11 in dispatch and combine, EP_HOST_ASSERT(num_topk <= kNumMaxTopK)"},
		{Name: "deepep-v1.ll_rdma_bytes", Figure: moe.FigureRDMABytes, Modes: []moe.Mode{moe.LL}, Max: 16*math.MaxInt32 - 1,
			Words:  "the most bytes DeepEP V1's LL RDMA buffer may take (16 B units an int counts)",
			Source: deepEPV1 + ", csrc/deep_ep.cpp Buffer::Buffer: num_rdma_bytes / sizeof(int4) < std::numeric_limits<int>::max()"},
	}
}
