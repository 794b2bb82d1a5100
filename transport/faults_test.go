package transport_test

import (
	"maps"
	"strings"
	"testing"

	"moebench/fault"
	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
	"moebench/transport/gda"
	"moebench/transport/proxy"
	"moebench/transport/srd"
)

// mechCase is one mechanism under faults, on the profile it runs on.
type mechCase struct {
	name    string
	profile string
	build   func(t *testing.T) transport.Transport
	rc      bool // RC queues (go-back-N), not SRD
}

func mechanisms() []mechCase {
	dc := gda.DefaultConfig()
	dc.Name, dc.DCIs, dc.DCTs = "dc", 4, 1
	srdOf := func(c srd.Config) func(t *testing.T) transport.Transport {
		return func(t *testing.T) transport.Transport {
			m, err := transport.Lookup("srd")
			if err != nil {
				t.Fatal(err)
			}
			tr, err := m.Build(c, "srd", transport.Settings{}, transport.Needs{})
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}
	}
	return []mechCase{
		{"mini-gda", "p-ib", func(*testing.T) transport.Transport { return gda.DefaultConfig().Transport() }, true},
		{"dc", "p-ib", func(*testing.T) transport.Transport { return dc.Transport() }, true},
		{"mini-proxy", "p-ib", func(*testing.T) transport.Transport {
			return proxy.New(proxy.Config{Workers: 2, Rings: 4, Batch: 4, Handoff: proxy.Tuned, Completion: proxy.CompletionGPU})
		}, true},
		{"srd-gpu", "p-h100-efa", srdOf(srd.Config{Style: srd.GPU, QPsPerNIC: 2}), false},
		{"srd-proxy", "p-h100-efa", srdOf(srd.Config{Style: srd.Proxy, QPsPerNIC: 2, Workers: 2, Rings: 4}), false},
	}
}

// outcome is a run's deliveries (by tag) and the failures reported.
type outcome struct {
	at    map[int64]sim.Time
	fails []*fault.Failure
}

// runAllToAll runs ranks ranks, one a node, each with one warp posting
// msgs writes of bytes to every other rank in turn under plan.
func runAllToAll(t *testing.T, mc mechCase, ranks, msgs, bytes int, plan *fault.Plan, sets map[string]float64) outcome {
	t.Helper()
	prof := profile.MustLoad(mc.profile)
	for k, v := range sets {
		if err := prof.SetValue(k, v, "test"); err != nil {
			t.Fatal(err)
		}
	}
	e := &sim.Engine{}
	out := outcome{at: map[int64]sim.Time{}}
	env := &transport.Env{E: e, Profile: prof, Ranks: ranks, GPUsPerNode: 1, Faults: plan,
		Delivered: func(e *sim.Engine, d transport.Delivery) { out.at[d.Op.Tag] = e.Now() },
		Fail:      func(f *fault.Failure) { out.fails = append(out.fails, f) }}
	cn, err := mc.build(t).Open(env)
	if err != nil {
		t.Fatal(err)
	}
	gpu := hw.NewGPUCosts(prof)
	sms := make([]hw.SM, ranks)
	tag := int64(0)
	for src := range ranks {
		var ops []transport.Op
		for i := range msgs {
			for d := 1; d < ranks; d++ {
				tag++
				ops = append(ops, transport.Op{Src: src, Dst: (src + d) % ranks, Channel: i % 4, Bytes: bytes, Tag: tag, Flush: true})
			}
		}
		sms[src].Lanes = 1
		w := &transport.Warp{Rank: int32(src), T: hw.NewThread(&gpu, &sms[src])}
		k := 0
		var post sim.HandlerID
		w.Resume = func(e *sim.Engine, w *transport.Warp) {
			if k < len(ops) {
				e.At(w.T.T, post, 0, 0)
			}
		}
		post = e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) {
			op := ops[k]
			k++
			cn.Post(e, w, op)
		}))
		e.At(0, post, 0, 0)
	}
	e.Run()
	return out
}

func last(m map[int64]sim.Time) sim.Time {
	var t sim.Time
	for _, v := range m {
		t = max(t, v)
	}
	return t
}

