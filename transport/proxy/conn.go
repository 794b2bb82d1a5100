package proxy

import (
	"fmt"
	"math/bits"

	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// Transport is mini-proxy as a transport.Transport.
type Transport struct {
	cfg  Config
	name string // "" = mini-proxy and the configuration
}

// New returns the mini-proxy transport for cfg.
func New(cfg Config) Transport { return Transport{cfg: cfg} }

// Name is the transport's name.
func (t Transport) Name() string {
	if t.name != "" {
		return t.name
	}
	return "mini-proxy " + t.cfg.String()
}

// CarriesNVLink: same-node peers go over NVLink when the layer allows it,
// as NVSHMEM's peer-to-peer stores do whatever carries the remote peers.
func (t Transport) CarriesNVLink() bool { return true }

// Open builds the rings, workers and NICs of env.Ranks ranks, rank r on
// fabric NIC r. Every operation goes through the NIC, but for same-node
// peers when env.NVLink is on: the warp copies those over NVLink itself.
func (t Transport) Open(env *transport.Env) (transport.Conn, error) {
	if err := transport.RCHost(env.Profile); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	if err := t.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("mini-proxy: %w", err)
	}
	if env.Ranks < 1 {
		return nil, fmt.Errorf("mini-proxy: need at least one rank (got %d)", env.Ranks)
	}
	if env.E == nil || env.Profile == nil || env.Delivered == nil {
		return nil, fmt.Errorf("mini-proxy: env needs an engine, a profile and a Delivered callback")
	}
	cfg := t.cfg.withDefaults()
	if err := hw.NewNICParams(env.Profile).Topo.Validate(); err != nil {
		return nil, fmt.Errorf("mini-proxy: %w", err)
	}
	if qps := cfg.qpsPerNIC(env.Ranks); env.Ranks > hw.MaxNICs || qps > hw.MaxQPs {
		return nil, fmt.Errorf("mini-proxy: %d ranks need %d QPs per NIC, more than the model's %d", env.Ranks, qps, hw.MaxQPs)
	}
	c := &conn{env: env, m: newModel(env.E, env.Profile, t.cfg, env.Ranks)}
	c.m.fab.Place(env.GPUsPerNode)
	// The NIC retransmits; a worker that reaps an error completion resets
	// the QP and posts again as many times as the profile says.
	transport.ApplyFaults(env, c.m.fab, t.Name(), int(env.Profile.Get("proxy.qp_resets")))
	if env.Mem != nil {
		c.m.perGPU = env.Mem.RanksPerGPU()
	}
	c.m.onDeliver = c.delivered
	c.words = (env.Ranks + 63) / 64
	c.used = make([]uint64, env.Ranks*c.words)
	c.nvl = transport.NewNVLinkPath(env)
	return c, nil
}

// conn carries the workload's operations. Times reported per Op:
// IssueStart/IssueEnd the warp's enqueue, Posted the descriptor visible to
// the worker, Served the NIC beginning the doorbell that carried the WQE,
// Sent/Arrived/Visible from the NIC.
type conn struct {
	env  *transport.Env
	m    *model
	idle []*producer
	// used is a bit per (rank, destination) that carried traffic, words
	// uint64s a rank.
	used  []uint64
	words int
	nvl   *transport.NVLinkPath // same-node peers, with NVLink on
}

// ring picks op's ring by its channel (Config.ring).
func (c *conn) ring(op transport.Op) *ring {
	return c.m.nodes[op.Src].rings[c.m.cfg.ring(op.Channel, op.Atomic)]
}

// Post enqueues op from w. With the tuned handoff a ring keeps one
// producer: a ring that a second warp posts to falls back to the baseline
// (multi-producer) protocol for that warp.
func (c *conn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	if op.Src < 0 || op.Src >= c.env.Ranks || op.Dst < 0 || op.Dst >= c.env.Ranks {
		panic(fmt.Sprintf("mini-proxy: op %d -> %d outside %d ranks", op.Src, op.Dst, c.env.Ranks))
	}
	if op.Channel != int(int32(op.Channel)) || op.Bytes != int(int32(op.Bytes)) {
		panic(fmt.Sprintf("mini-proxy: op channel %d or size %d out of range", op.Channel, op.Bytes))
	}
	if c.nvl.Takes(op) {
		c.nvl.Post(e, w, op)
		return
	}
	r := c.ring(op)
	var p *producer
	if k := len(c.idle); k > 0 {
		p = c.idle[k-1]
		c.idle = c.idle[:k-1]
	} else {
		p = c.m.newProducer(nil, c.posted)
	}
	p.th, p.w = &w.T, w
	tuned := c.m.cfg.Handoff == Tuned
	if tuned {
		if r.ownerWarp == nil {
			r.ownerWarp = w
		}
		tuned = r.ownerWarp == w
	}
	id := c.m.newOp(op.Src, op.Dst, op.Bytes, op.Atomic, op.Tag)
	o := c.m.op(id)
	o.ch, o.flush = int32(op.Channel), op.Flush
	if op.NIC {
		o.refs |= opNIC
	}
	c.used[op.Src*c.words+op.Dst/64] |= 1 << (op.Dst % 64)
	p.post(e, r, id, tuned)
}

// posted runs at the warp's local time when its enqueue left the SM.
func (c *conn) posted(e *sim.Engine, p *producer) {
	w := p.w
	p.th, p.w = nil, nil
	c.idle = append(c.idle, p)
	if w.Resume != nil {
		w.Resume(e, w)
	}
}

func (c *conn) delivered(e *sim.Engine, op int32, msg hw.MsgTimes) {
	o := c.m.op(op)
	d := transport.Op{Src: int(o.src), Dst: int(o.dst), Channel: int(o.ch), Bytes: int(o.bytes), Atomic: o.atomic, Flush: o.flush, NIC: o.nic(), Tag: o.user}
	c.env.Delivered(e, transport.Delivery{Op: d, Times: transport.Times{
		IssueStart: o.issueStart, IssueEnd: o.issueEnd, Posted: o.visible,
		Served: msg.Served, Sent: msg.Sent, Arrived: msg.Arrived, Visible: msg.Visible,
		Own: [transport.MaxOwnCauses]sim.Time{msg.ConnMiss}, RateBound: msg.RateBound,
	}})
}

// Resources reports the rings and workers per rank, and the queues and
// connections per NIC (a rank's striped over its NICs, or those of every
// rank sharing one).
func (c *conn) Resources() transport.Resources {
	cfg := &c.m.cfg
	active := 0
	for r := range c.env.Ranks {
		n := 0
		for _, u := range c.used[r*c.words : (r+1)*c.words] {
			n += bits.OnesCount64(u)
		}
		active = max(active, n*cfg.Workers)
	}
	topo := &c.m.fab.P.Topo
	return transport.Resources{
		QPsPerNIC:         topo.QueuesPerNIC(cfg.qpsPerNIC(c.env.Ranks)),
		ActiveConnPerNIC:  topo.QueuesPerNIC(active),
		ConnKnee:          c.m.fab.P.ConnEntries,
		QueueBytesPerRank: int64(cfg.Rings*cfg.RingSlots*16 + cfg.Workers*cfg.classes()*c.env.Ranks*cfg.SQDepth*64),
		HostQueues:        true,
		Own:               map[string]int{RingsResource: cfg.Rings, WorkersResource: cfg.Workers},
	}
}
