package gda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/profile"
	"moebench/sim"
)

// Publication is how threads that share a QP publish their WQEs.
type Publication int

// Publication styles of §3.2 and Table 5.
const (
	PubThread  Publication = iota // one thread owns the QP (or lanes own one QP each)
	PubCoop                       // a warp reserves, builds and rings once (under the QP lock)
	PubHandoff                    // per-thread reservation, publication in reservation order
	PubLock                       // one doorbell lock per WQE
)

var pubNames = []string{"thread", "coop", "handoff", "lock"}

func (p Publication) String() string { return pubNames[p] }

// ParsePublication reads a style name.
func ParsePublication(s string) (Publication, bool) {
	for i, n := range pubNames {
		if n == s {
			return Publication(i), true
		}
	}
	return 0, false
}

// RateConfig is one message-rate experiment: Threads GPU threads on SMs
// SMs post Payload-byte writes through QPs queue pairs to one remote GPU.
type RateConfig struct {
	Threads     int
	QPs         int
	SMs         int
	PerDoorbell int
	Style       Publication
	Ordering    Ordering
	Payload     int
	Inline      bool
	Depth       int // WQEs per send queue
	Messages    int // total to post; 0 picks enough for a steady state
	// LibCycles and LibNs are a library's software cost per post beyond
	// the mechanism (as in SingleConfig); a cooperating warp pays it once
	// per 32 WQEs, its lanes running the library code side by side.
	LibCycles, LibNs float64
}

// MaxDepth is the most WQEs a send queue holds: ConnectX adapters report
// max_qp_wr = 32,768 (ibv_devinfo -v).
const MaxDepth = 1 << 15

// CheckFields reports the first field of c that cannot run on p's GPU
// whatever the others are, as a field.Error naming it as the commands do
// (threads, qps, sms, depth, per-doorbell, payload); Validate adds how the
// fields must fit together. A sweep refuses what CheckFields reports and
// may skip what Validate does.
func (c RateConfig) CheckFields(p *profile.Profile) error {
	sms := int(p.Get("gpu.sms"))
	switch {
	case c.Threads < 1:
		return field.Errorf("threads", "%d, want at least 1", c.Threads)
	case c.Threads > hw.MaxThreads:
		return field.Errorf("threads", "%d is more than the %d the model takes", c.Threads, hw.MaxThreads)
	case c.QPs < 1 || c.QPs > hw.MaxQPs:
		return field.Errorf("qps", "%d, want 1 to %d (the QPs a NIC of the model addresses)", c.QPs, hw.MaxQPs)
	case c.SMs < 1 || c.SMs > sms:
		return field.Errorf("sms", "%d, want 1 to the GPU's %d SMs (gpu.sms)", c.SMs, sms)
	case c.Depth < 1 || c.Depth > MaxDepth:
		return field.Errorf("depth", "%d WQEs per send queue, want 1 to %d (ConnectX's max_qp_wr)", c.Depth, MaxDepth)
	case c.PerDoorbell < 1 || c.PerDoorbell > MaxDepth:
		return field.Errorf("per-doorbell", "%d, want 1 to %d (a send queue's most WQEs)", c.PerDoorbell, MaxDepth)
	case c.Messages < 0:
		return fmt.Errorf("messages: %d is negative (0 picks enough for a steady state)", c.Messages)
	case !(c.LibCycles >= 0 && c.LibNs >= 0) || math.IsInf(c.LibCycles, 0) || math.IsInf(c.LibNs, 0):
		return fmt.Errorf("library cost: %v cycles, %v ns, want finite and not negative", c.LibCycles, c.LibNs)
	}
	return CheckPayload(c.Payload, c.Inline)
}

// Memory Rate takes, per unit, measured as peak RSS of mech rate (1 to
// 262,144 threads, 1 to 262,144 QPs, depth 16 to 32,768): the completion
// times it keeps per message, each submitting thread, each message in
// flight (record, events, ring entry), and the program itself.
const (
	rateBytesPerMessage  = 36
	rateBytesPerThread   = 200
	rateBytesPerInFlight = 300
	rateBytesBase        = 20 << 20
)

// messages is how many messages Rate posts for c.
func (c RateConfig) messages() int64 {
	if c.Messages > 0 {
		return int64(c.Messages)
	}
	return max(20000, int64(c.Threads)*64)
}

// Cost estimates, for a configuration that passes CheckFields, the memory
// Rate takes and the messages it posts, so that a caller can refuse a
// configuration too large before running it. Every send queue may fill
// to its depth at once.
func (c RateConfig) Cost() (bytes, messages int64) {
	msgs := c.messages()
	inFlight := min(msgs, int64(c.QPs)*int64(c.Depth))
	return rateBytesBase + msgs*rateBytesPerMessage + int64(c.Threads)*rateBytesPerThread + inFlight*rateBytesPerInFlight, msgs
}

