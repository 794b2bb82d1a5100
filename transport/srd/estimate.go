package srd

import (
	"fmt"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

var _ transport.Estimator = Transport{}

// Estimate sizes a demand without running it: the resources Conn.Resources
// would report, and a floor on the phase from what each rank does one
// thing after another: every byte leaves on its queue's link; every post
// rings a doorbell its SRD QP handles in turn; a proxy worker reads,
// posts and reaps every operation of its rings. The last message then
// still crosses the fabric.
func (t Transport) Estimate(d *transport.Demand, p *profile.Profile) (transport.Estimate, error) {
	cfg := t.cfg
	if err := cfg.Validate(); err != nil {
		return transport.Estimate{}, fmt.Errorf("%s: %w", t.name, err)
	}
	if d.Ranks < 1 {
		return transport.Estimate{}, fmt.Errorf("%s: need at least one rank (got %d)", t.name, d.Ranks)
	}
	np := hw.NewNICParams(p)
	if err := np.Topo.Validate(); err != nil {
		return transport.Estimate{}, fmt.Errorf("%s: %w", t.name, err)
	}
	nics, links := np.Topo.NICs(), np.Topo.Links()
	c := &conn{cfg: cfg, nics: nics, perRank: cfg.QPsPerNIC * nics}
	doorbell := np.Doorbell
	var perOp sim.Time
	if cfg.Style == Proxy {
		doorbell = sim.Ns(p.Get("proxy.nic_doorbell_ns"))
		g := hw.NewGPUCosts(p)
		k := newCosts(cfg, p, &g)
		perOp = k.perWR + k.cqPoll
	}
	type at struct{ rank, i int32 }
	wire := map[at]sim.Time{}   // per (rank, link)
	queue := map[at]sim.Time{}  // per (rank, SRD QP)
	worker := map[at]sim.Time{} // per (rank, proxy worker)
	peers := map[at]map[int32]bool{}
	for i := range d.Flows {
		f := &d.Flows[i]
		if d.OverNVLink(f) || f.Ops() == 0 {
			continue
		}
		q := c.queue(int(f.Channel))
		w := sim.Time(f.Atomics) * np.WireTime(8)
		if f.Writes > 0 {
			w += sim.Time(f.Writes) * np.WireTime(int(f.Bytes/int64(f.Writes)))
		}
		wire[at{f.Src, int32(q % links)}] += w
		queue[at{f.Src, int32(q)}] += sim.Time(f.Ops()) * doorbell
		if cfg.Style == Proxy {
			worker[at{f.Src, int32(int(f.Channel) % cfg.Rings % cfg.Workers)}] += sim.Time(f.Ops()) * perOp
		}
		dev := at{f.Src, int32(q % nics)}
		if peers[dev] == nil {
			peers[dev] = map[int32]bool{}
		}
		peers[dev][f.Dst] = true
	}
	est := transport.Estimate{Resources: transport.Resources{
		QPsPerNIC:         np.Topo.QueuesPerNIC(c.perRank),
		QueueBytesPerRank: int64(c.perRank) * SQDepth * WQEBytes,
		Own:               map[string]int{AHResource: 0},
	}}
	for _, s := range peers {
		est.Resources.Own[AHResource] = max(est.Resources.Own[AHResource], len(s))
	}
	if cfg.Style == Proxy {
		est.Resources.QueueBytesPerRank += int64(cfg.Rings) * ringSlots * descBytes
		est.Resources.HostQueues = true
		est.Resources.Own[RingsResource] = cfg.Rings
		est.Resources.Own[WorkersResource] = cfg.Workers
	}
	for _, part := range []struct {
		by   string
		load map[at]sim.Time
	}{{"egress", wire}, {"SRD QP doorbells", queue}, {"proxy worker", worker}} {
		for _, v := range part.load {
			if v > est.Floor {
				est.Floor, est.FloorBy = v, part.by
			}
		}
	}
	if est.Floor > 0 {
		est.Floor += np.Fabric
	}
	return est, nil
}
