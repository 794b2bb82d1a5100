// Package moe is an expert-parallel MoE layer: its shape, where its experts
// live, which experts each token picks, what that means for traffic, and
// the DeepEP-style dispatch and combine simulated over any transport
// (RunLayer), with per-rank timings, a critical-path breakdown by cause and
// correctness checks of every delivery. The layer knows a transport only
// by what it declares (transport.Transport): its name, queue depth and the
// causes of its own NIC time, which join the breakdown between egress and
// wire.
//
// In: a Shape (experts, top-k, hidden size, tokens per rank, ranks, GPUs
// per node, dtypes) and either a RoutingSpec with a seed (Generate), with
// an optional GroupLimit (DeepSeek-V3's group-limited gating), or explicit
// top-k ids from a trace (FromTopk).
//
// Out:
//   - message sizes derived from the dtypes, after DeepEP: LLDispatchBytes,
//     LLCombineBytes, NormalTokenBytes;
//   - placement: physical expert p on rank p/LocalExperts(), serving
//     logical expert p%Experts (RankOfExpert, LocalIndex, LogicalOf,
//     Replicas, PhysicalFor);
//   - a Routing: per source rank, [tokens][top-k] physical ids and weights,
//     with a Hash that shows two runs used the same routing;
//   - layouts, each computed in one pass into flat slices:
//     Routing.LL gives the low-latency messages (one per selection) with
//     their receive slots and per-(source, expert) counts;
//     Routing.Normal gives DeepEP's get_dispatch_layout (tokens per rank,
//     per node and per expert, and is_token_in_rank in sparse form);
//     both carry received loads (Load) and a Locality breakdown;
//   - the layer run (RunLayer): LL mode message by message; normal mode
//     on one node one hop per rank, across nodes DeepEP's internode
//     kernels (one RDMA copy per (token, node), NVLink forwarding,
//     credits); per phase the physical bytes and DeepEP's own count
//     (DeepEPGBps);
//   - Routing.CheckGroups counts tokens beyond a group limit;
//   - oracles: LLLayout.CheckDispatch (DispatchCheck as messages arrive)
//     checks delivered messages against
//     the receive layout [local expert][source rank][slot], and
//     Routing.CheckCombine checks combined outputs against
//     CombineReference, built from the Payload and ExpertOutput stand-ins.
//
// The layer run, file by file: layer.go runs a layer (RunLayer); config.go
// is its input and the checks every mode shares; mode.go holds what differs
// between LL and normal mode, in one table the rest reads; phase.go is the
// phase every mode's dispatch and combine embed (phaseRun: engine,
// connection, posting warps, readiness); gpu.go the GPU's copies and costs.
// Each mode's phases are files of their own: ll_dispatch.go and
// ll_combine.go; on one node normal_phase.go with normal_dispatch.go and
// normal_combine.go; across nodes internode_phase.go (streams, chunks,
// credits) with internode_dispatch.go and internode_combine.go.
//
// Everything is deterministic: the same inputs and seed give the same
// routing, layouts and hash.
package moe
