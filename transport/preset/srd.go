package preset

import "moebench/transport/srd"

// The stacks that run DeepEP-style expert parallelism over AWS EFA, as
// configurations of the srd mechanism. Importing srd links it into the
// CLI.
func init() { Register(srdPresets()...) }

// ginLib is NCCL GIN's device-API software beyond the mechanism, per
// post, taken as GDAKI's on P-IB (Table 3: 1.60 µs issue less the 0.70
// the mechanism accounts for; 85% clock-sensitive, Table 6).
var ginLib = [2]float64{0.85 * 900 * 1.97, 0.15 * 900}

func srdPresets() []Preset {
	return []Preset{
		{Name: "deepep-v2-efa", Mechanism: srd.Name,
			Description: "DeepEP V2 over NCCL GIN on EFA, posted from the GPU as EFA DP Direct does: two SRD QPs per EFA device, 64 B WQEs, a 32-bit producer-index doorbell between system-scope fences, counts and flags as writes with immediate once their data completed",
			Source:      "paper §6 (EFA DP Direct: producer-index doorbell between system-scope fences); GIN's software as GDAKI's, Table 3 (1.60 µs issue); two QPs per device a model assumption (GIN's contexts)",
			Config:      srd.Config{Style: srd.GPU, QPsPerNIC: 2, LibCycles: ginLib[0], LibNs: ginLib[1]}},
		{Name: "uccl-ep-efa", Mechanism: srd.Name,
			Description: "UCCL-EP on EFA: four CPU proxy threads per GPU with eight descriptor FIFOs each (32 rings), posting through EFA verbs, one SRD QP per thread on each device; counts and flags as writes with immediate that the receiver's proxy stores",
			Source:      "UCCL-EP upstream (uccl-project/uccl, ep/include: kNumProxyThs = 4, kChannelPerProxy = 8, 16 B TransferCmd in 2,048-slot rings); proxy costs mini-proxy's (paper §4.2)",
			Config:      srd.Config{Style: srd.Proxy, QPsPerNIC: 4, Workers: 4, Rings: 32},
			Limits:      ucclEPLimits()},
		{Name: "deepep-v1-efa", Mechanism: srd.Name,
			Description: "DeepEP V1 over NVSHMEM's libfabric host proxy on EFA: one CPU proxy thread and one descriptor FIFO per PE, fi_write through libfabric's efa provider on one SRD QP a device",
			Source:      "paper Table 1 (NVSHMEM's proxy: one CPU thread, one FIFO per PE); libfabric's per-request software (300 ns) a model assumption: no published figure for the efa provider's fi_write path",
			Config:      srd.Config{Style: srd.Proxy, QPsPerNIC: 1, Workers: 1, Rings: 1, HostNs: 300},
			Limits:      deepEPV1Limits()},
	}
}
