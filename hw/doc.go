// Package hw models the hardware under a GPU-submitted RDMA write: the
// submitting SM (costs in cycles at the SM clock plus fixed time, a shared
// store path, stores that drain one after another), the PCIe hops, the NIC
// (per-QP doorbell handling and in-order WQE processing, WQE and payload DMA
// reads, a NIC-wide message-rate ceiling, the link's line rate with per-packet
// overhead; a GPU's several NICs, each with its own pipeline and context cache,
// and a NIC's planes, each a link of its own, with a rank's queues striped over
// them), the fabric, the responder NIC and the CQE written back.
//
// Models take their constants as typed specs that a profile.Profile
// resolves once (profile.GPUSpec, NICSpec, NVLinkSpec, RecoverySpec,
// ComputeSpec: GPUCostsOf, NICParamsOf, NVLinkOf, RecoveryOf, GEMMCostsOf;
// the NewX constructors take a profile and resolve its spec), convert
// their ns to the engine's clock, and run on a sim.Engine. Transports drive them; the NIC reports deliveries and
// completions back through the Sink interface.
package hw
