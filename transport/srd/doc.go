// Package srd is AWS EFA's Scalable Reliable Datagram transport as a
// mechanism of its own ("srd"), posted from the GPU (EFA DP Direct) or
// through a CPU proxy (libfabric's fi_write, as UCCL-EP and NVSHMEM's
// libfabric transport post it).
//
// What sets it apart from the RC mechanisms (mini-gda, mini-proxy):
//
//   - Queues per EFA device, not per peer: a rank opens a few SRD QPs on
//     each of its devices and reaches every peer through address handles.
//     The device caches handles (efa.ah_entries); a WQE to a peer whose
//     handle was evicted waits efa.ah_miss_ns. There are no connections.
//   - Reliable but unordered: a message is cut into packets of link.mtu_b
//     sprayed over up to efa.paths spines of a two-tier fabric, and WQEs
//     of one QP leave as their payloads are read, not in posting order
//     (hw.Fabric.Datagram). A message completes when its last packet is
//     acknowledged. Under a fault plan (transport.Env.Faults) a lost
//     packet is sent again alone, efa.rto_us after it left, on the path
//     the spray then picks; nothing else waits for it. The send completes
//     in error (EFA_IO_COMP_STATUS_LOCAL_ERROR_UNRESP_REMOTE) only once a peer has answered
//     nothing for efa.unresponsive_ms, so loss that fails an RC queue
//     delays SRD. efa.rto_us must exceed the round trip.
//   - No RDMA atomics: a count or flag the layer posts as an atomic
//     travels as an 8 B write with immediate data, sent only once every
//     write posted before it from the same rank to the same peer and
//     channel has completed, so that a receiver never sees a flag before
//     its data. The receiver learns of it from its completion queue: the
//     GPU polls it (GPU posting) or the peer's proxy worker does and
//     stores the flag through GDRCopy (proxy posting). The hold is the
//     breakdown's "flag_wait".
//
// GPU posting follows EFA DP Direct as the paper in the project's
// reference describes it: the warp reserves a slot of the shared SQ,
// writes the 64 B WQE, and rings a 32-bit producer-index doorbell between
// two system-scope fences. Proxy posting has the warp write a 16 B
// descriptor into a host ring (a system-scope fence between its body and
// its valid byte); the ring's CPU worker reads it, posts the work request
// through the library, rings the device, and polls the completions of
// what it posted.
//
// The mechanism is HostBound: it runs on a profile with EFA
// (efa.generation above 0), where "all" takes it and the RC mechanisms
// refuse to run.
package srd
