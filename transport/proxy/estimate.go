package proxy

import (
	"fmt"
	"slices"
	"strings"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// Estimate sizes a demand on this configuration without running it: the
// rings, workers and queues Conn.Resources would report, a floor on the
// phase from the NICs and from each worker's own serial work (a ring load,
// a descriptor consumed and a work request built per operation, a post per
// chain of at most B to one destination), and the class of configurations
// that move the demand the same way.
func (t Transport) Estimate(d *transport.Demand, p *profile.Profile) (transport.Estimate, error) {
	cfg := t.cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return transport.Estimate{}, fmt.Errorf("mini-proxy: %w", err)
	}
	if d.Ranks < 1 {
		return transport.Estimate{}, fmt.Errorf("mini-proxy: need at least one rank (got %d)", d.Ranks)
	}
	np := nicParams(p)
	if err := np.Topo.Validate(); err != nil {
		return transport.Estimate{}, fmt.Errorf("mini-proxy: %w", err)
	}
	c := newCosts(p, cfg.State)
	nics := np.Topo.NICs()
	tl := tallyFlows(&cfg, d, &np, nics)
	rings, chans, keys, peers, loads := tl.rings, tl.chans, tl.keys, tl.peers, tl.loads
	active := 0
	for _, p := range peers {
		active = max(active, p*cfg.Workers)
	}
	est := transport.Estimate{Resources: transport.Resources{
		QPsPerNIC:         np.Topo.QueuesPerNIC(cfg.qpsPerNIC(d.Ranks)),
		ActiveConnPerNIC:  np.Topo.QueuesPerNIC(active),
		ConnKnee:          np.ConnEntries,
		QueueBytesPerRank: int64(cfg.Rings*cfg.RingSlots*16 + cfg.Workers*cfg.classes()*d.Ranks*cfg.SQDepth*64),
		HostQueues:        true,
		Own:               map[string]int{RingsResource: cfg.Rings, WorkersResource: cfg.Workers},
	}}
	est.Floor, est.FloorBy = np.Floor(loads)
	// A worker does its rings' operations one after another: per
	// operation the descriptor's consumption and its work request, per
	// post a ring load and the chain's post, a chain holding at most B
	// operations to one destination. The last post still rings the NIC
	// and crosses the fabric.
	busy := map[[2]int32]sim.Time{} // (source, worker)
	for k, l := range rings {
		busy[[2]int32{k.src, k.ring % int32(cfg.Workers)}] += sim.Time(l.ops)*(c.descConsume+c.postWR) + sim.Time(l.posts)*(c.ringPoll+c.postChain)
	}
	for _, b := range busy {
		if t := b + c.hostMMIO + np.Doorbell + np.Tail(); t > est.Floor {
			est.Floor, est.FloorBy = t, "proxy_worker"
		}
	}
	// Queue q takes link q mod Links, and a worker's queues start at its
	// index × its queue count: unless that count is a multiple of the
	// links, which worker carries a ring sets its links, which the class
	// does not say.
	if l := np.Topo.Links(); d.Exact && cfg.classes()*d.Ranks%l == 0 {
		est.Class = t.class(chans) + hw.CtxClass(np.ConnEntries, np.ConnWays, keys)
	}
	return est, nil
}

// ringKey is a ring of a source rank.
type ringKey struct{ src, ring int32 }

// ringLoad is what a ring carries: its operations and posts, and the run
// of operations to its current destination.
type ringLoad struct {
	ops, posts int64
	dst        int32
	run        int64 // operations to dst so far
}

// flowTally is a demand's flows as the proxy carries them: per ring its
// load and what it carries, the connection keys cached at each (rank,
// NIC), each source's peers and the NIC loads.
type flowTally struct {
	rings map[ringKey]*ringLoad
	chans map[int]map[cv]bool // what each ring carries (the same on every rank)
	keys  [][]int32
	peers []int
	loads []hw.NICLoad
}

