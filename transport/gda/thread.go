package gda

import (
	"moebench/hw"
	"moebench/sim"
)

// ring runs one doorbell sequence on th: the doorbell-record store, the
// ordering the mode asks for, and the MMIO doorbell store. It returns when
// the doorbell store left the SM.
func ring(th *hw.Thread, mode Ordering) sim.Time {
	c := th.C()
	switch mode {
	case OrderNone:
		th.Store(1, 1)
	case OrderGPUFence, OrderReleaseGPU:
		// A release store orders like a fence before a plain store.
		th.Store(1, 1)
		th.Fence(c.FenceGPU)
	case OrderFencedDBRec:
		th.Fence(c.FenceGPU)
		th.Store(1, 1)
		th.Fence(c.FenceGPU)
	case OrderThreadFence:
		th.Fence(c.FenceSCGPU)
		th.Store(1, 1)
		th.Fence(c.FenceSCGPU)
	case OrderReleaseSys:
		th.Store(1, 1)
		th.Fence(c.ReleaseSys)
	case OrderFenceSys:
		th.Store(1, 1)
		th.Fence(c.FenceSys)
	}
	th.Compute(c.MMIOStore)
	return th.T
}

// pollDetect is when a thread polling a location observes a value that
// became visible at `visible`: the polls are one L2 load plus the loop gap
// apart, and on average the value lands half a period before the next poll
// is issued.
func pollDetect(c *hw.GPUCosts, visible sim.Time) sim.Time {
	return visible + (c.L2Load+c.PollGap)/2 + c.L2Load
}
