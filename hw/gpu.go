package hw

import (
	"moebench/profile"
	"moebench/sim"
)

// GPUCosts are the SM-side costs of one thread, resolved at the profile's SM
// clock. Each is cycles/f + fixed ns, so lowering the clock slows the
// clock-sensitive part only (Table 6).
type GPUCosts struct {
	ClockMHz    float64
	Reserve     sim.Time
	Atomic      sim.Time
	Store16     sim.Time
	StoreDrain  sim.Time
	L2Load      sim.Time
	FenceGPU    sim.Time
	FenceSCGPU  sim.Time
	ReleaseSys  sim.Time
	FenceSys    sim.Time
	MMIOStore   sim.Time
	Handoff     sim.Time
	CQPoll      sim.Time
	QuietQP     sim.Time
	StoreSlot   sim.Time // SM store path occupancy per lane store
	PollGap     sim.Time
	LaneDrain   float64
	CQUpdStores int
	SMs         int
}

// NewGPUCosts resolves the GPU constants of p.
func NewGPUCosts(p *profile.Profile) GPUCosts { return GPUCostsOf(p.GPU()) }

// GPUCostsOf is the GPU's costs at its SM clock.
func GPUCostsOf(s profile.GPUSpec) GPUCosts {
	f := s.ClockMHz
	c := func(k profile.SMCost) sim.Time { return sim.Ns(k.Cycles*1000/f + k.Ns) }
	return GPUCosts{
		ClockMHz:    f,
		Reserve:     c(s.Reserve),
		Atomic:      c(s.Atomic),
		Store16:     c(s.Store16),
		StoreDrain:  c(s.StoreDrain),
		L2Load:      c(s.L2Load),
		FenceGPU:    c(s.FenceGPU),
		FenceSCGPU:  c(s.FenceSCGPU),
		ReleaseSys:  c(s.ReleaseSys),
		FenceSys:    c(s.FenceSys),
		MMIOStore:   c(s.MMIOStore),
		Handoff:     c(s.Handoff),
		CQPoll:      c(s.CQPoll),
		QuietQP:     c(s.QuietQP),
		StoreSlot:   sim.Ns(s.StoreSlotNs),
		PollGap:     sim.Ns(s.PollGapNs),
		LaneDrain:   s.LaneDrainExtra,
		CQUpdStores: s.CQUpdateStores,
		SMs:         s.SMs,
	}
}

// SM is the store path shared by the threads of one streaming
// multiprocessor. Its arbitration is modelled as a fair share: with Lanes
// submitting lanes resident, a store instruction occupies the issuing
// thread for at least Lanes store slots. This keeps the model free of
// ordering artefacts between threads whose local clocks run ahead of the
// event clock.
type SM struct {
	C     *GPUCosts // the GPU's costs, for every thread on the SM
	Lanes int
}

// MaxThreads is the most submitting threads a rate experiment takes, about
// four GPUs' resident threads (an H200 holds 132 SMs × 2,048): each is a
// handler of the engine.
const MaxThreads = 1 << 20

// Thread is the timeline of one submitting GPU thread (or the leader lane of
// a cooperating warp): a cursor of local time plus the drain state of its
// stores. Methods advance the cursor by the cost of each step.
type Thread struct {
	SM    *SM
	T     sim.Time // local time cursor
	drain sim.Time // when the last issued store becomes visible
}

// NewThread is a thread on sm of a GPU with costs c: the SM keeps the
// costs, so that a million threads do not each hold them.
func NewThread(c *GPUCosts, sm *SM) Thread {
	sm.C = c
	return Thread{SM: sm}
}

// C is the costs of the thread's GPU.
func (t *Thread) C() *GPUCosts { return t.SM.C }

// Compute spends d of SM time.
func (t *Thread) Compute(d sim.Time) { t.T += d }

// Store issues n 16 B stores from `lanes` lanes each: every lane store
// occupies the SM's store path for one slot, and the stores drain one after
// another behind the ones already in flight.
func (t *Thread) Store(n, lanes int) {
	c := t.SM.C
	issue := max(c.Store16, sim.Time(t.SM.Lanes)*c.StoreSlot)
	for range n {
		t.T += issue
		d := c.StoreDrain
		if lanes > 1 {
			d += sim.Time(float64(d) * c.LaneDrain * float64(lanes-1))
		}
		t.drain = max(t.T, t.drain) + d
	}
}

// Pending leaves n stores in flight as of the cursor, without issue cost:
// what a completion routine's index updates leave behind.
func (t *Thread) Pending(n int) {
	for range n {
		t.drain = max(t.T, t.drain) + t.SM.C.StoreDrain
	}
}

// Fence waits for every store in flight to drain, then pays the fence's own
// cost.
func (t *Thread) Fence(cost sim.Time) { t.T = max(t.T, t.drain) + cost }
