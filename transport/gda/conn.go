package gda

import (
	"fmt"

	"moebench/transport"
	"moebench/transport/hw"
	"moebench/transport/sim"
)

// Config is mini-gda as a transport for the workload: RC QPs per peer,
// GPU-resident queues, the publication style and doorbell batching of the
// library being modelled.
type Config struct {
	Name        string
	QPsPerPeer  int         // RC QPs to each destination rank
	Depth       int         // WQEs per send queue
	PerDoorbell int         // ring on every n-th WQE of a QP (DeepEP LL: 4)
	Ordering    Ordering    // before each doorbell
	Publication Publication // handoff: warps publish in reservation order
	InlineMax   int         // payloads up to this many bytes are inlined
	// DCIs > 0 selects Dynamically Connected transport: a pool of DCIs per
	// NIC (the channel picks one) sending to DCTs per PE, every WQE
	// carrying a 16 B address vector.
	DCIs int
	DCTs int
	// Library software a preset adds to every post beyond the mechanism
	// (queue management, QP lookup, ready-head updates), as SM cycles plus
	// fixed time.
	LibCycles, LibNs float64
	// PerChannelQPs: QPs per peer follow the workload's channels (DeepEP
	// LL maps QP index = destination local expert).
	PerChannelQPs bool
}

// libCost is the library's extra issue time at the profile's SM clock.
func (c Config) libCost(g *hw.GPUCosts) sim.Time {
	return sim.Ns(c.LibCycles*1000/g.ClockMHz + c.LibNs)
}

// avBytes is the address vector a DC WQE carries (compact form, Fig. 2).
const avBytes = 16

// DefaultConfig is mini-gda as the paper runs it under a workload: one QP
// per destination local expert is the workload's choice, GPU-scope fence,
// reservation-order publication, a doorbell per WQE.
func DefaultConfig() Config {
	return Config{Name: "mini-gda", QPsPerPeer: 1, Depth: 1024, PerDoorbell: 1, Ordering: OrderGPUFence, Publication: PubHandoff, InlineMax: 8}
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case c.QPsPerPeer < 1:
		return fmt.Errorf("mini-gda: QPs per peer must be at least 1, got %d", c.QPsPerPeer)
	case c.Depth < 1:
		return fmt.Errorf("mini-gda: QP depth must be at least 1, got %d", c.Depth)
	case c.PerDoorbell < 1 || c.PerDoorbell > c.Depth:
		return fmt.Errorf("mini-gda: WQEs per doorbell must be in [1, depth %d], got %d", c.Depth, c.PerDoorbell)
	case c.LibCycles < 0 || c.LibNs < 0:
		return fmt.Errorf("mini-gda: library cost must not be negative (got %v cycles, %v ns)", c.LibCycles, c.LibNs)
	case c.DCIs < 0 || c.DCTs < 0:
		return fmt.Errorf("mini-gda: DCIs and DCTs must not be negative (got %d, %d)", c.DCIs, c.DCTs)
	case c.Publication == PubCoop:
		return fmt.Errorf("mini-gda: cooperative publication posts whole warps of WQEs and is a rate-experiment mode, not a per-message one")
	}
	return nil
}

// Transport returns c as a transport.Transport.
func (c Config) Transport() transport.Transport { return gdaTransport{c} }

type gdaTransport struct{ cfg Config }

func (t gdaTransport) Name() string {
	switch {
	case t.cfg.Name != "":
		return t.cfg.Name
	case t.cfg.DCIs > 0:
		return "dc"
	}
	return "mini-gda"
}

// CarriesNVLink: same-node peers go over NVLink when the layer allows it.
func (t gdaTransport) CarriesNVLink() bool { return true }

// Open builds one NIC per rank with QPsPerPeer RC QPs to every peer.
func (t gdaTransport) Open(env *transport.Env) (transport.Conn, error) {
	if err := t.cfg.Validate(); err != nil {
		return nil, err
	}
	c := &conn{cfg: t.cfg, env: env, gpu: hw.NewGPUCosts(env.Profile)}
	c.nv = newNVLink(env)
	qps := env.Ranks * t.cfg.QPsPerPeer
	if t.cfg.DCIs > 0 {
		qps = t.cfg.DCIs
		c.dcts = max(1, t.cfg.DCTs)
	}
	if qps >= 1<<20 {
		return nil, fmt.Errorf("mini-gda: %d ranks × %d QPs per peer = %d QPs per NIC, more than the model addresses", env.Ranks, t.cfg.QPsPerPeer, qps)
	}
	c.perNIC = qps
	c.fab = hw.NewFabric(env.E, hw.NewNICParams(env.Profile), env.Ranks, qps, c)
	if t.cfg.DCIs > 0 {
		for _, n := range c.fab.NICs {
			for q := range qps {
				n.DCI(q)
			}
		}
	}
	c.sqs = make([]sendQueue, env.Ranks*qps)
	c.selfID = env.E.Register(c)
	return c, nil
}

