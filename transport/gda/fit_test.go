package gda

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"moebench/profile"
)

// h200 is an excerpt of native/testdata/h200-raw.json (moebench calibrate
// on an H200 host).
func h200() Measured {
	return Measured{
		GPU: "NVIDIA H200", Driver: "580.159.04", CUDA: "13.0", ClockMHz: 1980, SMs: 132, DoorbellTarget: "host-mapped",
		IssueNs: map[string]float64{
			"none": 115, "gpu-fence": 547, "fenced-dbrec": 788, "release-gpu": 409,
			"threadfence": 788, "release-sys": 624, "fence-sys": 767,
		},
		IssueNoDoorbellNs: 116,
		InlineIssueNs:     map[int]float64{8: 547, 16: 588, 28: 593, 32: 766, 60: 822, 92: 1041, 124: 1193, 220: 1812},
		AtomicNs:          145.3, L2LoadNs: 185.2, Store16Ns: 11.7, HandoffNs: 521.6, CQConsumeNs: 181.7,
	}
}

func fitted(t *testing.T, m Measured) map[string]profile.Constant {
	t.Helper()
	cs, err := FitGPU(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The constants must form a valid profile file.
	data, err := json.Marshal(profile.File{Name: "calibration", Constants: cs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Parse("fit", data); err != nil {
		t.Fatalf("fitted constants do not parse as a profile: %v", err)
	}
	out := map[string]profile.Constant{}
	for _, c := range cs {
		out[c.Name] = c
	}
	return out
}

func TestFitGPUFormulas(t *testing.T) {
	t.Parallel()
	m := h200()
	got := fitted(t, m)
	drain, ok := InlineSlope(m.InlineIssueNs)
	if !ok || drain < 90 || drain > 110 {
		t.Fatalf("inline slope %v %v, want about 99 ns per 16 B", drain, ok)
	}
	extra := 4 * (drain - m.Store16Ns)
	for _, tc := range []struct {
		name string
		ns   float64
	}{
		{"gpu.store16", 11.7},
		{"gpu.store_drain", drain},
		{"gpu.atomic", 145.3},
		{"gpu.handoff", 521.6},
		{"gpu.cq_poll", 181.7},
		{"gpu.mmio_store", 0}, // 115 - 116 clamps to 0
		{"gpu.reserve", 116 - 4*11.7},
		{"gpu.fence_gpu", 547 - 115 - extra},
		{"gpu.fence_sc_gpu", (788 - 115 - extra) / 2},
		{"gpu.release_sys", 624 - 115 - extra},
		{"gpu.fence_sys", 767 - 115 - extra},
	} {
		c, ok := got[tc.name+".cycles"]
		if !ok {
			t.Errorf("%s.cycles missing", tc.name)
			continue
		}
		if want := tc.ns * 1980 / 1000; math.Abs(c.Value-want) > 1e-6 {
			t.Errorf("%s.cycles = %v, want %v", tc.name, c.Value, want)
		}
		if z := got[tc.name+".ns"]; z.Value != 0 || z.Source == "" {
			t.Errorf("%s.ns = %+v, want 0 with a source", tc.name, z)
		}
		if !strings.Contains(c.Source, "NVIDIA H200") || !strings.Contains(c.Source, "1980 MHz") {
			t.Errorf("%s source lacks where and at what clock: %q", tc.name, c.Source)
		}
	}
	if !strings.Contains(got["gpu.mmio_store.cycles"].Source, "clamped") {
		t.Errorf("clamped constant does not say so: %q", got["gpu.mmio_store.cycles"].Source)
	}
	if got["gpu.sm_clock_mhz"].Value != 1980 || got["gpu.sms"].Value != 132 {
		t.Errorf("clock/sms: %+v %+v", got["gpu.sm_clock_mhz"], got["gpu.sms"])
	}
}

func TestFitGPUPartial(t *testing.T) {
	t.Parallel()
	// Only micro-operations: the issue-derived constants are left out, so
	// a base profile keeps its values for them.
	got := fitted(t, Measured{ClockMHz: 1500, Store16Ns: 10, AtomicNs: 100})
	if len(got) != 5 { // clock, store16 pair, atomic pair
		t.Fatalf("got %d constants: %v", len(got), got)
	}
	if got["gpu.atomic.cycles"].Value != 150 {
		t.Fatalf("atomic at 1500 MHz = %v cycles", got["gpu.atomic.cycles"].Value)
	}
}

func TestFitGPUErrors(t *testing.T) {
	t.Parallel()
	if _, err := FitGPU(Measured{AtomicNs: 100}, nil); err == nil || !strings.Contains(err.Error(), "clock") {
		t.Fatalf("no clock: %v", err)
	}
	if _, err := FitGPU(Measured{ClockMHz: 1000}, nil); err == nil {
		// A clock alone is a constant; nothing else is an error only
		// when not even that is there.
		t.Log("clock alone fits")
	}
	if _, err := FitGPU(Measured{}, nil); err == nil {
		t.Fatal("empty measurements: want an error")
	}
}

func TestInlineSlope(t *testing.T) {
	t.Parallel()
	if _, ok := InlineSlope(map[int]float64{8: 1}); ok {
		t.Error("one point gives no slope")
	}
	if _, ok := InlineSlope(map[int]float64{8: 1, 12: 2}); ok {
		t.Error("one chunk count gives no slope")
	}
	s, ok := InlineSlope(map[int]float64{8: 100, 28: 200, 44: 300})
	if !ok || math.Abs(s-100) > 1e-9 {
		t.Errorf("slope %v %v, want 100", s, ok)
	}
	if InlineChunks(8) != 1 || InlineChunks(28) != 2 || InlineChunks(220) != 14 {
		t.Error("InlineChunks")
	}
}

func TestMeasuredJSONRoundTrip(t *testing.T) {
	t.Parallel()
	m := h200()
	m.KernelCost = []KernelCostPoint{{Caller: "compute", Path: "gda", Msgs: 4, Blocks: 528, Regs: 31, MaxBlocksPerSM: 8, Ms: 2.3, LossPct: 1.6}}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(m); err != nil {
		t.Fatal(err)
	}
	var back Measured
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.InlineIssueNs[220] != 1812 || back.KernelCost[0].Regs != 31 {
		t.Fatalf("round trip lost data: %+v", back)
	}
}
