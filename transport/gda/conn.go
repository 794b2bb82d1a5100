package gda

import (
	"fmt"
	"unsafe"

	"moebench/hw"
	"moebench/internal/hugepage"
	"moebench/internal/prefetch"
	"moebench/sim"
	"moebench/transport"
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
	// Reserved > 0 gives the channels from ReservedFrom on (reserved
	// background traffic) queues of their own, past the layer's, so that
	// nothing of the layer waits behind them: Reserved more RC QPs per
	// peer beside QPsPerPeer, or Reserved more DCIs per NIC beside DCIs.
	Reserved, ReservedFrom int
}

// queue is the send queue (its number on the requester's NIC) an op to
// dst on channel ch goes through.
func (c Config) queue(dst, ch int) int {
	reserved := c.Reserved > 0 && ch >= c.ReservedFrom
	switch {
	case c.DCIs > 0 && reserved:
		return c.DCIs + (ch-c.ReservedFrom)%c.Reserved
	case c.DCIs > 0:
		return ch % c.DCIs
	case reserved:
		return dst*(c.QPsPerPeer+c.Reserved) + c.QPsPerPeer + (ch-c.ReservedFrom)%c.Reserved
	}
	return dst*(c.QPsPerPeer+c.Reserved) + ch%c.QPsPerPeer
}

// queuesPerNIC is how many send queues a NIC of ranks ranks holds: RC QPs
// to every peer, or the DCI pool, with the reserved ones.
func (c Config) queuesPerNIC(ranks int) int {
	if c.DCIs > 0 {
		return c.DCIs + c.Reserved
	}
	return ranks * (c.QPsPerPeer + c.Reserved)
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
	case c.Reserved < 0 || c.ReservedFrom < 0:
		return fmt.Errorf("mini-gda: reserved queues and their first channel must not be negative (got %d, %d)", c.Reserved, c.ReservedFrom)
	case c.Publication == PubCoop:
		return fmt.Errorf("mini-gda: cooperative publication posts whole warps of WQEs and is a rate-experiment mode, not a per-message one")
	case c.Depth > MaxDepth:
		return fmt.Errorf("mini-gda: QP depth %d is more than the %d WQEs a send queue holds", c.Depth, MaxDepth)
	case c.InlineMax < 0:
		return fmt.Errorf("mini-gda: inline threshold %d B is negative", c.InlineMax)
	case c.InlineMax > 0:
		if err := CheckWrite(c.InlineMax, true); err != nil {
			return fmt.Errorf("mini-gda: inline threshold: %w", err)
		}
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
	if err := transport.RCHost(env.Profile); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	if err := t.cfg.Validate(); err != nil {
		return nil, err
	}
	c := &conn{cfg: t.cfg, env: env, gpu: hw.NewGPUCosts(env.Profile)}
	c.nvl = transport.NewNVLinkPath(env)
	qps := t.cfg.queuesPerNIC(env.Ranks)
	if t.cfg.DCIs > 0 {
		c.dcts = max(1, t.cfg.DCTs)
	}
	if qps >= hw.MaxQPs {
		return nil, fmt.Errorf("mini-gda: %d ranks × %d QPs per peer = %d QPs per NIC, more than the model addresses", env.Ranks, t.cfg.QPsPerPeer+t.cfg.Reserved, qps)
	}
	c.perNIC = qps
	if env.Ranks > hw.MaxNICs {
		return nil, fmt.Errorf("mini-gda: %d ranks, more than the model's %d NICs", env.Ranks, hw.MaxNICs)
	}
	np := hw.NewNICParams(env.Profile)
	if err := np.Topo.Validate(); err != nil {
		return nil, fmt.Errorf("mini-gda: %w", err)
	}
	c.fab = hw.NewFabric(env.E, np, env.Ranks, qps, c)
	c.fab.SetDCTs(c.dcts)
	c.fab.DoorbellLead(c.fab.P.MMIO) // every doorbell is an SM's MMIO store
	c.fab.DoorbellLeadOf(c.lead)
	c.fab.Place(env.GPUsPerNode)
	if t.cfg.DCIs > 0 {
		for _, n := range c.fab.NICs {
			for q := range qps {
				n.DCI(q)
			}
		}
	}
	// GPU kernels do not reset a QP in error: the layer fails.
	transport.ApplyFaults(env, c.fab, t.Name(), 0)
	c.sqs = hugepage.Make[sendQueue](env.Ranks * qps)
	c.selfID = env.E.Register(c)
	return c, nil
}

