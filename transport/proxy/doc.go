// Package proxy is mini-proxy in the model: GPU threads hand 16 B request
// descriptors to CPU workers through rings in host memory, and the workers
// build the RDMA writes and post them through their own NIC queue pairs.
//
// What flows in: a profile (GPU costs, the NIC and fabric, and the proxy's
// host-side constants) and a Config: workers T, rings R, a batch B of work
// requests chained into one post, the GPU-CPU handoff (baseline: a device
// atomic reserves the slot, a PCIe read checks host-resident progress and a
// system-scope release publishes the descriptor; tuned: one producer per
// ring, cached progress, validity in the descriptor, one posted store), the
// completion path (a host-resident counter, or a GPU-resident one the
// worker writes through GDRCopy) and the worker cores' state (cold: base
// clock; warm: turbo, uncore ramped up).
//
// The model runs the protocol as events at each actor's own local time:
// producers reserve slots and wait for ring space, workers poll their rings
// round-robin and their CQ, chain up to B descriptors, post and ring, reap
// completions and publish progress (a ring whose next descriptor's send
// queue is full waits for a CQE while the worker serves the others); the
// hw NIC and fabric carry the writes. Idle workers do not spin in the
// engine: a worker that finds nothing computes the slot of its polling
// loop at which the next known descriptor or CQE becomes visible and
// sleeps until then, which gives the same times as polling without the
// events.
//
// What flows out: the paper's proxy microbenchmarks (SingleOp, Capacity,
// Loaded, Goodput) and a transport.Transport (New) for the MoE workload.
package proxy
