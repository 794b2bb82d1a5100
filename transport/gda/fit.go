package gda

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"moebench/profile"
)

// How FitGPU turns measurements into constants. The model composes one
// thread's issue as
//
//	reserve + 3 WQE stores + dbrec store + ordering + MMIO doorbell store,
//
// where a fence first waits for the stores in flight to drain (one after
// another, store_drain each) and then pays its own cost. Writing N for
// issue(none), S for store16 and D for store_drain, the model gives
//
//	issue(none)        = N = reserve + 4S + mmio
//	issue(no-doorbell) = reserve + 4S
//	issue(gpu-fence)   = N + 4(D-S) + fence_gpu        (drain outlasts issue)
//	issue(threadfence) = N + 4(D-S) + 2 fence_sc_gpu   (a fence before dbrec and doorbell)
//	issue(release-sys) = N + 4(D-S) + release_sys
//	issue(fence-sys)   = N + 4(D-S) + fence_sys
//
// and each additional 16 B inline chunk under gpu-fence adds one store to
// drain, so D is the slope of issue(gpu-fence) over inline chunks. The
// rules below invert these equations; each is one row so the composition
// can change in one place. Every result is SM time: it goes to NAME.cycles
// at the measured clock (cycles = ns * MHz / 1000) and NAME.ns is 0, since
// the runs were made at one clock.
var fitRules = []fitRule{
	{"gpu.store16", "back-to-back 16 B st.global.v4 of one thread, issue only (store16 micro-op)",
		func(m Measured, _ derived) (float64, bool) { return m.Store16Ns, m.Store16Ns > 0 }},
	{"gpu.store_drain", "D = slope of issue(gpu-fence) over 16 B inline chunks (least squares over the inline sweep)",
		func(_ Measured, d derived) (float64, bool) { return d.drain, d.haveDrain }},
	{"gpu.atomic", "dependent chain of device-scope atomicAdd on one word (atomic micro-op)",
		func(m Measured, _ derived) (float64, bool) { return m.AtomicNs, m.AtomicNs > 0 }},
	{"gpu.l2_load", "dependent ld.global.cg pointer chase over 1 MiB (L2 hits)",
		func(m Measured, _ derived) (float64, bool) { return m.L2LoadNs, m.L2LoadNs > 0 }},
	{"gpu.handoff", "ordered publication chain over 256 threads of one block (ld.acquire.gpu until the predecessor published, st.release.gpu), per step",
		func(m Measured, _ derived) (float64, bool) { return m.HandoffNs, m.HandoffNs > 0 }},
	{"gpu.cq_poll", "chain of CQE load (ld.cg 16 B) + owner/opcode check + CQ doorbell-record store",
		func(m Measured, _ derived) (float64, bool) { return m.CQConsumeNs, m.CQConsumeNs > 0 }},
	{"gpu.mmio_store", "issue(none) - issue(no-doorbell): the 8 B doorbell store to a host-mapped pinned page",
		func(m Measured, d derived) (float64, bool) {
			return m.IssueNs["none"] - m.IssueNoDoorbellNs, d.haveNone && m.IssueNoDoorbellNs > 0
		}},
	{"gpu.reserve", "issue(no-doorbell) - 4*store16: producer index, wrap, address math and the inline payload load",
		func(m Measured, d derived) (float64, bool) {
			return m.IssueNoDoorbellNs - 4*m.Store16Ns, m.IssueNoDoorbellNs > 0 && m.Store16Ns > 0
		}},
	{"gpu.fence_gpu", "issue(gpu-fence) - issue(none) - 4*max(0, store_drain - store16)",
		func(m Measured, d derived) (float64, bool) {
			v, ok := m.IssueNs["gpu-fence"]
			return v - d.none - 4*d.extraDrain, ok && d.haveNone
		}},
	{"gpu.fence_sc_gpu", "(issue(threadfence) - issue(none) - 4*max(0, store_drain - store16)) / 2: two fences per issue",
		func(m Measured, d derived) (float64, bool) {
			v, ok := m.IssueNs["threadfence"]
			return (v - d.none - 4*d.extraDrain) / 2, ok && d.haveNone
		}},
	{"gpu.release_sys", "issue(release-sys) - issue(none) - 4*max(0, store_drain - store16)",
		func(m Measured, d derived) (float64, bool) {
			v, ok := m.IssueNs["release-sys"]
			return v - d.none - 4*d.extraDrain, ok && d.haveNone
		}},
	{"gpu.fence_sys", "issue(fence-sys) - issue(none) - 4*max(0, store_drain - store16)",
		func(m Measured, d derived) (float64, bool) {
			v, ok := m.IssueNs["fence-sys"]
			return v - d.none - 4*d.extraDrain, ok && d.haveNone
		}},
}

