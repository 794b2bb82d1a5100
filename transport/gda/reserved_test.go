package gda

import (
	"maps"
	"testing"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// openBuilt builds mechanism mech's transport from cfg with settings s and
// needs n, posts each op from a warp of its own, and returns the
// deliveries and the conn's resources.
func openBuilt(t *testing.T, mech string, cfg Config, s transport.Settings, n transport.Needs, ranks int, ops []transport.Op) ([]transport.Delivery, transport.Resources, transport.Transport) {
	t.Helper()
	m, err := transport.Lookup(mech)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := m.Build(cfg, mech, s, n)
	if err != nil {
		t.Fatal(err)
	}
	e := &sim.Engine{}
	var got []transport.Delivery
	env := &transport.Env{E: e, Profile: profile.MustLoad("p-ib"), Ranks: ranks, GPUsPerNode: 1,
		Delivered: func(_ *sim.Engine, d transport.Delivery) { got = append(got, d) }}
	cn, err := tr.Open(env)
	if err != nil {
		t.Fatal(err)
	}
	gpu := hw.NewGPUCosts(env.Profile)
	sms := make([]hw.SM, len(ops))
	for i, op := range ops {
		sms[i].Lanes = 1
		w := &transport.Warp{Rank: int32(op.Src), ID: int32(i), T: hw.NewThread(&gpu, &sms[i]), Resume: func(*sim.Engine, *transport.Warp) {}}
		post := e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) { cn.Post(e, w, op) }))
		e.At(0, post, 0, 0)
	}
	e.Run()
	return got, cn.Resources(), tr
}

// Reserved background gets queues of its own on top of what the layer
// has: the knob the user set (or the preset's choice) still says what
// the layer's own traffic gets, under RC and DC alike, and the reserved
// ones are counted apart.
func TestReservedQueuesComeOnTopOfTheLayers(t *testing.T) {
	t.Parallel()
	const ranks, channels = 4, 16
	perChannel := DefaultConfig()
	perChannel.PerChannelQPs = true
	dc := DefaultConfig()
	dc.DCIs, dc.DCTs = 16, 1
	for _, c := range []struct {
		name     string
		mech     string
		cfg      Config
		s        transport.Settings
		reserved int
		qps      int // QPs per NIC in all
		dcis     int
		own      map[string]int
	}{
		{name: "rc qps=1, none reserved", mech: "mini-gda", cfg: DefaultConfig(), s: transport.Settings{"qps-per-peer": "1"},
			qps: ranks},
		{name: "rc qps=1 +1 reserved", mech: "mini-gda", cfg: DefaultConfig(), s: transport.Settings{"qps-per-peer": "1"}, reserved: 1,
			qps: ranks * 2, own: map[string]int{ReservedResource: ranks}},
		{name: "rc qps=4 +2 reserved", mech: "mini-gda", cfg: DefaultConfig(), s: transport.Settings{"qps-per-peer": "4"}, reserved: 2,
			qps: ranks * 6, own: map[string]int{ReservedResource: 2 * ranks}},
		{name: "rc per channel +1 reserved", mech: "mini-gda", cfg: perChannel, reserved: 1,
			qps: ranks * (channels + 1), own: map[string]int{ReservedResource: ranks}},
		{name: "dc 16 DCIs, none reserved", mech: "dc", cfg: dc, qps: 16, dcis: 16},
		{name: "dc 16 DCIs +1 reserved", mech: "dc", cfg: dc, reserved: 1, qps: 17, dcis: 17, own: map[string]int{ReservedResource: 1}},
		{name: "dc dcis=2 +3 reserved", mech: "dc", cfg: dc, s: transport.Settings{"dcis": "2"}, reserved: 3, qps: 5, dcis: 5,
			own: map[string]int{ReservedResource: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			op := transport.Op{Src: 0, Dst: 1, Channel: 0, Bytes: 8, Tag: 1}
			_, res, _ := openBuilt(t, c.mech, c.cfg, c.s, transport.Needs{Channels: channels, Reserved: c.reserved}, ranks, []transport.Op{op})
			got := [2]int{res.QPsPerNIC, res.Own[DCIsResource]}
			if want := [2]int{c.qps, c.dcis}; got != want {
				t.Errorf("QPs and DCIs per NIC %v, want %v", got, want)
			}
			own := maps.Clone(c.own)
			if c.dcis > 0 {
				own = withOwn(own, DCIsResource, c.dcis)
			}
			if !maps.Equal(res.Own, own) {
				t.Errorf("own resources %v, want %v", res.Own, own)
			}
		})
	}
}

// Reserved background on DC goes through a DCI of its own: a layer write
// and a background write to another peer, posted together, neither
// re-targets a DCI (on one shared DCI the second would), and the
// estimate counts the queues a run reports.
func TestDCReservedBackgroundHasADCIOfItsOwn(t *testing.T) {
	t.Parallel()
	const ranks, channels = 4, 16
	dc := DefaultConfig()
	dc.DCIs, dc.DCTs = 16, 1
	for _, c := range []struct {
		name     string
		reserved int
		switches int
	}{
		{"shared: the background's channel lands on the layer's DCI", 0, 1},
		{"reserved: a DCI of its own", 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The background posts past the layer's channels when
			// reserved, on a layer channel when shared (as moe does).
			bgCh := 0
			if c.reserved > 0 {
				bgCh = channels
			}
			ops := []transport.Op{{Src: 0, Dst: 1, Channel: 0, Bytes: 8, Tag: 1}, {Src: 0, Dst: 2, Channel: bgCh, Bytes: 8, Tag: 2}}
			n := transport.Needs{Channels: channels, Reserved: c.reserved}
			got, res, tr := openBuilt(t, "dc", dc, nil, n, ranks, ops)
			if len(got) != len(ops) {
				t.Fatalf("%d deliveries, want %d", len(got), len(ops))
			}
			switches := 0
			for _, d := range got {
				if d.Times.Own[1] > 0 {
					switches++
				}
			}
			if switches != c.switches {
				t.Errorf("%d DCI re-targets, want %d", switches, c.switches)
			}
			d := &transport.Demand{Ranks: ranks, GPUsPerNode: 1, Channels: channels,
				Flows: []transport.Flow{{Src: 0, Dst: 1, Channel: 0, Writes: 1, Bytes: 8}}}
			est, err := tr.(transport.Estimator).Estimate(d, profile.MustLoad("p-ib"))
			if err != nil {
				t.Fatal(err)
			}
			if est.Resources.QPsPerNIC != res.QPsPerNIC ||
				!maps.Equal(est.Resources.Own, res.Own) {
				t.Errorf("estimate %+v, run %+v", est.Resources, res)
			}
		})
	}
}