// sendQueue is the GPU-side state of one RC send queue: counters only,
// one per (rank, peer QP), so 16 bytes. Warps waiting on a queue are rare
// (handoff out of order, a full queue) and wait in the conn's maps. The
// WQEs outstanding are those reserved and not retired; a queue was used
// once any was reserved.
type sendQueue struct {
	reserved, published int32
	retired             int32 // WQEs retired by signaled completions
	sinceDB             int32
}

type conn struct {
	cfg    Config
	env    *transport.Env
	gpu    hw.GPUCosts
	fab    *hw.Fabric
	sqs    []sendQueue
	nvl    *transport.NVLinkPath
	post   sim.Slab[poster]
	selfID sim.HandlerID
	perNIC int // send queues (RC QPs or DCIs) per NIC
	dcts   int
	// pubWait holds the poster waiting to publish slot (sq<<32 | slot);
	// spaceWait the posters waiting for room in a full queue, in order.
	pubWait   map[int64]int32
	spaceWait map[int][]int32
}

// poster carries one warp's post through the protocol's phases. Posters
// live in the conn's slab for the length of one post, so a layer of a
// million warps keeps only as many as are posting at once, and each is 16
// bytes: the op being posted lives in its message from the start (the
// fabric's record from NewMsg, its QP and, until published, its reserved
// slot in WQE).
type poster struct {
	w   *transport.Warp
	msg int32
}

// lead is how soon a doorbell can reach queue qp of nic from now: with no
// WQE reserved and unpublished, only a post that reserves from now on
// can ring it, after the library's cost and its reservation, and its
// doorbell store then takes MMIO. (A post reserves in the event that
// starts it, so every earlier one is counted in reserved.)
func (c *conn) lead(nic, qp int) sim.Time {
	q := &c.sqs[nic*c.perNIC+qp]
	if q.reserved != q.published {
		return 0
	}
	return c.fab.P.MMIO + c.cfg.libCost(&c.gpu) + c.reserveCost()
}

// reserveCost is a post's reservation of its slot: thread-private, or an
// atomic on the shared producer index (or the lock).
func (c *conn) reserveCost() sim.Time {
	if c.cfg.Publication == PubThread {
		return c.gpu.Reserve
	}
	return c.gpu.Atomic
}

// sq is the index of m's send queue in sqs.
func (c *conn) sq(m *hw.Msg) int { return int(m.Src)*c.perNIC + int(m.QP) }

// Event ops of the conn's handler: a poster's phases (arg: the poster).
const (
	pReserve int32 = iota
	pPublish
	pDoPublish
)

// Prefetch asks for a post's warp and message (the poster record names
// them, and was written recently enough to be cached), then for its send
// queue, which the message names.
func (c *conn) Prefetch(_ int32, arg int64, near bool) {
	p := c.post.At(int32(arg))
	if near {
		src, qp := c.fab.MsgQueue(p.msg)
		prefetch.Line(unsafe.Pointer(&c.sqs[int(src)*c.perNIC+int(qp)]))
		return
	}
	prefetch.Line(unsafe.Pointer(p.w))
	c.fab.PrefetchMsg(p.msg)
}

// PrefetchCompleted asks for the send queue a completion retires.
func (c *conn) PrefetchCompleted(nic, qp int32) {
	prefetch.Line(unsafe.Pointer(&c.sqs[int(nic)*c.perNIC+int(qp)]))
}

// PrefetchDelivered passes the hint on to the workload, which knows its
// ops by their tags.
func (c *conn) PrefetchDelivered(_, _ int32, tag int64) {
	if f := c.env.PrefetchDelivery; f != nil {
		f(tag)
	}
}

// Handle runs the conn's events.
func (c *conn) Handle(e *sim.Engine, op int32, arg int64) { c.step(e, op, int32(arg)) }

