package srd

import (
	"fmt"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// inlineMax is the payload an EFA WQE carries inline (the device's
// inline_buf_size, 32 B); larger payloads the device reads by DMA.
const inlineMax = 32

// costs are the profile's constants the conn uses, resolved once.
type costs struct {
	// GPU side.
	lib       sim.Time // the library's software per GPU post
	hostStore sim.Time // one posted SM store to host memory (a descriptor)
	// Proxy side, at the worker's cold clock.
	perWR      sim.Time // read a descriptor and post its work request
	cqPoll     sim.Time // reap one completion
	flagStore  sim.Time // receiver: store a flag into GPU memory through GDRCopy
	descFlight sim.Time // descriptor store until the worker can see it
	gdrFlight  sim.Time // GDRCopy store until the GPU can see it
	hostMMIO   sim.Time // a worker's doorbell store
}

func newCosts(cfg Config, p *profile.Profile, g *hw.GPUCosts) costs {
	ns := func(n string) sim.Time { return sim.Ns(p.Get(n)) }
	mhz := p.Get("proxy.cpu_cold_mhz")
	host := func(n string) sim.Time { return sim.Ns(p.Get(n+".cycles")*1000/mhz + p.Get(n+".ns")) }
	return costs{
		lib:        sim.Ns(cfg.LibCycles*1000/g.ClockMHz + cfg.LibNs),
		hostStore:  sim.Ns(p.Get("gpu.host_store.cycles")*1000/g.ClockMHz + p.Get("gpu.host_store.ns")),
		perWR:      host("proxy.ring_poll") + host("proxy.desc_consume") + host("proxy.post_chain") + host("proxy.post_wr") + sim.Ns(cfg.HostNs),
		cqPoll:     host("proxy.cq_poll"),
		flagStore:  host("proxy.counter_gdr"),
		descFlight: ns("proxy.desc_flight_ns"),
		gdrFlight:  ns("proxy.gdr_flight_ns"),
		hostMMIO:   ns("proxy.host_mmio_ns"),
	}
}

// Open builds one fabric NIC per rank, each with QPsPerNIC SRD QPs on
// every EFA device of the rank, over datagram queues.
func (t Transport) Open(env *transport.Env) (transport.Conn, error) {
	cfg := t.cfg
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	p := env.Profile
	if err := efaHost(p); err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	if env.Ranks > hw.MaxNICs {
		return nil, fmt.Errorf("%s: %d ranks, more than the model's %d NICs", t.name, env.Ranks, hw.MaxNICs)
	}
	np := hw.NewNICParams(p)
	if err := np.Topo.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	// The devices' context caches hold address handles and peer state.
	np.ConnEntries = int(p.Get("efa.ah_entries"))
	np.ConnMiss = sim.Ns(p.Get("efa.ah_miss_ns"))
	if cfg.Style == Proxy {
		// Doorbells a CPU rings are handled as mini-proxy's are.
		np.Doorbell = sim.Ns(p.Get("proxy.nic_doorbell_ns"))
	}
	rtt := 2 * (np.Fabric + 2*np.Topo.Hop)
	if rto := sim.Ns(p.Get("efa.rto_us") * 1000); rto <= rtt {
		return nil, fmt.Errorf("%s: efa.rto_us %g is not above the fabric's round trip of %v: every packet would be retransmitted", t.name, p.Get("efa.rto_us"), rtt)
	}
	c := &conn{cfg: cfg, env: env, gpu: hw.NewGPUCosts(p), nics: np.Topo.NICs(),
		flows: map[flow]*flowState{}, seq: map[int32]int64{}, peers: map[int64]bool{}}
	c.perRank = cfg.QPsPerNIC * c.nics
	c.cost = newCosts(cfg, p, &c.gpu)
	c.nvl = transport.NewNVLinkPath(env)
	c.fab = hw.NewFabric(env.E, np, env.Ranks, c.perRank, c)
	c.fab.Datagram(int(p.Get("efa.paths")))
	c.fab.Place(env.GPUsPerNode)
	// SRD retransmits in the adapter, whoever posts.
	transport.ApplyFaults(env, c.fab, t.name, 0)
	if cfg.Style == Proxy {
		fetch := sim.Ns(p.Get("proxy.nic_host_fetch_ns"))
		for _, n := range c.fab.NICs {
			n.HostQueues(fetch)
		}
		c.free = make([]sim.Time, env.Ranks*cfg.Workers)
	}
	c.id = env.E.Register(c)
	return c, nil
}

// efaHost refuses a profile without EFA.
func efaHost(p *profile.Profile) error {
	if g := p.Get("efa.generation"); g < 1 {
		return fmt.Errorf("profile %s has no EFA (efa.generation %g): SRD runs on an EFA host (p-h100-efa, p-h200-efa, p-b200-efa)", p.Name, g)
	}
	return nil
}

// flow is what a flag covers: the writes from one rank to one peer on
// one channel posted before it.
type flow struct{ src, dst, ch int32 }

// flowState follows a flow's writes in posting order: next have been
// posted, the first low have all completed (SRD completes them in any
// order: done marks those from low on), and held are its flags waiting
// for the writes they cover, in the order posted. A flag covers the
// writes posted before it, not those posted after (a background sharing
// the channel keeps writes open all along).
type flowState struct {
	next, low int64
	done      []bool
	held      []heldFlag
}

type heldFlag struct {
	fi    int32 // the flag's record
	cover int64 // the writes it waits for: those numbered below
}

// flagRec is a count or flag on its way: its message, the warp that
// posts it (GPU posting), and, if it waited for its data, when the hold
// began, the timeline of the write whose completion released it, and
// when it was handed to the device.
type flagRec struct {
	w              *transport.Warp
	msg            int32
	cover          int64 // its flow's writes posted before it
	holdAt, postAt sim.Time
	gate           hw.MsgTimes
	held           bool
}

type conn struct {
	cfg     Config
	env     *transport.Env
	gpu     hw.GPUCosts
	cost    costs
	fab     *hw.Fabric
	nvl     *transport.NVLinkPath
	id      sim.HandlerID
	nics    int // EFA devices per rank
	perRank int // SRD QPs per rank, over its devices
	// flows follow the writes and held flags of each flow with any open;
	// seq numbers each open write within its flow.
	flows map[flow]*flowState
	seq   map[int32]int64
	flags sim.Slab[flagRec]
	// free is when each proxy worker (rank·Workers + worker) is next idle.
	free []sim.Time
	// pending holds flag deliveries while the receiver reaps them.
	pending sim.Slab[transport.Delivery]
	// peers marks the (device, peer) pairs that carried traffic: the
	// address handles each device holds.
	peers map[int64]bool
}

// Events of the conn's handler (arg: a message, or a pending delivery).
const (
	evRing     int32 = iota // the GPU's doorbell store leaves the SM
	evHostRing              // a worker's doorbell store
	evDesc                  // a descriptor becomes visible to its worker
	evDeliver               // a flag's receiver has reaped it
)

// queue is the SRD QP an op of channel ch takes: channels (a proxy's
// rings) spread over the rank's QPs, and so over its devices (queue q
// leaves on link q mod links).
func (c *conn) queue(ch int) int {
	if c.cfg.Style == Proxy {
		ch %= c.cfg.Rings
	}
	return ch % c.perRank
}

// worker is the proxy worker of rank's ring for channel ch.
func (c *conn) worker(rank, ch int32) int {
	return int(rank)*c.cfg.Workers + int(ch)%c.cfg.Rings%c.cfg.Workers
}

// Post runs op from warp w: over NVLink for a peer in the domain, else as
// an SRD write (a count or flag: a write with immediate after its data).
func (c *conn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	if c.nvl.Takes(op) {
		c.nvl.Post(e, w, op)
		return
	}
	w.T.T = max(w.T.T, e.Now())
	k := flow{int32(op.Src), int32(op.Dst), int32(op.Channel)}
	id := c.fab.NewMsg()
	m := hw.Msg{Src: int32(op.Src), Dst: int32(op.Dst), Bytes: int32(op.Bytes), Flush: op.Flush, NIC: op.NIC, Tag: op.Tag,
		Issue: w.T.T, Channel: int32(op.Channel), QP: int32(c.queue(op.Channel)), Pointer: op.Bytes > inlineMax && !op.Atomic}
	fs := c.flows[k]
	if fs == nil {
		fs = &flowState{}
		c.flows[k] = fs
	}
	fi := int32(-1)
	if op.Atomic {
		// No RDMA atomics: an 8 B write with immediate data, marked by
		// its record's index in the message's WQE field.
		fi = c.flags.Alloc()
		*c.flags.At(fi) = flagRec{w: w, msg: id, cover: fs.next}
		m.WQE, m.Bytes = fi+1, 8
	} else {
		c.seq[id] = fs.next
		fs.next++
		fs.done = append(fs.done, false)
	}
	c.fab.SetMsg(id, m)
	peer := int64(op.Src*c.nics+int(m.QP)%c.nics)<<32 | int64(op.Dst)
	c.peers[peer] = true
	if c.cfg.Style == Proxy {
		// The warp claims a ring slot (a CAS on its head), writes the
		// descriptor to host memory and, after a system-scope fence, its
		// valid byte; the worker sees it a flight later.
		th := &w.T
		th.Compute(c.gpu.Atomic + c.cost.hostStore)
		th.Fence(c.gpu.FenceSys)
		th.Compute(c.cost.hostStore)
		c.fab.SetIssueEnd(id, th.T)
		e.At(th.T+c.cost.descFlight, c.id, evDesc, int64(id))
		w.Resume(e, w)
		return
	}
	if fi >= 0 && fs.low < fs.next {
		// The warp waits for the writes it covers, polling the CQ.
		c.hold(fs, fi, w.T.T)
		return
	}
	c.gpuPost(e, w, id, fi)
}

// hold keeps flag fi until the writes it covers completed, from at on.
func (c *conn) hold(fs *flowState, fi int32, at sim.Time) {
	r := c.flags.At(fi)
	r.held, r.holdAt = true, at
	fs.held = append(fs.held, heldFlag{fi, r.cover})
}

// gpuPost is EFA DP Direct's post from warp w of message id: reserve a
// slot of the shared SQ (an atomic on its producer index), write the 64 B
// WQE, then a system-scope fence, the 32-bit producer-index doorbell and
// another system-scope fence.
func (c *conn) gpuPost(e *sim.Engine, w *transport.Warp, id, fi int32) {
	th := &w.T
	th.T = max(th.T, e.Now())
	th.Compute(c.cost.lib + c.gpu.Atomic)
	th.Store(WQEBytes/16, 1)
	th.Fence(c.gpu.FenceSys)
	th.Compute(c.gpu.MMIOStore)
	at := th.T
	th.Fence(c.gpu.FenceSys)
	c.fab.SetIssueEnd(id, at)
	if fi >= 0 {
		c.flags.At(fi).postAt = at
	}
	e.At(at, c.id, evRing, int64(id))
	w.Resume(e, w)
}

// workerPost has message id's proxy worker post it once free, from t on.
func (c *conn) workerPost(e *sim.Engine, id int32, m *hw.Msg, t sim.Time) {
	wi := c.worker(m.Src, m.Channel)
	start := max(t, c.free[wi])
	c.free[wi] = start + c.cost.perWR
	if m.WQE > 0 {
		c.flags.At(m.WQE - 1).postAt = c.free[wi]
	}
	e.At(c.free[wi], c.id, evHostRing, int64(id))
}

// Handle runs the conn's events.
func (c *conn) Handle(e *sim.Engine, op int32, arg int64) {
	if op == evDeliver {
		d := *c.pending.At(int32(arg))
		c.pending.Free(int32(arg))
		c.env.Delivered(e, d)
		return
	}
	id := int32(arg)
	m := c.fab.Msg(id)
	n := c.fab.NICs[m.Src]
	switch op {
	case evRing:
		n.Enqueue(int(m.QP), id)
		n.Doorbell(e, e.Now(), int(m.QP))
	case evHostRing:
		n.Enqueue(int(m.QP), id)
		n.Ring(e, e.Now(), int(m.QP), c.cost.hostMMIO)
	case evDesc:
		if m.WQE > 0 {
			if fs := c.flows[flow{m.Src, m.Dst, m.Channel}]; fs != nil && fs.low < c.flags.At(m.WQE-1).cover {
				c.hold(fs, m.WQE-1, e.Now())
				return
			}
		}
		c.workerPost(e, id, &m, e.Now())
	}
}

// Completed retires a write: its proxy worker reaps the completion, and
// the last write a flow had open releases the flags held for it.
func (c *conn) Completed(e *sim.Engine, nic *hw.NIC, id int32, m *hw.Msg) {
	now := e.Now()
	if c.cfg.Style == Proxy {
		wi := c.worker(m.Src, m.Channel)
		c.free[wi] = max(now, c.free[wi]) + c.cost.cqPoll
	}
	if m.WQE > 0 {
		return
	}
	k := flow{m.Src, m.Dst, m.Channel}
	fs := c.flows[k]
	s := c.seq[id]
	delete(c.seq, id)
	fs.done[s-fs.low] = true
	n := 0
	for n < len(fs.done) && fs.done[n] {
		n++
	}
	fs.done, fs.low = fs.done[n:], fs.low+int64(n)
	// Release, in order, the flags whose writes have all completed.
	var release []int32
	keep := fs.held[:0]
	for _, h := range fs.held {
		if h.cover <= fs.low {
			release = append(release, h.fi)
		} else {
			keep = append(keep, h)
		}
	}
	fs.held = keep
	if fs.low == fs.next && len(fs.held) == 0 {
		delete(c.flows, k)
	}
	var gate hw.MsgTimes
	if len(release) > 0 {
		gate = nic.Times(id)
	}
	for _, fi := range release {
		r := c.flags.At(fi)
		r.gate = gate
		if c.cfg.Style == Proxy {
			fm := c.fab.Msg(r.msg)
			c.workerPost(e, r.msg, &fm, now)
			continue
		}
		// The waiting warp sees the completion at its next CQ poll.
		w := r.w
		w.T.T = max(w.T.T, now+(c.gpu.L2Load+c.gpu.PollGap)/2+c.gpu.L2Load+c.gpu.CQPoll)
		c.gpuPost(e, w, r.msg, fi)
	}
}

// Delivered reports a write whose payload is visible; a flag is reported
// once its receiver has reaped its completion: the GPU polling its CQ, or
// the peer's proxy worker, which stores it into GPU memory.
func (c *conn) Delivered(e *sim.Engine, nic *hw.NIC, id int32, m *hw.Msg) {
	t := nic.Times(id)
	d := transport.Delivery{
		Op: transport.Op{Src: int(m.Src), Dst: int(m.Dst), Channel: int(m.Channel), Bytes: int(m.Bytes),
			Atomic: m.WQE > 0, Flush: m.Flush, NIC: m.NIC, Tag: m.Tag},
		Times: transport.Times{IssueStart: t.Issue, IssueEnd: t.IssueEnd, Posted: t.Rung, Served: t.Served, Sent: t.Sent,
			Arrived: t.Arrived, Visible: t.Visible, Own: [transport.MaxOwnCauses]sim.Time{t.ConnMiss}, RateBound: t.RateBound},
	}
	if m.WQE == 0 {
		c.env.Delivered(e, d)
		return
	}
	r := *c.flags.At(m.WQE - 1)
	c.flags.Free(m.WQE - 1)
	if r.held {
		// The flag's path is the write that released it up to its
		// arrival, then the wait for its acknowledgement, the poll that
		// saw the completion and the flag's own post (flag_wait), then
		// the flag's way to its peer.
		g := &r.gate
		tt := &d.Times
		tt.IssueStart, tt.IssueEnd, tt.Posted, tt.Served = g.Issue, g.IssueEnd, g.Rung, g.Served
		tt.Own = [transport.MaxOwnCauses]sim.Time{g.ConnMiss, max(0, r.postAt-g.Arrived)}
		tt.RateBound = g.RateBound
	}
	if c.cfg.Style == Proxy {
		wi := c.worker(m.Dst, m.Channel)
		start := max(t.Visible, c.free[wi])
		c.free[wi] = start + c.cost.cqPoll + c.cost.flagStore
		d.Times.Visible = c.free[wi] + c.cost.gdrFlight
	} else {
		d.Times.Visible += c.gpu.CQPoll
	}
	pi := c.pending.Alloc()
	*c.pending.At(pi) = d
	e.At(d.Times.Visible, c.id, evDeliver, int64(pi))
}

// Resources reports the SRD QPs per device, the address handles a device
// holds (peers its queues sent to), and a proxy's rings and workers. SRD
// has no connections.
func (c *conn) Resources() transport.Resources {
	r := transport.Resources{
		QPsPerNIC:         c.fab.P.Topo.QueuesPerNIC(c.perRank),
		QueueBytesPerRank: int64(c.perRank) * SQDepth * WQEBytes,
		Own:               map[string]int{AHResource: c.handles()},
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
	if c.cfg.Style == Proxy {
		r.QueueBytesPerRank += int64(c.cfg.Rings) * ringSlots * descBytes
		r.HostQueues = true
		r.Own[RingsResource] = c.cfg.Rings
		r.Own[WorkersResource] = c.cfg.Workers
	}
	return r
}

// handles is the most address handles one device holds.
func (c *conn) handles() int {
	per := map[int64]int{}
	most := 0
	for k := range c.peers {
		d := k >> 32
		per[d]++
		most = max(most, per[d])
	}
	return most
}