// Validate reports a configuration the model cannot run.
func (c RateConfig) Validate() error {
	switch {
	case c.Threads < 1 || c.QPs < 1 || c.SMs < 1 || c.PerDoorbell < 1:
		return fmt.Errorf("threads, qps, sms and wqes per doorbell must be at least 1 (got %d, %d, %d, %d)", c.Threads, c.QPs, c.SMs, c.PerDoorbell)
	case c.Threads > hw.MaxThreads:
		return fmt.Errorf("threads: %d is more than the %d the model takes", c.Threads, hw.MaxThreads)
	case c.Threads%c.QPs != 0:
		return fmt.Errorf("%d threads do not divide evenly over %d QPs", c.Threads, c.QPs)
	case c.Style == PubCoop && (c.Threads/c.QPs)%32 != 0:
		return fmt.Errorf("cooperative publication needs whole warps per QP (%d threads per QP)", c.Threads/c.QPs)
	case c.Depth < c.PerDoorbell:
		return fmt.Errorf("QP depth %d is below %d WQEs per doorbell", c.Depth, c.PerDoorbell)
	case c.Style == PubCoop && c.Depth < 32:
		return fmt.Errorf("QP depth %d cannot hold a warp's 32 WQEs", c.Depth)
	case c.LibCycles < 0 || c.LibNs < 0:
		return fmt.Errorf("library cost must not be negative (got %v cycles, %v ns)", c.LibCycles, c.LibNs)
	}
	return CheckWrite(c.Payload, c.Inline)
}

// gpuQP is the GPU-side state of one send queue.
type gpuQP struct {
	reserved    int
	published   int
	outstanding int
	sinceDB     int
	locked      bool
	lockWait    []*actor
	pubWait     map[int]*actor // handoff: slot -> thread waiting to publish it
	spaceWait   []*actor
}

// Phases of an actor. Every phase that touches state shared with other
// actors (the QP lock, the reservation counter, the publication turn) runs
// as an event at the actor's own local time, so that actors interleave in
// time order.
const (
	phStart     int32 = iota // take the lock if the style has one, reserve
	phReserved               // coop: release the lock, then build
	phPublish                // wait for the publication turn
	phDoPublish              // publish, ring if a batch is complete
	phUnlock                 // lock style: release after the doorbell
)

// actor is one submitting thread, or a cooperating warp's leader.
type actor struct {
	r      *rateRun
	id     sim.HandlerID
	th     hw.Thread
	qp     int
	lanes  int // WQEs per unit: 32 for a cooperating warp, else 1
	left   int
	slot   int
	locked bool // holds the QP lock (coop, lock styles)
}

type rateRun struct {
	cfg  RateConfig
	e    *sim.Engine
	gpu  hw.GPUCosts
	fab  *hw.Fabric
	nic  *hw.NIC
	qps  []gpuQP
	lay  Layout
	lib  sim.Time // library software per post (per warp unit)
	sent []sim.Time
}

func (r *rateRun) Delivered(*sim.Engine, *hw.NIC, int32, *hw.Msg) {}

func (r *rateRun) Completed(e *sim.Engine, nic *hw.NIC, id int32, m *hw.Msg) {
	r.sent = append(r.sent, nic.Times(id).Sent)
	q := &r.qps[m.QP]
	q.outstanding--
	if len(q.spaceWait) > 0 {
		a := q.spaceWait[0]
		q.spaceWait = q.spaceWait[1:]
		// The blocked thread sees the CQE at its next poll and reclaims.
		a.th.T = pollDetect(&r.gpu, e.Now()) + r.gpu.CQPoll
		e.At(a.th.T, a.id, phStart, 0)
	}
}

