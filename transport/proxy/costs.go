package proxy

import (
	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// costs are the proxy path's constants resolved for one Config: GPU-side
// costs at the profile's SM clock, host-side costs at the worker state.
type costs struct {
	gpu      hw.GPUCosts
	hostLoad sim.Time // SM load of host memory over PCIe
	// hostRead is one such load's share of the GPU's PCIe read rate: loads
	// of all its threads overlap up to that rate, then queue.
	hostRead  sim.Time
	hostStore sim.Time // SM posted 16 B store to host memory

	descFlight  sim.Time
	basePublish sim.Time
	gdrFlight   sim.Time
	hostMMIO    sim.Time
	hostFetch   sim.Time

	ringPoll, descConsume   sim.Time
	postChain, postWR       sim.Time
	cqPoll, cqEmpty         sim.Time
	counterHost, counterGDR sim.Time
}

func newCosts(p *profile.Profile, s CPUState) costs {
	f := p.Get("gpu.sm_clock_mhz")
	gpuCost := func(name string) sim.Time {
		return sim.Ns(p.Get(name+".cycles")*1000/f + p.Get(name+".ns"))
	}
	mhz, nsScale := p.Get("proxy.cpu_cold_mhz"), 1.0
	if s == Warm {
		mhz, nsScale = p.Get("proxy.cpu_warm_mhz"), p.Get("proxy.warm_ns_ratio")
	}
	host := func(name string) sim.Time {
		return sim.Ns(p.Get(name+".cycles")*1000/mhz + p.Get(name+".ns")*nsScale)
	}
	ns := func(name string) sim.Time { return sim.Ns(p.Get(name)) }
	return costs{
		gpu:         hw.NewGPUCosts(p),
		hostLoad:    gpuCost("gpu.host_load"),
		hostRead:    hostReadSlot(p.Get("pcie.host_read_mps")),
		hostStore:   gpuCost("gpu.host_store"),
		descFlight:  ns("proxy.desc_flight_ns"),
		basePublish: ns("proxy.base_publish_ns"),
		gdrFlight:   ns("proxy.gdr_flight_ns"),
		hostMMIO:    ns("proxy.host_mmio_ns"),
		hostFetch:   ns("proxy.nic_host_fetch_ns"),
		ringPoll:    host("proxy.ring_poll"),
		descConsume: host("proxy.desc_consume"),
		postChain:   host("proxy.post_chain"),
		postWR:      host("proxy.post_wr"),
		cqPoll:      host("proxy.cq_poll"),
		cqEmpty:     host("proxy.cq_empty"),
		counterHost: host("proxy.counter_host"),
		counterGDR:  host("proxy.counter_gdr"),
	}
}

// nicParams are the NIC constants for a fabric whose queues host threads
// own: doorbells a CPU rings are handled at proxy.nic_doorbell_ns, and the
// NIC-wide pipeline carries host-queue WQEs at most at the host path's
// ceiling.
func nicParams(p *profile.Profile) hw.NICParams {
	np := hw.NewNICParams(p)
	np.Doorbell = sim.Ns(p.Get("proxy.nic_doorbell_ns"))
	np.MsgSlot = max(np.MsgSlot, sim.Ns(1000/p.Get("proxy.host_msg_rate_mps")))
	return np
}

// l2Detect is when an SM spinning on a GPU-memory word sees a value that
// became visible at v: polls are an L2 load plus the loop gap apart, and
// the value lands on average half a period before the next poll.
func (c *costs) l2Detect(v sim.Time) sim.Time {
	return v + (c.gpu.L2Load+c.gpu.PollGap)/2 + c.gpu.L2Load
}

// hostDetect is the same for a word in host memory, each poll a PCIe read.
func (c *costs) hostDetect(v sim.Time) sim.Time {
	return v + (c.hostLoad+c.gpu.PollGap)/2 + c.hostLoad
}

// hostReadSlot is one host load's share of the GPU's PCIe read rate; the
// schema's largest rate means no limit.
func hostReadSlot(mps float64) sim.Time {
	if mps >= 1e6 {
		return 0
	}
	return sim.Ns(1000 / mps)
}
