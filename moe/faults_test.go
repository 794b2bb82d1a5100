package moe_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"moebench/fault"
	"moebench/moe"
	"moebench/sim"
	"moebench/transport"
	"moebench/transport/preset"
)

// A rank whose kernels take twice as long slows the layer by what its
// kernel work on its own critical path took in the healthy run: in LL
// combine that is its grid sync and its top-k reduction, the last steps
// before it is ready, so it ends (f − 1) × their healthy time later, is
// the layer's slowest rank, and its breakdown holds the extra time in
// those causes. In dispatch its receive copy doubles the same way.
func TestSlowRankSlowsTheLayerByItsKernelCauses(t *testing.T) {
	t.Parallel()
	const slow = 5
	// Timings are whole picoseconds; a scaled cost rounds down by at most
	// one per step, far below this.
	const tol = 1e-3 // µs
	s := layerShape(16, 8, 64, 128, 2048)
	for _, f := range []float64{2, 3} {
		cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
		healthy, err := moe.RunLayer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Faults = &fault.Plan{Seed: 1, Slow: []fault.Slow{{Rank: slow, Factor: f}}}
		res, err := moe.RunLayer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Correct {
			t.Fatalf("slow rank: %v", res.Problems)
		}
		us := func(t sim.Time) float64 { return t.Us() }

		// Combine: the slow rank's sync and reduction take f times as long.
		h, g := healthy.Combine.Ranks[slow], res.Combine.Ranks[slow]
		kernel := h.Breakdown[moe.CauseSync] + h.Breakdown[moe.CauseReduce]
		want := us(h.Ready) + (f-1)*kernel
		if math.Abs(us(g.Ready)-want) > tol {
			t.Errorf("x%v: combine: the slow rank is ready at %.4f µs, want %.4f + (%v − 1) × %.4f = %.4f µs",
				f, us(g.Ready), us(h.Ready), f, kernel, want)
		}
		if got := g.Breakdown[moe.CauseSync] + g.Breakdown[moe.CauseReduce] - kernel; math.Abs(got-(us(g.Ready)-us(h.Ready))) > tol {
			t.Errorf("x%v: combine: the breakdown gives the slow rank's sync and reduction %.4f µs more, it is ready %.4f µs later",
				f, got, us(g.Ready)-us(h.Ready))
		}
		// The layer's combine ends when its slowest rank is ready: the
		// slow rank, once its extra time passes the healthy slowest.
		if want > healthy.Combine.Time.Max {
			if got := res.Combine.Time.Max; math.Abs(got-want) > tol {
				t.Errorf("x%v: combine takes %.4f µs, want the slow rank's %.4f µs (healthy %.4f)", f, got, want, healthy.Combine.Time.Max)
			}
		} else {
			t.Errorf("x%v: the slow rank's %.4f µs stays under the healthy slowest %.4f: the shape no longer tests it", f, want, healthy.Combine.Time.Max)
		}

		// Dispatch: the slow rank's receive copies take f times as long.
		h, g = healthy.Dispatch.Ranks[slow], res.Dispatch.Ranks[slow]
		if want := h.Breakdown[moe.CauseCopy] * f; math.Abs(g.Breakdown[moe.CauseCopy]-want) > tol {
			t.Errorf("x%v: dispatch: the slow rank's copy is %.4f µs, want %v × %.4f", f, g.Breakdown[moe.CauseCopy], f, h.Breakdown[moe.CauseCopy])
		}
		if want := us(h.Ready) + (f-1)*h.Breakdown[moe.CauseCopy]; math.Abs(us(g.Ready)-want) > tol {
			t.Errorf("x%v: dispatch: the slow rank is ready at %.4f µs, want %.4f", f, us(g.Ready), want)
		}
		// A healthy rank's own kernel work is its own: rank 0 reduces as
		// fast as before.
		if a, b := healthy.Combine.Ranks[0].Breakdown[moe.CauseReduce], res.Combine.Ranks[0].Breakdown[moe.CauseReduce]; a != b {
			t.Errorf("x%v: rank 0's reduction went from %v to %v µs", f, a, b)
		}
	}
}