// Post runs op through mini-gda from warp w.
func (c *conn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	if c.nvl.Takes(op) {
		c.nvl.Post(e, w, op)
		return
	}
	w.T.T = max(w.T.T, e.Now())
	pi := c.post.Alloc()
	p := c.post.At(pi)
	p.w = w
	// The message carries what its delivery reports: the workload's tag
	// and channel, and the issue times (the end once the doorbell is rung).
	p.msg = c.fab.NewMsg()
	m := hw.Msg{Src: int32(op.Src), Dst: int32(op.Dst), Bytes: int32(op.Bytes), Atomic: op.Atomic, Flush: op.Flush, NIC: op.NIC,
		Pointer: op.Bytes > c.cfg.InlineMax && !op.Atomic, Tag: op.Tag, Issue: w.T.T, Channel: int32(op.Channel)}
	m.QP = int32(c.cfg.queue(op.Dst, op.Channel))
	c.fab.SetMsg(p.msg, m)
	c.step(e, pReserve, pi)
}

// layout is the WQE of message m.
func (c *conn) layout(m *hw.Msg) Layout {
	av := 0
	if c.cfg.DCIs > 0 {
		av = avBytes
	}
	return WriteLayout(int(m.Bytes), int(m.Bytes) <= c.cfg.InlineMax && !m.Atomic, av)
}

// resume frees poster pi and hands control back to its warp.
func (c *conn) resume(e *sim.Engine, pi int32) {
	w := c.post.At(pi).w
	c.post.Free(pi)
	w.Resume(e, w)
}

// step advances one warp's post. Each phase that touches a send queue
// runs at the warp's local time, so warps interleave in time order.
func (c *conn) step(e *sim.Engine, op int32, pi int32) {
	p := c.post.At(pi)
	th := &p.w.T
	th.T = max(th.T, e.Now())
	m := c.fab.Msg(p.msg)
	sq := c.sq(&m)
	q := &c.sqs[sq]
	g := &c.gpu
	switch op {
	case pReserve:
		if int(q.reserved-q.retired) >= c.cfg.Depth {
			if c.spaceWait == nil {
				c.spaceWait = map[int][]int32{}
			}
			c.spaceWait[sq] = append(c.spaceWait[sq], pi)
			return
		}
		th.Compute(c.cfg.libCost(g) + c.reserveCost())
		m.WQE = q.reserved // its slot until published
		q.reserved++
		lay := c.layout(&m)
		m.BBs = int32(lay.BBs)
		c.fab.SetMsg(p.msg, m)
		th.Compute(sim.Time(lay.Loads) * g.L2Load)
		th.Store(lay.Segments, 1)
		e.At(th.T, c.selfID, pPublish, int64(pi))
	case pPublish:
		if c.cfg.Publication != PubThread && q.published != m.WQE {
			if c.pubWait == nil {
				c.pubWait = map[int64]int32{}
			}
			c.pubWait[int64(sq)<<32|int64(m.WQE)] = pi
			return
		}
		c.publish(e, pi, q, m)
	case pDoPublish:
		c.publish(e, pi, q, m)
	}
}

// publish writes m, poster pi's message, into its queue q.
func (c *conn) publish(e *sim.Engine, pi int32, q *sendQueue, m hw.Msg) {
	p := c.post.At(pi)
	th := &p.w.T
	id := p.msg
	src := c.fab.NICs[m.Src]
	qp, sq := int(m.QP), c.sq(&m)
	// Like the libraries, request a CQE only every few WQEs (and on a
	// flush): one CQE retires the unsignaled WQEs before it.
	every := max(1, min(64, c.cfg.Depth/4))
	m.WQE = q.published
	m.Unsignaled = (int(q.published)+1)%every != 0 && !m.Flush
	// DC: the DCI's context at the requester, one of the destination's
	// DCTs at the responder (SetDCTs).
	m.DC = c.cfg.DCIs > 0
	flush := m.Flush
	c.fab.SetMsg(id, m)
	src.Enqueue(qp, id)
	q.published++
	q.sinceDB++
	if len(c.pubWait) > 0 {
		k := int64(sq)<<32 | int64(q.published)
		if wi, ok := c.pubWait[k]; ok {
			delete(c.pubWait, k)
			w := c.post.At(wi).w
			w.T.T = max(w.T.T, th.T) + c.gpu.Handoff
			e.At(w.T.T, c.selfID, pDoPublish, int64(wi))
		}
	}
	if int(q.sinceDB) >= c.cfg.PerDoorbell || flush {
		q.sinceDB = 0
		at := ring(th, c.cfg.Ordering)
		src.Doorbell(e, at, qp)
	}
	c.fab.SetIssueEnd(id, th.T)
	c.resume(e, pi)
}

