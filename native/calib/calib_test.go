package calib_test

import (
	"errors"
	"testing"

	"moebench/microbench"
	"moebench/native"
	"moebench/native/calib"
	"moebench/native/calib/calibtest"
)

func TestMeasure(t *testing.T) {
	for _, quick := range []bool{false, true} {
		r := &calibtest.H200{}
		var steps []string
		m, err := calib.Measure(r, calib.Options{Iters: 100, Quick: quick}, func(s string) { steps = append(steps, s) })
		if err != nil {
			t.Fatal(err)
		}
		// Seven orderings on two targets, no doorbell, six EFA orderings
		// with mlx5's pointer payload beside them, EFA on two targets and
		// without a doorbell, the inline sweep two ways.
		issues := 2*len(native.OrderingModes) + 1 + 3*len(native.EFAOrderingModes) + 1 + 2*len(calib.InlineSizes)
		if r.Issues != issues {
			t.Errorf("quick %v: %d issue measurements, want %d", quick, r.Issues, issues)
		}
		if m.WQEsVerified != 28 || m.EFAWQEsVerified != 33 || len(m.IssueNs) != len(native.OrderingModes) || len(m.InlineIssueNs) != len(calib.InlineSizes) {
			t.Fatalf("measured %+v", m)
		}
		if m.EFAIssueNs["fence-sys"] != 770 || m.EFAIssueNoDoorbellNs != 119 || m.PointerIssueNs["fence-sys"] != 767 || len(m.EFAIssueDeviceDoorbellNs) != 6 {
			t.Errorf("EFA %v / %v / %v, no doorbell %v", m.EFAIssueNs, m.EFAIssueDeviceDoorbellNs, m.PointerIssueNs, m.EFAIssueNoDoorbellNs)
		}
		if m.ClockMHz != 1980 || m.InlineIssueNs[220] != 547+13*99 || m.EnqueueNs["tuned"] != 36 {
			t.Errorf("clock %v, 220 B inline %v, tuned enqueue %v", m.ClockMHz, m.InlineIssueNs[220], m.EnqueueNs["tuned"])
		}
		// Table 5's rows and four of them with the doorbell in device
		// memory; quick: three rows, two of whose indices (0, 2) are
		// among the four.
		rates, caps := len(microbench.Table5())+4, 12
		if quick {
			rates, caps = 3+2, 2
		}
		// The device, the WQE check, then eight steps.
		if len(m.Rates) != rates || len(m.WorkerCapacity) != caps || len(steps) != 10 {
			t.Errorf("quick %v: %d rates, %d capacity points, %d steps", quick, len(m.Rates), len(m.WorkerCapacity), len(steps))
		}
		// A waiting proxy kernel loses (1 - 2/2.4) of its time.
		for _, k := range m.KernelCost {
			if k.Wait && (k.LossPct < 16.66 || k.LossPct > 16.67) {
				t.Errorf("kernel %+v: loss %.3f%%, want 16.67%%", k, k.LossPct)
			}
		}
	}
}

type failing struct {
	calibtest.H200
	err error
}

func (f *failing) WorkerCapacity(native.CapacityConfig) (native.CapacityResult, error) {
	return native.CapacityResult{}, f.err
}

func TestMeasureStopsAtAnError(t *testing.T) {
	f := &failing{err: errors.New("worker thread failed")}
	_, err := calib.Measure(f, calib.Options{Iters: 10, Quick: true}, func(string) {})
	if err == nil || !errors.Is(err, f.err) || err.Error() != "worker capacity 1 x 1: worker thread failed" {
		t.Fatalf("Measure = %v", err)
	}
}