// tallyFlows counts d's flows over cfg's rings. Flows come sorted by
// source and destination: a ring's chains are counted per destination as
// its destinations go by, and a source's peers by counting changes of
// destination.
func tallyFlows(cfg *Config, d *transport.Demand, np *hw.NICParams, nics int) *flowTally {
	t := &flowTally{rings: map[ringKey]*ringLoad{}, chans: map[int]map[cv]bool{},
		keys: make([][]int32, d.Ranks*nics), peers: make([]int, d.Ranks), loads: make([]hw.NICLoad, d.Ranks)}
	// A queue's contexts are cached by the NIC it is striped to, at both
	// ends (keys per rank and NIC).
	at := func(rank, q int32) int { return int(rank)*nics + int(q)%nics }
	lastDst := make([]int32, d.Ranks)
	for i := range lastDst {
		lastDst[i] = -1
	}
	add := func(f *transport.Flow, atomic bool, n int64) {
		if n == 0 {
			return
		}
		// The ring an operation goes through, as Conn.ring picks it.
		r := cfg.ring(int(f.Channel), atomic)
		k := ringKey{f.Src, int32(r)}
		l := t.rings[k]
		if l == nil {
			l = &ringLoad{dst: -1}
			t.rings[k] = l
		}
		if l.dst != f.Dst {
			l.flush(cfg.Batch)
			l.dst, l.run = f.Dst, 0
			qp := int32((r%cfg.Workers)*d.Ranks) + f.Dst
			t.keys[at(f.Src, qp)] = append(t.keys[at(f.Src, qp)], qp)
			t.keys[at(f.Dst, qp)] = append(t.keys[at(f.Dst, qp)], f.Src<<12^qp)
		}
		l.run += n
		l.ops += n
		c := t.chans[r]
		if c == nil {
			c = map[cv]bool{}
			t.chans[r] = c
		}
		c[cv{f.Channel, atomic}] = true
	}
	for i := range d.Flows {
		f := &d.Flows[i]
		if f.Src == f.Dst || f.Ops() == 0 || d.OverNVLink(f) {
			continue
		}
		if lastDst[f.Src] != f.Dst {
			t.peers[f.Src]++
			lastDst[f.Src] = f.Dst
		}
		add(f, false, int64(f.Writes))
		add(f, true, int64(f.Atomics))
		np.AddMsg(t.loads, int(f.Src), int(f.Dst), int64(f.Writes), f.Bytes)
		np.AddMsg(t.loads, int(f.Src), int(f.Dst), int64(f.Atomics), 8*int64(f.Atomics))
	}
	for _, l := range t.rings {
		l.flush(cfg.Batch)
	}
	return t
}

// flush ends the ring's chain to its current destination: its posts, at
// most batch operations each.
func (l *ringLoad) flush(batch int) { l.posts += (l.run + int64(batch) - 1) / int64(batch) }

// cv is what a ring carries: a channel's writes or its atomics.
type cv struct {
	ch     int32
	atomic bool
}

// class describes the busy workers' loops: how many rings each polls and
// where in the loop the rings that carry traffic sit, with what they
// carry. Idle workers and what they poll do not enter it.
func (t Transport) class(chans map[int]map[cv]bool) string {
	cfg := t.cfg.withDefaults()
	var loops []string
	for w := range cfg.Workers {
		var b strings.Builder
		pos := 0
		for r := w; r < cfg.Rings; r += cfg.Workers {
			if cs := chans[r]; len(cs) > 0 {
				l := make([]string, 0, len(cs))
				for k := range cs {
					l = append(l, fmt.Sprintf("%d/%v", k.ch, k.atomic))
				}
				slices.Sort(l)
				fmt.Fprintf(&b, " %d:%s", pos, strings.Join(l, ","))
			}
			pos++
		}
		if b.Len() > 0 {
			loops = append(loops, fmt.Sprintf("loop of %d rings%s", pos, b.String()))
		}
	}
	slices.Sort(loops)
	k := cfg
	k.Workers, k.Rings = 0, 0
	return fmt.Sprintf("proxy %+v [%s]", k, strings.Join(loops, "; "))
}
