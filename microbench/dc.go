package microbench

import (
	"fmt"
	"slices"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport/gda"
)

// DCRate runs DCIs initiators on one NIC, each sending Burst writes to one
// peer before moving to the next of Peers, InFlight bursts outstanding per
// DCI, and returns the NIC's M msg/s.
func DCRate(p *profile.Profile, dcis, peers, burst, total int) (float64, error) {
	if dcis < 1 || peers < 1 || burst < 1 {
		return 0, fmt.Errorf("dc: need at least one DCI, peer and write per burst")
	}
	e := &sim.Engine{}
	r := &dcRun{dcis: dcis, peers: peers, burst: burst, left: make([]int, dcis), next: make([]int, dcis)}
	r.fab = hw.NewFabric(e, hw.NewNICParams(p), peers+1, dcis, r)
	nic := r.fab.NICs[0]
	for q := range dcis {
		nic.DCI(q)
		r.left[q] = total / dcis / burst
		r.next[q] = q % peers
	}
	r.id = e.Register(r)
	for q := range dcis {
		for range 4 {
			e.At(0, r.id, 0, int64(q))
		}
	}
	e.Run()
	if len(r.sent) < 2 {
		return 0, fmt.Errorf("dc: nothing sent")
	}
	slices.Sort(r.sent)
	k := len(r.sent) / 4
	return float64(len(r.sent)-1-k) / (r.sent[len(r.sent)-1] - r.sent[k]).Us(), nil
}

type dcRun struct {
	dcis, peers, burst int
	fab                *hw.Fabric
	id                 sim.HandlerID
	left, next         []int
	sent               []sim.Time
}

func (r *dcRun) Delivered(*sim.Engine, *hw.NIC, int32, *hw.Msg) {}
func (r *dcRun) Completed(e *sim.Engine, nic *hw.NIC, id int32, m *hw.Msg) {
	r.sent = append(r.sent, nic.Times(id).Sent)
	if m.Tag == 1 {
		r.Handle(e, 0, int64(m.QP))
	}
}

func (r *dcRun) Handle(e *sim.Engine, _ int32, arg int64) {
	q := int(arg)
	if r.left[q] == 0 {
		return
	}
	r.left[q]--
	dst := 1 + r.next[q]
	r.next[q] = (r.next[q] + 1) % r.peers
	lay := gda.WriteLayout(8, true, 16)
	nic := r.fab.NICs[0]
	for i := range r.burst {
		m := hw.Msg{Dst: int32(dst), Bytes: 8, BBs: int32(lay.BBs), DC: true}
		if i == r.burst-1 {
			m.Tag = 1
		}
		nic.Post(q, m)
	}
	nic.Ring(e, e.Now(), q, 0)
}

// dc reproduces the DC figures: per-operation cost against RC and the
// price of re-targeting a DCI on every WQE.
func dc(p *profile.Profile) ([]Row, error) {
	rc, err := gda.SingleOp(p, gda.SingleConfig{Ordering: gda.OrderGPUFence, Payload: 8, Inline: true})
	if err != nil {
		return nil, err
	}
	d, err := gda.SingleOp(p, gda.SingleConfig{Ordering: gda.OrderGPUFence, Payload: 8, Inline: true, DC: true})
	if err != nil {
		return nil, err
	}
	rows := []Row{
		{"dc", "mini-gda, 8 B inline", "DC put+completion", "µs", nan, d.PutC.Us(), ""},
		{"dc", "mini-gda, 8 B inline", "DC put+completion above RC", "µs", 0.45, (d.PutC - rc.PutC).Us(), "§4.3.3"},
	}
	rates := map[int]float64{}
	for _, b := range []int{1, 4, 16, 64, 256} {
		v, err := DCRate(p, 16, 31, b, 16*b*max(8, 256/b))
		if err != nil {
			return nil, err
		}
		rates[b] = v
		rows = append(rows, Row{"dc", fmt.Sprintf("16 DCIs, 31 peers, %d writes per destination", b), "message rate", "M msg/s", nan, v, ""})
	}
	rows = append(rows, Row{"dc", "16 DCIs: 256-write bursts vs a new destination every WQE", "rate ratio", "x", 60, rates[256] / rates[1], "§4.3.3 (P-H100)"})
	// §4.3.3: with 256-write bursts DC keeps 95% of its two-peer rate at
	// 1,984 DCI-peer pairs and 23% at 2,976 (RC: 56% at 2,976, the
	// connections experiment). 16 DCIs × 124 and × 186 peers.
	two, err := DCRate(p, 16, 2, 256, 16*256*8)
	if err != nil {
		return nil, err
	}
	for _, k := range []struct {
		peers int
		paper float64
	}{{124, 0.95}, {186, 0.23}} {
		v, err := DCRate(p, 16, k.peers, 256, 16*256*k.peers)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{"dc", fmt.Sprintf("16 DCIs × %d peers (%d DCI-peer pairs), 256-write bursts", k.peers, 16*k.peers),
			"rate / two-peer rate", "ratio", k.paper, v / two, "§4.3.3"})
	}
	return rows, nil
}