// failing wraps a transport: the Open numbered phase (1 the first) loses
// its post numbered after+1, and reports its queue in error.
type failing struct {
	transport.Transport
	phase, after int
	opens        atomic.Int32
}

// CarriesNVLink is the wrapped transport's, so that the layer takes the
// same paths through the wrapper.
func (f *failing) CarriesNVLink() bool {
	c, ok := f.Transport.(moe.NVLinkCarrier)
	return ok && c.CarriesNVLink()
}

func (f *failing) Open(env *transport.Env) (transport.Conn, error) {
	c, err := f.Transport.Open(env)
	if int(f.opens.Add(1)) != f.phase || err != nil {
		return c, err
	}
	return &failConn{Conn: c, env: env, left: f.after}, nil
}

type failConn struct {
	transport.Conn
	env  *transport.Env
	left int
}

func (c *failConn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	if c.left == 0 {
		c.left = -1
		c.env.Fail(&fault.Failure{Mechanism: "test", Rank: op.Src, Peer: op.Dst, QP: op.Channel, At: e.Now(),
			Retries: 7, Status: "IBV_WC_RETRY_EXC_ERR", Reason: "the test's queue"})
		return // lost: its warp never resumes
	}
	c.left--
	c.Conn.Post(e, w, op)
}

// A phase whose transport fails stops at the failure: the result names
// the phase and the failure, every rank not ready counts as ready then,
// the checks pass over what was never delivered, and the other phase runs
// as it would have.
func TestFailedPhaseStopsAndSaysWhy(t *testing.T) {
	t.Parallel()
	// Normal mode opens a transport for its notify step first, whose
	// failure fails dispatch before it launches.
	for _, tc := range []struct {
		name, phaseName string
		mode            moe.Mode
		perNode         int
		phase           int // the Open that fails
	}{
		{"ll dispatch", "dispatch", moe.LL, 4, 1}, {"ll combine", "combine", moe.LL, 4, 2},
		{"normal notify", "dispatch", moe.Normal, 8, 1}, {"normal dispatch", "dispatch", moe.Normal, 8, 2}, {"normal combine", "combine", moe.Normal, 8, 3},
		{"internode notify", "dispatch", moe.Normal, 4, 1}, {"internode dispatch", "dispatch", moe.Normal, 4, 2}, {"internode combine", "combine", moe.Normal, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := layerShape(8, tc.perNode, 32, 24, 1024)
			nvlink := tc.mode == moe.Normal
			healthy := runLayer(t, s, tc.mode, "mini-gda", preset.Options{}, moe.Background{}, nvlink)
			cfg := layerConfig(t, s, tc.mode, "mini-gda", preset.Options{}, moe.Background{}, nvlink)
			after := 100
			if tc.name == "normal notify" || tc.name == "internode notify" {
				after = 3 // its handful of count messages
			}
			tr := &failing{Transport: cfg.Transport, phase: tc.phase, after: after}
			cfg.Transport, cfg.InTurn = tr, true // in turn: dispatch opens first
			// A rank slowed by 1 is a plan that changes no timing.
			cfg.Faults = &fault.Plan{Slow: []fault.Slow{{Rank: 0, Factor: 1}}}
			res, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			phase, f := res.Failed()
			if phase != tc.phaseName || f == nil || f.Status != "IBV_WC_RETRY_EXC_ERR" || !errors.Is(f, fault.ErrFailed) {
				t.Fatalf("failed: %q %v, want %s with the test's failure", phase, f, tc.phaseName)
			}
			if !res.Correct {
				t.Errorf("the checks count what the failure left undelivered: %v", res.Problems)
			}
			failed, other := &res.Dispatch, &res.Combine
			hOther := &healthy.Combine
			if tc.phaseName == "combine" {
				failed, other, hOther = &res.Combine, &res.Dispatch, &healthy.Dispatch
			}
			if other.Failure != nil || other.Time != hOther.Time {
				t.Errorf("the other phase: %v, %+v; want no failure and the healthy %+v", other.Failure, other.Time, hOther.Time)
			}
			// The failing post came before any rank could be ready, so
			// every rank stops at it.
			if at := f.At.Us(); failed.Time.Max != at || failed.Time.Min != at {
				t.Errorf("failed phase's ranks ready from %v to %v µs, want all at the failure, %v µs", failed.Time.Min, failed.Time.Max, at)
			}
		})
	}
}

