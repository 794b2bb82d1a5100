package preset

import "moebench/transport/proxy"

// Proxy presets: the libraries' queue, worker and batching choices of
// Table 1 as mini-proxy configurations. Their handoffs use mini-proxy's
// baseline protocol (shared rings, any number of producers); the
// libraries' own software costs beyond it are not modelled.
func proxyPresets() []Preset {
	c := func(workers, rings, batch int, h proxy.Handoff, comp proxy.Completion) proxy.Config {
		return proxy.Config{Workers: workers, Rings: rings, Batch: batch, Handoff: h, Completion: comp, State: proxy.Cold}
	}
	return []Preset{
		{Name: "mini-proxy", Mechanism: "mini-proxy",
			Description: "mini-proxy T4/R32/B16: four CPU workers pinned near the NIC, 32 host rings, up to 16 work requests chained per post, baseline handoff, GPU-resident completion counter",
			Source:      "paper §4.2, Table 11 (T4/R32/B16)", Config: c(4, 32, 16, proxy.Baseline, proxy.CompletionGPU)},
		{Name: "nvshmem-ibrc", Mechanism: "mini-proxy",
			Description: "NVSHMEM IBRC: one CPU proxy thread, one descriptor FIFO per PE (atomic reservation, cached progress, GPU-scope fence), one work request per post, host-resident completion",
			Source:      "paper Table 1 (one CPU proxy, one descriptor FIFO per PE); Table 6 (enqueue 92% clock-sensitive: no PCIe read)", Config: c(1, 1, 1, proxy.FIFO, proxy.CompletionHost)},
		{Name: "gin-proxy", Mechanism: "mini-proxy",
			Description: "NCCL GIN Proxy: four CPU workers with per-context descriptor rings, library-managed posting (one request per post)",
			Source:      "paper Table 1 and Table 10 (GIN Proxy, 4 contexts)", Config: c(4, 4, 1, proxy.Baseline, proxy.CompletionHost)},
		{Name: "uccl-ep", Mechanism: "mini-proxy",
			Description: "UCCL-EP: eight CPU workers, eight FIFOs per worker, adaptive chains (up to 16)",
			Source:      "paper Table 1 and Table 10 (UCCL-EP, 8 workers)", Config: c(8, 64, 16, proxy.Baseline, proxy.CompletionHost),
			Limits: ucclEPLimits()},
		{Name: "mscclpp", Mechanism: "mini-proxy",
			Description: "MSCCL++ PortChannel: eight CPU services, one FIFO per service, one request per post",
			Source:      "paper Table 1 and Table 10 (MSCCL++, patched, 8 services)", Config: c(8, 8, 1, proxy.Baseline, proxy.CompletionHost)},
		{Name: "fabric-lib", Mechanism: "mini-proxy",
			Description: "fabric-lib: one CPU worker per NIC, paged chains of up to four requests",
			Source:      "paper Table 1 and Table 10 (fabric-lib, one worker)", Config: c(1, 1, 4, proxy.Baseline, proxy.CompletionHost)},
	}
}