// Every mechanism under a plan: nothing lost and no link slowed leaves
// each delivery where it was; the same seed gives the same run; 30% loss
// a crossing fails an RC mechanism with the queue named, as ibverbs
// reports it, while SRD delivers everything late.
func TestMechanismsUnderLoss(t *testing.T) {
	t.Parallel()
	const ranks, msgs, bytes = 6, 6, 7168
	for _, mc := range mechanisms() {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			healthy := runAllToAll(t, mc, ranks, msgs, bytes, nil, nil)
			if len(healthy.at) != ranks*(ranks-1)*msgs {
				t.Fatalf("healthy: %d deliveries of %d", len(healthy.at), ranks*(ranks-1)*msgs)
			}
			harmless := runAllToAll(t, mc, ranks, msgs, bytes, &fault.Plan{Seed: 2, Slow: []fault.Slow{{Rank: 1, Factor: 3}}}, nil)
			if !maps.Equal(healthy.at, harmless.at) {
				t.Fatal("a plan without fabric faults moved deliveries")
			}
			lossy := &fault.Plan{Seed: 2, Loss: [fault.NumClasses]float64{0.01, 0.01}}
			a := runAllToAll(t, mc, ranks, msgs, bytes, lossy, nil)
			b := runAllToAll(t, mc, ranks, msgs, bytes, lossy, nil)
			if !maps.Equal(a.at, b.at) || len(a.fails) != len(b.fails) {
				t.Fatal("the same seed gave two runs")
			}
			high := runAllToAll(t, mc, ranks, 24, bytes, &fault.Plan{Seed: 5, Loss: [fault.NumClasses]float64{0.3, 0.3}}, nil)
			if mc.rc {
				if len(high.fails) != 1 {
					t.Fatalf("30%% loss: %d failures, want 1", len(high.fails))
				}
				f := high.fails[0]
				if f.Mechanism != mc.build(t).Name() || f.Status != hw.StatusRetryExceeded || f.Retries != 7 || f.Rank == f.Peer {
					t.Errorf("failure %v, want %s's queue with %s after 7 retries", f, mc.build(t).Name(), hw.StatusRetryExceeded)
				}
				if !strings.Contains(f.Error(), hw.StatusRetryExceeded) {
					t.Errorf("failure text %q does not name the status", f.Error())
				}
				return
			}
			if len(high.fails) > 0 {
				t.Fatalf("SRD failed at 30%% loss: %v", high.fails[0])
			}
			if len(high.at) != ranks*(ranks-1)*24 {
				t.Fatalf("SRD at 30%% loss delivered %d of %d", len(high.at), ranks*(ranks-1)*24)
			}
			if rto := sim.Ns(profile.MustLoad(mc.profile).Get("efa.rto_us") * 1000); last(high.at) < rto {
				t.Errorf("SRD at 30%% loss done at %v, before one retransmission timeout %v", last(high.at), rto)
			}
		})
	}
}

// Rank 0's links down for 500 µs, against RC retries that span about
// 4 × 70 µs (timeout field 4, retry count 3): a GPU-driven RC queue to or
// from rank 0 goes into error; a proxy that resets a queue in error once
// (a millisecond) and posts again gets everything through, after the
// flap; SRD retransmits until the link is back.
func TestFlapAgainstRecovery(t *testing.T) {
	t.Parallel()
	flap := &fault.Plan{Seed: 1, Links: []fault.Link{{Rank: 0, Factor: 1, Down: 0, Up: 500 * sim.Microsecond}}}
	short := map[string]float64{"nic.ack_timeout": 4, "nic.retry_cnt": 3, "proxy.qp_resets": 1, "proxy.qp_reset_us": 1000}
	for _, mc := range mechanisms() {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			got := runAllToAll(t, mc, 4, 2, 7168, flap, short)
			if mc.rc && mc.name != "mini-proxy" {
				if len(got.fails) != 1 {
					t.Fatalf("%d failures, want 1", len(got.fails))
				}
				f := got.fails[0]
				if (f.Rank != 0 && f.Peer != 0) || f.Retries != 3 || f.At < 4*hw.AckTimeout(4) {
					t.Errorf("failure %v, want a queue from or to rank 0 after 3 retries, past 4 timeouts", f)
				}
				return
			}
			if len(got.fails) > 0 {
				t.Fatalf("failed: %v", got.fails[0])
			}
			if len(got.at) != 4*3*2 {
				t.Fatalf("%d deliveries of %d", len(got.at), 4*3*2)
			}
			if l := last(got.at); l < 500*sim.Microsecond {
				t.Errorf("everything delivered by %v, before the link came back", l)
			}
			if mc.name == "mini-proxy" && last(got.at) < 1000*sim.Microsecond {
				t.Errorf("the proxy delivered everything by %v, before its QP reset could end", last(got.at))
			}
		})
	}
}