// A flap is on the layer's clock: combine starts when dispatch's slowest
// rank is ready. A flap when combine's own time has passed its healthy
// end, but the layer's has not, leaves dispatch as it was and holds
// combine (on combine's own clock it would miss it); one over dispatch's
// start holds dispatch.
func TestFlapIsOnTheLayersClock(t *testing.T) {
	t.Parallel()
	s := layerShape(8, 4, 32, 16, 1024)
	cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	healthy, err := moe.RunLayer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if healthy.Combine.Time.Max <= healthy.Dispatch.Time.Max {
		t.Fatalf("combine (%v µs) no longer outlasts dispatch (%v µs): the test cannot tell the clocks apart", healthy.Combine.Time.Max, healthy.Dispatch.Time.Max)
	}
	cEnd := sim.Time(healthy.Combine.Time.Max * float64(sim.Microsecond))
	for _, tc := range []struct {
		name        string
		down        sim.Time
		dispatchHit bool
	}{{"after combine's own end", cEnd + sim.Microsecond, false}, {"at the start", 0, true}} {
		cfg.Faults = &fault.Plan{Seed: 1, Links: []fault.Link{{Rank: 3, Factor: 1, Down: tc.down, Up: tc.down + 20*sim.Microsecond}}}
		res, err := moe.RunLayer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if hit := res.Dispatch.Time != healthy.Dispatch.Time; hit != tc.dispatchHit {
			t.Errorf("%s: dispatch %+v, healthy %+v: want changed %v", tc.name, res.Dispatch.Time, healthy.Dispatch.Time, tc.dispatchHit)
		}
		if !tc.dispatchHit && res.Combine.Failure == nil && res.Combine.Time.Max <= healthy.Combine.Time.Max {
			t.Errorf("%s: combine takes %v µs, healthy %v: the flap did not reach it", tc.name, res.Combine.Time.Max, healthy.Combine.Time.Max)
		}
	}
}

// Every mode applies a slow rank: the layer stays correct, and the slow
// rank's own kernel work on its critical path (copies, syncs,
// reductions) takes longer in the phase that ends in it.
func TestSlowRankInEveryMode(t *testing.T) {
	t.Parallel()
	const slow = 5
	for _, tc := range []struct {
		name    string
		mode    moe.Mode
		perNode int
	}{{"ll", moe.LL, 8}, {"normal one node", moe.Normal, 16}, {"normal across nodes", moe.Normal, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := layerConfig(t, layerShape(16, tc.perNode, 64, 64, 2048), tc.mode, "mini-gda", preset.Options{}, moe.Background{}, tc.mode == moe.Normal)
			healthy, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Faults = &fault.Plan{Seed: 1, Slow: []fault.Slow{{Rank: slow, Factor: 2}}}
			res, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Correct {
				t.Fatalf("%d problems: %v", res.ProblemCount, res.Problems)
			}
			own := func(b moe.Breakdown) float64 { return b[moe.CauseCopy] + b[moe.CauseSync] + b[moe.CauseReduce] }
			h, g := healthy.Combine.Ranks[slow], res.Combine.Ranks[slow]
			if own(g.Breakdown) <= own(h.Breakdown) || g.Ready <= h.Ready {
				t.Errorf("combine: the slow rank's own kernel work %.3f µs (healthy %.3f), ready at %v (healthy %v): want both later",
					own(g.Breakdown), own(h.Breakdown), g.Ready, h.Ready)
			}
		})
	}
}