// Handle delivers an NVLink copy when it becomes visible.
func (c *conn) Handle(e *sim.Engine, _ int32, arg int64) { c.deliver(e, int32(arg)) }

// sendQueue is the GPU-side state of one RC send queue.
type sendQueue struct {
	reserved, published int
	outstanding         int
	retired             int // WQEs retired by signaled completions
	sinceDB             int
	pubWait             map[int]*poster
	spaceWait           []*poster
	used                bool
}

type conn struct {
	cfg    Config
	env    *transport.Env
	gpu    hw.GPUCosts
	fab    *hw.Fabric
	sqs    []sendQueue
	nv     *nvlink
	ops    sim.Slab[pending]
	selfID sim.HandlerID
	perNIC int // send queues (RC QPs or DCIs) per NIC
	dcts   int
}

// pending is an Op between Post and delivery.
type pending struct {
	op    transport.Op
	times transport.Times
}

// poster carries one warp's post through the protocol's phases.
type poster struct {
	c    *conn
	id   sim.HandlerID
	w    *transport.Warp
	op   int32 // index into conn.ops
	sq   int
	slot int
	lay  Layout
}

const (
	pReserve int32 = iota
	pPublish
	pDoPublish
)

// Post runs op through mini-gda from warp w.
func (c *conn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	w.T.T = max(w.T.T, e.Now())
	idx := c.track(op, w.T.T)
	if c.nv.local(op.Src, op.Dst) {
		c.nv.copy(&w.T, &c.ops.At(idx).times, op.Bytes, op.Src, op.Dst)
		e.At(c.ops.At(idx).times.Visible, c.selfID, 0, int64(idx))
		e.At(w.T.T, c.resumeID(w), pResume, 0)
		return
	}
	p := c.poster(w)
	p.op = idx
	av := 0
	if c.cfg.DCIs > 0 {
		p.sq = op.Src*c.perNIC + op.Channel%c.cfg.DCIs
		av = avBytes
	} else {
		p.sq = op.Src*c.perNIC + op.Dst*c.cfg.QPsPerPeer + op.Channel%c.cfg.QPsPerPeer
	}
	p.lay = WriteLayout(op.Bytes, op.Bytes <= c.cfg.InlineMax && !op.Atomic, av)
	p.Handle(e, pReserve, 0)
}

func (c *conn) track(op transport.Op, at sim.Time) int32 {
	idx := c.ops.Alloc()
	*c.ops.At(idx) = pending{op: op, times: transport.Times{IssueStart: at}}
	return idx
}

func (c *conn) deliver(e *sim.Engine, idx int32) {
	pd := c.ops.At(idx)
	d := transport.Delivery{Op: pd.op, Times: pd.times}
	c.ops.Free(idx)
	c.env.Delivered(e, d)
}

// poster returns w's poster, registering it on the warp's first post.
func (c *conn) poster(w *transport.Warp) *poster {
	if p, ok := w.Local.(*poster); ok && p.c == c {
		return p
	}
	p := &poster{c: c, w: w}
	p.id = c.env.E.Register(p)
	w.Local = p
	return p
}

// resumeID is the handler that hands control back to w.
func (c *conn) resumeID(w *transport.Warp) sim.HandlerID { return c.poster(w).id }

const pResume int32 = 100

// Handle advances one warp's post. Each phase that touches a send queue
// runs at the warp's local time, so warps interleave in time order.
func (p *poster) Handle(e *sim.Engine, op int32, _ int64) {
	c := p.c
	th := &p.w.T
	th.T = max(th.T, e.Now())
	q := &c.sqs[p.sq]
	g := &c.gpu
	switch op {
	case pResume:
		p.w.Resume(e, p.w)
	case pReserve:
		if q.outstanding >= c.cfg.Depth {
			q.spaceWait = append(q.spaceWait, p)
			return
		}
		q.used = true
		th.Compute(c.cfg.libCost(g))
		if c.cfg.Publication == PubThread {
			th.Compute(g.Reserve)
		} else {
			th.Compute(g.Atomic) // shared producer index (or the lock)
		}
		p.slot = q.reserved
		q.reserved++
		q.outstanding++
		th.Compute(sim.Time(p.lay.Loads) * g.L2Load)
		th.Store(p.lay.Segments, 1)
		e.At(th.T, p.id, pPublish, 0)
	case pPublish:
		if c.cfg.Publication != PubThread && q.published != p.slot {
			if q.pubWait == nil {
				q.pubWait = map[int]*poster{}
			}
			q.pubWait[p.slot] = p
			return
		}
		p.publish(e, q)
	case pDoPublish:
		p.publish(e, q)
	}
}