// Delivered reports an Op whose payload is visible.
func (c *conn) Delivered(e *sim.Engine, nic *hw.NIC, id int32, m *hw.Msg) {
	t := nic.Times(id)
	d := transport.Delivery{
		Op: transport.Op{Src: int(m.Src), Dst: int(m.Dst), Channel: int(m.Channel), Bytes: int(m.Bytes),
			Atomic: m.Atomic, Flush: m.Flush, NIC: m.NIC, Tag: m.Tag},
		Times: transport.Times{IssueStart: t.Issue, IssueEnd: t.IssueEnd, Posted: t.Rung, Served: t.Served, Sent: t.Sent,
			Arrived: t.Arrived, Visible: t.Visible, Own: [transport.MaxOwnCauses]sim.Time{t.ConnMiss, t.DCISwitch}, RateBound: t.RateBound},
	}
	c.env.Delivered(e, d)
}

// Completed retires a WQE and frees its slot for a waiting warp.
func (c *conn) Completed(e *sim.Engine, nic *hw.NIC, _ int32, m *hw.Msg) {
	sq := nic.Index*c.perNIC + int(m.QP)
	q := &c.sqs[sq]
	n := m.WQE + 1 - q.retired
	q.retired += n
	if len(c.spaceWait) == 0 {
		return
	}
	ws := c.spaceWait[sq]
	for len(ws) > 0 && n > 0 {
		pi := ws[0]
		ws = ws[1:]
		n--
		// The warp reclaims at its next CQ poll, then retries.
		w := c.post.At(pi).w
		w.T.T = max(w.T.T, pollDetect(&c.gpu, e.Now())+c.gpu.CQPoll)
		e.At(w.T.T, c.selfID, pReserve, int64(pi))
	}
	if len(ws) == 0 {
		delete(c.spaceWait, sq)
	} else {
		c.spaceWait[sq] = ws
	}
}

// Resources reports QPs and connections per NIC: a rank's queues striped
// over its NICs, or those of every rank sharing one.
func (c *conn) Resources() transport.Resources {
	perRank := c.perNIC
	topo := &c.fab.P.Topo
	perNIC := topo.QueuesPerNIC(perRank)
	used := 0
	for _, q := range c.sqs {
		if q.reserved > 0 {
			used++
		}
	}
	r := transport.Resources{
		QPsPerNIC:         perNIC,
		ActiveConnPerNIC:  topo.QueuesPerNIC((used + c.env.Ranks - 1) / c.env.Ranks),
		QueueBytesPerRank: int64(perRank) * int64(c.cfg.Depth) * 64,
		ConnKnee:          int(c.env.Profile.Get("conn.entries")),
	}
	var hits, misses int64
	for _, n := range c.fab.NICs {
		h, m := n.CtxCounts()
		hits += h
		misses += m
	}
	if hits+misses > 0 {
		r.ConnMissRate = float64(misses) / float64(hits+misses)
	}
	if n := c.cfg.reservedPerNIC(c.env.Ranks); n > 0 {
		r.Own = map[string]int{ReservedResource: topo.QueuesPerNIC(n)}
	}
	if c.cfg.DCIs > 0 {
		r.Own = withOwn(r.Own, DCIsResource, perNIC)
		// Active connections: DCIs and the DCTs others target here, once
		// anything went through the NIC (not when NVLink carried all).
		if used > 0 {
			r.ActiveConnPerNIC = perNIC + c.dcts*max(1, topo.GPUsPerNIC)
		}
	}
	return r
}

// withOwn is own with name counted n, own made if nil.
func withOwn(own map[string]int, name string, n int) map[string]int {
	if own == nil {
		own = map[string]int{}
	}
	own[name] = n
	return own
}

// ReservedResource names, in Resources.Own, the queues per NIC (of
// QPsPerNIC, and of the DCIs under DC) that reserved traffic has to
// itself: the layer's own are the rest.
const ReservedResource = "reserved queues/NIC"

// reservedPerNIC is how many of a NIC's queues are reserved.
func (c Config) reservedPerNIC(ranks int) int {
	if c.DCIs > 0 {
		return c.Reserved
	}
	return ranks * c.Reserved
}

// QueueDepth is the WQEs one send queue holds, for workloads that check it
// against what they keep in flight (DeepEP: at least 2·(max tokens + 1)).
func (t gdaTransport) QueueDepth() int { return t.cfg.Depth }
