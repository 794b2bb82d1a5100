package srd

import (
	"strings"
	"testing"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// runConn posts each warp's list of ops one after another on a fresh
// conn of cfg over prof, and returns the deliveries in order.
func runConn(t *testing.T, cfg Config, prof *profile.Profile, ranks, perNode int, ops [][]transport.Op) []transport.Delivery {
	t.Helper()
	e := &sim.Engine{}
	var got []transport.Delivery
	env := &transport.Env{E: e, Profile: prof, Ranks: ranks, GPUsPerNode: perNode,
		Delivered: func(_ *sim.Engine, d transport.Delivery) { got = append(got, d) }}
	cn, err := Transport{cfg: cfg, name: "test"}.Open(env)
	if err != nil {
		t.Fatal(err)
	}
	gpu := hw.NewGPUCosts(prof)
	sms := make([]hw.SM, len(ops))
	for i, list := range ops {
		sms[i].Lanes = 1
		k := 0
		w := &transport.Warp{Rank: int32(list[0].Src), T: hw.NewThread(&gpu, &sms[i])}
		var post sim.HandlerID
		w.Resume = func(e *sim.Engine, w *transport.Warp) {
			if k < len(list) {
				e.At(w.T.T, post, 0, 0)
			}
		}
		post = e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) {
			op := list[k]
			k++
			cn.Post(e, w, op)
		}))
		e.At(0, post, 0, 0)
	}
	e.Run()
	return got
}

// twoTier is P-B200-EFA on a leaf/spine fabric small enough that its
// ranks cross spines, where packets spray.
func twoTier(t *testing.T) *profile.Profile {
	t.Helper()
	prof := profile.MustLoad("p-b200-efa")
	for name, v := range map[string]float64{"topo.tiers": 2, "topo.leaf_radix": 4} {
		if err := prof.SetValue(name, v, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return prof
}

// Every count or flag is observed only after every write posted before it
// on its flow (source, destination, channel) is visible: the datagram
// queues let an 8 B write overtake a large one (hw's datagram test), so
// it is the conn's hold that keeps the order, for both posting styles.
// Each flow's writes are large (up to 768 KiB, read by DMA) and differ in
// size, so that the flag's post comes while they are still being read.
func TestFlagNeverBeforeItsData(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Style: GPU, QPsPerNIC: 1},
		{Style: Proxy, QPsPerNIC: 1, Workers: 2, Rings: 4},
	} {
		t.Run(cfg.Style.String(), func(t *testing.T) {
			t.Parallel()
			const ranks = 8
			var ops [][]transport.Op
			tag := int64(0)
			for src := range ranks {
				for ch := range 2 {
					var list []transport.Op
					for d := 1; d < ranks; d++ {
						dst := (src + d) % ranks
						for j := range 3 {
							tag++
							list = append(list, transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: (3 - j) * 256 << 10, Tag: tag})
						}
						tag++
						list = append(list, transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: 8, Atomic: true, Flush: true, Tag: tag})
					}
					ops = append(ops, list)
				}
			}
			got := runConn(t, cfg, twoTier(t), ranks, 1, ops)
			if len(got) != int(tag) {
				t.Fatalf("%d deliveries of %d ops", len(got), tag)
			}
			type flowKey struct{ src, dst, ch int }
			lastData := map[flowKey]sim.Time{}
			flagAt := map[flowKey]sim.Time{}
			for _, d := range got {
				k := flowKey{d.Op.Src, d.Op.Dst, d.Op.Channel}
				if d.Op.Atomic {
					flagAt[k] = d.Times.Visible
					continue
				}
				lastData[k] = max(lastData[k], d.Times.Visible)
			}
			for k, f := range flagAt {
				if f < lastData[k] {
					t.Errorf("flow %v: flag visible at %v, before its last write at %v", k, f, lastData[k])
				}
			}
			if len(flagAt) != ranks*(ranks-1)*2 {
				t.Errorf("%d flags delivered, want %d", len(flagAt), ranks*(ranks-1)*2)
			}
		})
	}
}

