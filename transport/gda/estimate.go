package gda

import (
	"fmt"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// Estimate sizes a demand on this configuration without running it: the
// queues and connections Conn.Resources would report, a floor on the
// phase from the NICs and from each send queue's own serial work
// (doorbells, WQEs and, over DC, re-targeting a DCI for every new
// destination), and the class of configurations that move the demand the
// same way.
func (t gdaTransport) Estimate(d *transport.Demand, p *profile.Profile) (transport.Estimate, error) {
	c := t.cfg
	if err := c.Validate(); err != nil {
		return transport.Estimate{}, err
	}
	if d.Ranks < 1 {
		return transport.Estimate{}, fmt.Errorf("mini-gda: need at least one rank (got %d)", d.Ranks)
	}
	np := hw.NewNICParams(p)
	if err := np.Topo.Validate(); err != nil {
		return transport.Estimate{}, fmt.Errorf("mini-gda: %w", err)
	}
	dc := c.DCIs > 0
	perRank := c.queuesPerNIC(d.Ranks)
	perNIC := np.Topo.QueuesPerNIC(perRank)
	dcts := 0
	if dc {
		dcts = max(1, c.DCTs)
	}
	queues, loads, keys := c.tallyFlows(d, &np, dcts)
	est := transport.Estimate{Resources: transport.Resources{
		QPsPerNIC:         perNIC,
		ActiveConnPerNIC:  np.Topo.QueuesPerNIC((len(queues) + d.Ranks - 1) / d.Ranks),
		ConnKnee:          int(p.Get("conn.entries")),
		QueueBytesPerRank: int64(perRank) * int64(c.Depth) * 64,
	}}
	if n := c.reservedPerNIC(d.Ranks); n > 0 {
		est.Resources.Own = map[string]int{ReservedResource: np.Topo.QueuesPerNIC(n)}
	}
	if dc {
		est.Resources.Own = withOwn(est.Resources.Own, DCIsResource, perNIC)
		est.Resources.ActiveConnPerNIC = perNIC + dcts*max(1, np.Topo.GPUsPerNIC)
	}
	est.Floor, est.FloorBy = np.Floor(loads)
	// A send queue serves one doorbell at a time: a doorbell's handling
	// plus each WQE it fetched, at most MaxFetch per doorbell, and a DCI
	// re-targets before each WQE to a new destination.
	for _, ql := range queues {
		serves := (ql.ops + int64(np.MaxFetch) - 1) / int64(max(1, np.MaxFetch))
		busy := sim.Time(serves)*np.Doorbell + sim.Time(ql.ops)*np.WQE + np.Tail()
		by := "queue"
		if dc && ql.dsts > 1 {
			busy += sim.Time(ql.dsts-1) * np.DCSwitch
			by = "dci_switch"
		}
		if busy > est.Floor {
			est.Floor, est.FloorBy = busy, by
		}
	}
	if d.Exact {
		est.Class = c.class(d, &np, keys)
	}
	return est, nil
}

// queueKey is a send queue of a source rank.
type queueKey struct{ src, q int32 }

// queueLoad is what a send queue carries: its operations and how many
// destinations it changes to.
type queueLoad struct {
	ops     int64
	dsts    int
	lastDst int32
}

// tallyFlows counts d's flows over c's queues: each queue's load, the
// NIC loads, and the contexts each (rank, NIC) caches. Flows come sorted
// by source and destination, so each queue sees its destinations in
// order and counting changes counts them.
func (c Config) tallyFlows(d *transport.Demand, np *hw.NICParams, dcts int) (map[queueKey]*queueLoad, []hw.NICLoad, [][]int32) {
	dc := c.DCIs > 0
	// A queue's contexts are cached by the NIC it is striped to, at both
	// ends (keys per rank and NIC).
	nics := np.Topo.NICs()
	at := func(rank, q int32) int { return int(rank)*nics + int(q)%nics }
	queues := make(map[queueKey]*queueLoad, len(d.Flows))
	loads := make([]hw.NICLoad, d.Ranks)
	keys := make([][]int32, d.Ranks*nics)
	for i := range d.Flows {
		f := &d.Flows[i]
		if f.Src == f.Dst || f.Ops() == 0 || d.OverNVLink(f) {
			continue
		}
		// The queue an operation goes through, as Conn.Post picks it.
		q := int32(c.queue(int(f.Dst), int(f.Channel)))
		k := queueKey{f.Src, q}
		ql := queues[k]
		if ql == nil {
			ql = &queueLoad{lastDst: -1}
			queues[k] = ql
			// The contexts this queue's traffic needs, as the NIC keys them.
			if k := at(f.Src, q); dc {
				keys[k] = append(keys[k], 1<<22|q)
			} else {
				keys[k] = append(keys[k], q)
			}
		}
		if ql.lastDst != f.Dst {
			if k := at(f.Dst, q); dc {
				keys[k] = append(keys[k], 1<<23|f.Src%int32(dcts))
			} else {
				keys[k] = append(keys[k], f.Src<<12^q)
			}
			ql.dsts++
			ql.lastDst = f.Dst
		}
		ql.ops += f.Ops()
		np.AddMsg(loads, int(f.Src), int(f.Dst), int64(f.Writes), f.Bytes)
		np.AddMsg(loads, int(f.Src), int(f.Dst), int64(f.Atomics), 8*int64(f.Atomics))
	}
	return queues, loads, keys
}

// class is an exact demand's size class. Queues past the channels the
// demand uses carry nothing: the busy queues alone set the time, as long
// as the NICs' context caches see the same contexts (or keep them all).
func (c Config) class(d *transport.Demand, np *hw.NICParams, keys [][]int32) string {
	k := c
	k.Name, k.QPsPerPeer, k.DCIs = "", 0, 0
	ctx := hw.CtxClass(np.ConnEntries, np.ConnWays, keys)
	if l := np.Topo.Links(); l > 1 {
		// Queue q takes link q mod l: which link a busy queue takes
		// follows the queues' numbering, past the busy ones too.
		ctx += fmt.Sprintf(" links %d: %d", l, (c.DCIs+c.QPsPerPeer+c.Reserved)%l)
	}
	if c.DCIs > 0 {
		return fmt.Sprintf("dc %d busy DCIs %+v%s", min(c.DCIs, max(1, d.Channels)), k, ctx)
	}
	return fmt.Sprintf("rc %d busy QPs per peer %+v%s", min(c.QPsPerPeer, max(1, d.Channels)), k, ctx)
}