func (p *poster) publish(e *sim.Engine, q *sendQueue) {
	c := p.c
	th := &p.w.T
	pd := c.ops.At(p.op)
	op := pd.op
	src := c.fab.NICs[op.Src]
	qp := p.sq - op.Src*c.perNIC
	// Like the libraries, request a CQE only every few WQEs (and on a
	// flush): one CQE retires the unsignaled WQEs before it.
	every := max(1, min(64, c.cfg.Depth/4))
	m := hw.Msg{Dst: int32(op.Dst), Bytes: int32(op.Bytes), BBs: int32(p.lay.BBs),
		Pointer: op.Bytes > c.cfg.InlineMax && !op.Atomic, Atomic: op.Atomic, Tag: int64(p.op),
		WQE: int32(q.published), Unsignaled: (q.published+1)%every != 0 && !op.Flush}
	if c.cfg.DCIs > 0 {
		// Contexts: the DCI at the requester, one of the destination's
		// DCTs at the responder (keyed apart from RC QP numbers).
		m.DC = true
		m.TxCtx = 1<<22 | int32(qp)
		m.RxCtx = 1<<23 | int32(op.Src%c.dcts)
	}
	src.Post(qp, m)
	q.published++
	q.sinceDB++
	if w, ok := q.pubWait[q.published]; ok {
		delete(q.pubWait, q.published)
		w.w.T.T = max(w.w.T.T, th.T) + c.gpu.Handoff
		e.At(w.w.T.T, w.id, pDoPublish, 0)
	}
	if q.sinceDB >= c.cfg.PerDoorbell || op.Flush {
		q.sinceDB = 0
		at := ring(th, c.cfg.Ordering)
		src.Doorbell(e, at, qp)
	}
	pd.times.IssueEnd = th.T
	p.w.Resume(e, p.w)
}

// Delivered reports an Op whose payload is visible.
func (c *conn) Delivered(e *sim.Engine, _ *hw.NIC, _ int32, m *hw.Msg) {
	idx := int32(m.Tag)
	t := &c.ops.At(idx).times
	t.Posted, t.Served, t.Sent, t.Arrived, t.Visible = m.Rung, m.Served, m.Sent, m.Arrived, m.Visible
	t.Own = [transport.MaxOwnCauses]sim.Time{m.ConnMiss, m.DCISwitch}
	c.deliver(e, idx)
}

// Completed retires a WQE and frees its slot for a waiting warp.
func (c *conn) Completed(e *sim.Engine, nic *hw.NIC, _ int32, m *hw.Msg) {
	q := &c.sqs[nic.Index*c.perNIC+int(m.QP)]
	n := int(m.WQE) + 1 - q.retired
	q.retired += n
	q.outstanding -= n
	for len(q.spaceWait) > 0 && n > 0 {
		p := q.spaceWait[0]
		q.spaceWait = q.spaceWait[1:]
		n--
		// The warp reclaims at its next CQ poll, then retries.
		p.w.T.T = max(p.w.T.T, pollDetect(&c.gpu, e.Now())+c.gpu.CQPoll)
		e.At(p.w.T.T, p.id, pReserve, 0)
	}
}

// Resources reports QPs and connections per NIC.
func (c *conn) Resources() transport.Resources {
	perNIC := c.perNIC
	used := 0
	for _, q := range c.sqs {
		if q.used {
			used++
		}
	}
	r := transport.Resources{
		QPsPerNIC:         perNIC,
		ActiveConnPerNIC:  (used + c.env.Ranks - 1) / c.env.Ranks,
		QueueBytesPerRank: int64(perNIC) * int64(c.cfg.Depth) * 64,
		ConnKnee:          int(c.env.Profile.Get("conn.entries")),
	}
	var hits, misses int64
	for _, n := range c.fab.NICs {
		hits += n.Ctx().Hits
		misses += n.Ctx().Misses
	}
	if hits+misses > 0 {
		r.ConnMissRate = float64(misses) / float64(hits+misses)
	}
	if c.cfg.DCIs > 0 {
		r.DCIsPerNIC = c.cfg.DCIs
		// Active connections: DCIs and the DCTs others target here.
		r.ActiveConnPerNIC = c.cfg.DCIs + c.dcts
	}
	return r
}

// QueueDepth is the WQEs one send queue holds, for workloads that check it
// against what they keep in flight (DeepEP: at least 2·(max tokens + 1)).
func (t gdaTransport) QueueDepth() int { return t.cfg.Depth }
