package hw

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"

	"moebench/sim"
)

// NICLoad is what one NIC carries in a phase, for floors computed without
// running the fabric.
type NICLoad struct {
	TxMsgs, RxMsgs int64
	// TxWire and RxWire are the link time of the messages sent and
	// received, headers included.
	TxWire, RxWire sim.Time
}

// AddMsg counts n messages carrying bytes in all from src to dst. Each
// message takes at least one packet; larger ones take more, so the link
// time counted is a floor whatever the sizes.
func (p *NICParams) AddMsg(loads []NICLoad, src, dst int, n, bytes int64) {
	if n <= 0 {
		return
	}
	w := sim.Time(math.Floor(float64(bytes+n*int64(p.PktOverhead)) / p.LinkBytesPerP))
	loads[src].TxMsgs += n
	loads[src].TxWire += w
	loads[dst].RxMsgs += n
	loads[dst].RxWire += w
}

// Tail is the least time from a message leaving its send queue to its
// payload being visible at the responder on an idle fabric: transmit,
// switch, receive and the write into memory.
func (p *NICParams) Tail() sim.Time { return p.Tx + p.Fabric + p.Rx + p.DMAWrite }

// Floor is a time no phase carrying loads beats on these NICs: every NIC's
// message pipeline (sends and receives share it), its egress link and its
// ingress port serialize their messages, and the last message still has
// to reach memory. A rank's load spreads at best evenly over its NICs'
// pipelines and its links (Topology.Links). It returns the floor and what
// sets it.
func (p *NICParams) Floor(loads []NICLoad) (sim.Time, string) {
	nics, links := sim.Time(p.Topo.NICs()), sim.Time(p.Topo.Links())
	var best sim.Time
	by := ""
	for _, l := range loads {
		if l.TxMsgs == 0 && l.RxMsgs == 0 {
			continue
		}
		for _, c := range []struct {
			t  sim.Time
			by string
		}{
			{(sim.Time(l.TxMsgs)*p.MsgSlot+sim.Time(l.RxMsgs)*p.RxSlot)/nics + p.Rx + p.DMAWrite, "msg_rate"},
			{l.TxWire/links + p.Tail(), "egress"},
			{l.RxWire/links + p.Tail(), "ingress"},
		} {
			if c.t > best {
				best, by = c.t, c.by
			}
		}
	}
	return best, by
}

// CtxFits reports whether a NIC whose context cache is built from entries
// and ways keeps every one of keys resident once loaded: no set receives
// more than ways distinct keys, so no access ever misses (see Touch).
func CtxFits(entries, ways int, keys []int32) bool {
	ways = max(1, ways)
	sets := uint32(ctxSets(entries, ways))
	per := make(map[int]int, len(keys))
	seen := make(map[int32]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		s := setOf(k, sets)
		per[s]++
		if per[s] > ways {
			return false
		}
	}
	return true
}

// CtxClass describes how a configuration loads the NICs' context caches:
// "" when every NIC keeps all of its keys resident (placement cannot
// matter), else a digest of each NIC's keys in the order the traffic
// first needs them, equal for configurations that present the caches
// with the same contexts.
func CtxClass(entries, ways int, keys [][]int32) string {
	fits := true
	for _, k := range keys {
		if !CtxFits(entries, ways, k) {
			fits = false
			break
		}
	}
	if fits {
		return ""
	}
	h := fnv.New64a()
	var b [4]byte
	for _, k := range keys {
		for _, x := range k {
			binary.LittleEndian.PutUint32(b[:], uint32(x))
			h.Write(b[:])
		}
		h.Write([]byte{0xff, 0xff, 0xff, 0xff, 0xfe})
	}
	return fmt.Sprintf(" contexts %016x", h.Sum64())
}