// Rate runs one message-rate experiment and returns M msg/s carried by the
// NIC in steady state.
func Rate(p *profile.Profile, cfg RateConfig) (float64, error) {
	if err := cfg.CheckFields(p); err != nil {
		// The configuration is the caller's, not the user's input: its
		// error names no field for a command to show as its flag.
		return 0, errors.New(err.Error())
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	e := &sim.Engine{}
	r := &rateRun{cfg: cfg, e: e, gpu: hw.NewGPUCosts(p), lay: WriteLayout(cfg.Payload, cfg.Inline, 0)}
	r.lib = sim.Ns(cfg.LibCycles*1000/r.gpu.ClockMHz + cfg.LibNs)
	r.fab = hw.NewFabric(e, hw.NewNICParams(p), 2, cfg.QPs, r)
	r.fab.DoorbellLead(r.fab.P.MMIO)
	r.nic = r.fab.NICs[0]
	r.qps = make([]gpuQP, cfg.QPs)
	for i := range r.qps {
		r.qps[i].pubWait = map[int]*actor{}
	}
	sms := make([]hw.SM, cfg.SMs)
	lanes := 1
	units := cfg.Threads
	if cfg.Style == PubCoop {
		lanes, units = 32, cfg.Threads/32
	}
	total := int(cfg.messages())
	per := (total + units*lanes - 1) / (units * lanes) * lanes
	actors := make([]*actor, units)
	for i := range actors {
		a := &actor{r: r, qp: i % cfg.QPs, lanes: lanes, left: per}
		// Threads fill SMs in blocks, as a launch of SMs blocks would.
		a.th = hw.NewThread(&r.gpu, &sms[i*cfg.SMs/units])
		a.th.SM.Lanes += lanes
		a.id = e.Register(a)
		actors[i] = a
		e.At(0, a.id, phStart, 0)
	}
	e.Run()
	want := per * units
	if len(r.sent) != want {
		return 0, fmt.Errorf("model lost messages: %d of %d completed", len(r.sent), want)
	}
	slices.Sort(r.sent)
	// Steady state: skip the first fifth (pipelines filling) and measure to
	// the last message on the wire.
	k := len(r.sent) / 5
	span := r.sent[len(r.sent)-1] - r.sent[k]
	if span <= 0 {
		return 0, fmt.Errorf("model produced no measurable span")
	}
	return float64(len(r.sent)-1-k) / span.Us(), nil
}

// Handle advances the actor's protocol.
func (a *actor) Handle(e *sim.Engine, op int32, _ int64) {
	r := a.r
	cfg := &r.cfg
	q := &r.qps[a.qp]
	c := &r.gpu
	a.th.T = max(a.th.T, e.Now())
	ordered := cfg.Style == PubHandoff || cfg.Style == PubCoop
	switch op {
	case phStart:
		if (cfg.Style == PubLock || cfg.Style == PubCoop) && !a.locked {
			if q.locked {
				q.lockWait = append(q.lockWait, a)
				return
			}
			q.locked, a.locked = true, true
			a.th.Compute(c.Atomic)
			e.At(a.th.T, a.id, phStart, 0)
			return
		}
		if q.outstanding+a.lanes > cfg.Depth {
			q.spaceWait = append(q.spaceWait, a)
			return
		}
		a.slot = q.reserved
		q.reserved += a.lanes
		q.outstanding += a.lanes
		if cfg.Style == PubHandoff {
			a.th.Compute(c.Atomic) // shared producer index
		} else {
			a.th.Compute(c.Reserve)
		}
		if cfg.Style == PubCoop {
			// The warp holds the QP lock only to reserve; building and
			// publication (in reservation order) happen outside it.
			e.At(a.th.T, a.id, phReserved, 0)
			return
		}
		a.build(e)
	case phReserved:
		a.unlock(e, q)
		a.build(e)
	case phPublish:
		if ordered {
			if q.published != a.slot {
				q.pubWait[a.slot] = a
				return
			}
			if a.slot > 0 {
				a.th.Compute(c.Handoff)
			}
			e.At(a.th.T, a.id, phDoPublish, 0)
			return
		}
		a.publish(e, q)
	case phDoPublish:
		a.publish(e, q)
	case phUnlock:
		a.unlock(e, q)
		a.next(e)
	}
}

func (a *actor) build(e *sim.Engine) {
	r := a.r
	a.th.Compute(r.lib + sim.Time(r.lay.Loads)*r.gpu.L2Load)
	a.th.Store(r.lay.Segments, a.lanes)
	e.At(a.th.T, a.id, phPublish, 0)
}

func (a *actor) next(e *sim.Engine) {
	if a.left > 0 {
		e.At(a.th.T, a.id, phStart, 0)
	}
}

// publish hands the unit's WQEs to the queue, passes the publication turn
// on, and rings when a doorbell batch is complete.
func (a *actor) publish(e *sim.Engine, q *gpuQP) {
	r := a.r
	cfg := &r.cfg
	for range a.lanes {
		r.nic.Post(a.qp, hw.Msg{Dst: 1, Bytes: int32(cfg.Payload), BBs: int32(r.lay.BBs), Pointer: !cfg.Inline})
	}
	a.left -= a.lanes
	q.published += a.lanes
	q.sinceDB += a.lanes
	if w, ok := q.pubWait[q.published]; ok {
		// The successor sees this slot published at its next poll.
		delete(q.pubWait, q.published)
		w.th.T = max(w.th.T, a.th.T) + r.gpu.Handoff
		e.At(w.th.T, w.id, phDoPublish, 0)
	}
	// A thread with nothing left to post flushes a partial batch, as the
	// benchmark's final drain does.
	if q.sinceDB >= cfg.PerDoorbell || (a.left == 0 && q.sinceDB > 0) {
		q.sinceDB = 0
		at := ring(&a.th, cfg.Ordering)
		r.nic.Doorbell(e, at, a.qp)
	}
	if a.locked {
		e.At(a.th.T, a.id, phUnlock, 0)
		return
	}
	a.next(e)
}

// unlock releases the QP lock with a release store and hands it to the
// first waiter, which pays an atomic to take it.
func (a *actor) unlock(e *sim.Engine, q *gpuQP) {
	r := a.r
	a.th.Compute(r.gpu.Store16)
	a.locked = false
	q.locked = false
	if len(q.lockWait) > 0 {
		w := q.lockWait[0]
		q.lockWait = q.lockWait[1:]
		q.locked, w.locked = true, true
		w.th.T = max(w.th.T, a.th.T) + r.gpu.Atomic
		e.At(w.th.T, w.id, phStart, 0)
	}
}