type fitRule struct {
	name string // cost name: the constant pair NAME.cycles / NAME.ns
	how  string // the formula, quoted in the constant's source
	ns   func(Measured, derived) (float64, bool)
}

// derived holds intermediate quantities several rules share.
type derived struct {
	none       float64 // issue(none)
	haveNone   bool
	drain      float64 // store_drain
	haveDrain  bool
	extraDrain float64 // max(0, store_drain - store16)
}

func derive(m Measured) derived {
	var d derived
	d.none, d.haveNone = m.IssueNs["none"]
	if s, ok := InlineSlope(m.InlineIssueNs); ok {
		d.drain, d.haveDrain = math.Max(0, s), true
		d.extraDrain = math.Max(0, d.drain-m.Store16Ns)
	}
	return d
}

// InlineChunks is the number of 16 B data chunks an inline segment of n
// payload bytes takes (the 4 B byte count included).
func InlineChunks(n int) int { return (4 + n + 15) / 16 }

// InlineSlope fits issue ns against 16 B inline chunks by least squares
// and returns ns per chunk; false with fewer than two distinct chunk counts.
func InlineSlope(byBytes map[int]float64) (float64, bool) {
	var xs, ys []float64
	keys := make([]int, 0, len(byBytes))
	for b := range byBytes {
		keys = append(keys, b)
	}
	sort.Ints(keys)
	for _, b := range keys {
		xs = append(xs, float64(InlineChunks(b)))
		ys = append(ys, byBytes[b])
	}
	if len(xs) < 2 {
		return 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, false
	}
	return sxy / sxx, true
}

// FitGPU converts GPU measurements into profile constants: the SM clock,
// the SM count and, for every cost the measurements determine (fitRules),
// the pair NAME.cycles / NAME.ns. base supplies the clock when m lacks
// one; it may be nil. Costs the measurements do not determine are left out,
// so a profile list like "p-ib,calibration.json" keeps the base's values
// for them. A difference that comes out negative is clamped to 0 and the
// source says so.
func FitGPU(m Measured, base *profile.Profile) ([]profile.Constant, error) {
	mhz := m.ClockMHz
	clockSrc := "measured: clock64 ticks per globaltimer ns during the runs"
	if mhz <= 0 {
		if base == nil {
			return nil, errors.New("fit: the measurements carry no SM clock and no base profile gives one")
		}
		c, ok := base.Constant("gpu.sm_clock_mhz")
		if !ok {
			return nil, errors.New("fit: the measurements carry no SM clock and the base profile does not set gpu.sm_clock_mhz")
		}
		mhz, clockSrc = c.Value, "from base profile "+base.Name+": "+c.Source
	}
	where := fmt.Sprintf("measured on %s (driver %s, CUDA %s) at %.0f MHz", orUnknown(m.GPU), orUnknown(m.Driver), orUnknown(m.CUDA), mhz)
	target := m.DoorbellTarget
	if target == "" {
		target = "host-mapped"
	}
	var out []profile.Constant
	add := func(name string, v float64, src string) error {
		d, ok := profile.Lookup(name)
		if !ok {
			return fmt.Errorf("fit: constant %s is not in the profile schema (FitGPU and the schema disagree)", name)
		}
		out = append(out, profile.Constant{Name: name, Value: v, Unit: d.Unit, Kind: profile.KindMeasured, Source: src})
		return nil
	}
	if m.ClockMHz > 0 {
		if err := add("gpu.sm_clock_mhz", mhz, where+": "+clockSrc); err != nil {
			return nil, err
		}
	}
	if m.SMs > 0 {
		if err := add("gpu.sms", float64(m.SMs), where+": cudaDeviceProp.multiProcessorCount"); err != nil {
			return nil, err
		}
	}
	d := derive(m)
	for _, r := range fitRules {
		ns, ok := r.ns(m, d)
		if !ok || math.IsNaN(ns) || math.IsInf(ns, 0) {
			continue
		}
		how := r.how
		if ns < 0 {
			how += fmt.Sprintf(" (came out %.1f ns, clamped to 0)", ns)
			ns = 0
		}
		src := fmt.Sprintf("%s, %s doorbell: %s = %.1f ns, all of it attributed to cycles at the measured clock", where, target, how, ns)
		cyc := ns * mhz / 1000
		if err := add(r.name+".cycles", cyc, src); err != nil {
			return nil, err
		}
		if err := add(r.name+".ns", 0, "measured at one SM clock only: no clock-independent part separated (see "+r.name+".cycles)"); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("fit: the measurements determine no constant")
	}
	return out, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
