package moe

import (
	"slices"

	"moebench/transport"
)

// Demands lists the operations the layer posts to the transport in
// dispatch and in combine, for sizing a transport without running it.
// Low-latency mode is enumerated exactly: one write per remote selection
// on the destination's local-expert channel, one count per (rank, remote
// expert) in dispatch, the writes back and one flag per (expert, remote
// rank) in combine. Background traffic beside the layer is not listed and
// marks the demands inexact. ok is false for normal mode, whose chunked,
// forwarded traffic is not enumerated here.
func Demands(rt *Routing, mode Mode, nvlink bool, bg Background) (dispatch, combine *transport.Demand, ok bool) {
	if !mode.valid() || !mode.spec().enumerated {
		return nil, nil, false
	}
	s := rt.Shape
	nl, phys := s.LocalExperts(), s.Physical()
	l := rt.LL()
	type key struct{ src, dst, ch int32 }
	disp := map[key]*transport.Flow{}
	comb := map[key]*transport.Flow{}
	flow := func(m map[key]*transport.Flow, src, dst, ch int32) *transport.Flow {
		k := key{src, dst, ch}
		f := m[k]
		if f == nil {
			f = &transport.Flow{Src: src, Dst: dst, Channel: ch}
			m[k] = f
		}
		return f
	}
	db, cb := int64(s.LLDispatchBytes()), int64(s.LLCombineBytes())
	for src := range s.Ranks {
		for _, m := range l.From(src) {
			if int(m.DstRank) == src {
				continue
			}
			f := flow(disp, int32(src), m.DstRank, m.LocalExpert)
			f.Writes++
			f.Bytes += db
			f = flow(comb, m.DstRank, int32(src), m.LocalExpert)
			f.Writes++
			f.Bytes += cb
		}
		// Every rank counts every expert, and every expert flags every
		// rank, empty or not.
		for ex := range phys {
			dst, le := ex/nl, ex%nl
			if dst == src {
				continue
			}
			flow(disp, int32(src), int32(dst), int32(le)).Atomics++
			flow(comb, int32(dst), int32(src), int32(le)).Atomics++
		}
	}
	mk := func(m map[key]*transport.Flow) *transport.Demand {
		d := &transport.Demand{Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, NVLDomain: s.DomainGPUs(), NVLink: nvlink, Channels: nl,
			Exact: bg.CTAs == 0, Flows: make([]transport.Flow, 0, len(m))}
		for _, f := range m {
			d.Flows = append(d.Flows, *f)
		}
		slices.SortFunc(d.Flows, func(a, b transport.Flow) int {
			if a.Src != b.Src {
				return int(a.Src - b.Src)
			}
			if a.Dst != b.Dst {
				return int(a.Dst - b.Dst)
			}
			return int(a.Channel - b.Channel)
		})
		return d
	}
	return mk(disp), mk(comb), true
}