// A profile without EFA is refused by name.
func TestOpenRefusesHostWithoutEFA(t *testing.T) {
	t.Parallel()
	env := &transport.Env{E: &sim.Engine{}, Profile: profile.MustLoad("p-ib"), Ranks: 2, GPUsPerNode: 1}
	_, err := Transport{cfg: Config{Style: GPU, QPsPerNIC: 1}, name: "x"}.Open(env)
	if err == nil || !strings.Contains(err.Error(), "efa.generation") {
		t.Fatalf("Open on p-ib: %v, want a refusal naming efa.generation", err)
	}
}

// The estimate's floor is never above a run of the same demand, and its
// resources are what the run reports.
func TestEstimateFloorsTheRun(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Style: GPU, QPsPerNIC: 1},
		{Style: GPU, QPsPerNIC: 4},
		{Style: Proxy, QPsPerNIC: 1, Workers: 1, Rings: 1},
		{Style: Proxy, QPsPerNIC: 2, Workers: 4, Rings: 8},
	} {
		const ranks = 8
		var ops [][]transport.Op
		var flows []transport.Flow
		for src := range ranks {
			for ch := range 4 {
				var list []transport.Op
				for d := 1; d < ranks; d++ {
					dst := (src + d) % ranks
					for range 4 {
						list = append(list, transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: 7 << 10})
					}
					list = append(list, transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: 8, Atomic: true, Flush: true})
					flows = append(flows, transport.Flow{Src: int32(src), Dst: int32(dst), Channel: int32(ch), Writes: 4, Atomics: 1, Bytes: 4 * 7 << 10})
				}
				ops = append(ops, list)
			}
		}
		prof := twoTier(t)
		got := runConn(t, cfg, prof, ranks, 1, ops)
		var last sim.Time
		for _, d := range got {
			last = max(last, d.Times.Visible)
		}
		d := &transport.Demand{Ranks: ranks, GPUsPerNode: 1, Channels: 4, Flows: flows, Exact: true}
		est, err := Transport{cfg: cfg, name: "test"}.Estimate(d, prof)
		if err != nil {
			t.Fatal(err)
		}
		if est.Floor <= 0 || est.Floor > last {
			t.Errorf("%+v: floor %v (%s), want in (0, the run's %v]", cfg, est.Floor, est.FloorBy, last)
		}
		if cfg.Workers == 1 && est.FloorBy != "proxy worker" {
			t.Errorf("%+v: floor set by %q, want the one proxy worker", cfg, est.FloorBy)
		}
		if n := est.Resources.Own[AHResource]; n != ranks-1 {
			t.Errorf("%+v: %d address handles a device, want %d (every peer)", cfg, n, ranks-1)
		}
		if est.Resources.QPsPerNIC != cfg.QPsPerNIC {
			t.Errorf("%+v: %d QPs a device, want %d", cfg, est.Resources.QPsPerNIC, cfg.QPsPerNIC)
		}
	}
}

// A flag waits for the writes posted before it on its flow, not for those
// posted after: a warp that keeps writing on the channel (a background
// sharing it) must not hold the flag back. One warp posts a small write,
// the flag, then a 4 MiB write on the same flow; the flag is delivered
// long before the large write that follows it.
func TestFlagWaitsOnlyForWritesBeforeIt(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Style: GPU, QPsPerNIC: 1},
		{Style: Proxy, QPsPerNIC: 1, Workers: 1, Rings: 1},
	} {
		t.Run(cfg.Style.String(), func(t *testing.T) {
			t.Parallel()
			ops := [][]transport.Op{{
				{Src: 0, Dst: 1, Bytes: 64, Tag: 1},
				{Src: 0, Dst: 1, Bytes: 8, Atomic: true, Tag: 2},
				{Src: 0, Dst: 1, Bytes: 4 << 20, Tag: 3},
			}}
			got := runConn(t, cfg, profile.MustLoad("p-b200-efa"), 2, 1, ops)
			at := map[int64]sim.Time{}
			for _, d := range got {
				at[d.Op.Tag] = d.Times.Visible
			}
			if len(at) != 3 {
				t.Fatalf("%d of 3 ops delivered", len(at))
			}
			// 4 MiB at 400 Gb/s is about 84 µs on the wire alone.
			if at[2] < at[1] || at[2] >= at[3] || at[3]-at[2] < sim.Ns(50_000) {
				t.Errorf("write %v, flag %v, later write %v: the flag must follow the first write only", at[1], at[2], at[3])
			}
		})
	}
}
