package gda

import (
	"fmt"
	"math"
	"slices"

	"moebench/profile"
)

// refined lists the costs Refine moves, the composed ones whose values the
// issue sequences determine only through the model.
var refined = []string{"gpu.reserve", "gpu.mmio_store", "gpu.store_drain", "gpu.l2_load",
	"gpu.fence_gpu", "gpu.fence_sc_gpu", "gpu.release_sys", "gpu.fence_sys"}

// Refine fits the composed GPU costs by running the model itself: starting
// from consts (FitGPU's direct inversions) over base, it searches each cost
// in turn for the value that minimizes the squared log error between the
// modelled and the measured single-thread issue times (every ordering mode
// and the inline sweep). The micro-benchmarked costs (store16, atomic,
// handoff, cq_poll) stay as measured. It returns the constants with the
// refined values and the fit's median error before and after.
func Refine(m Measured, base *profile.Profile, consts []profile.Constant) ([]profile.Constant, float64, float64, error) {
	p := base.Clone()
	for _, c := range consts {
		if err := p.SetValue(c.Name, c.Value, c.Source); err != nil {
			return nil, 0, 0, fmt.Errorf("refine: %w", err)
		}
	}
	mhz := p.Get("gpu.sm_clock_mhz")
	// Work in ns of SM time, all attributed to cycles as FitGPU does.
	get := func(name string) float64 { return p.Get(name+".cycles")*1000/mhz + p.Get(name+".ns") }
	set := func(name string, ns float64) {
		p.SetValue(name+".cycles", ns*mhz/1000, "refine")
		p.SetValue(name+".ns", 0, "refine")
	}
	type target struct {
		cfg  SingleConfig
		want float64
	}
	var ts []target
	for mode, v := range m.IssueNs {
		if o, ok := ParseOrdering(mode); ok && v > 0 {
			ts = append(ts, target{SingleConfig{Ordering: o, Payload: 8, Inline: true}, v})
		}
	}
	for size, v := range m.InlineIssueNs {
		if size > 0 && v > 0 {
			ts = append(ts, target{SingleConfig{Ordering: OrderGPUFence, Payload: size, Inline: true}, v})
		}
	}
	if len(ts) == 0 {
		return consts, 0, 0, nil
	}
	slices.SortFunc(ts, func(a, b target) int {
		if a.cfg.Ordering != b.cfg.Ordering {
			return int(a.cfg.Ordering) - int(b.cfg.Ordering)
		}
		return a.cfg.Payload - b.cfg.Payload
	})
	errs := make([]float64, len(ts))
	cost := func() float64 {
		var sum float64
		for i, t := range ts {
			r, err := SingleOp(p, t.cfg)
			if err != nil {
				return math.Inf(1)
			}
			d := math.Log(r.Issue.NsF() / t.want)
			errs[i] = math.Abs(r.Issue.NsF()-t.want) / t.want
			sum += d * d
		}
		return sum
	}
	median := func() float64 {
		e := slices.Clone(errs)
		slices.Sort(e)
		return e[len(e)/2]
	}
	best := cost()
	before := median()
	for range 8 {
		improved := false
		for _, name := range refined {
			cur := get(name)
			for _, f := range []float64{0, 0.5, 0.8, 0.9, 0.97, 1.03, 1.1, 1.25, 2} {
				v := cur * f
				if cur == 0 {
					v = 20 * f
				}
				set(name, v)
				if c := cost(); c < best-1e-12 {
					best, cur, improved = c, v, true
				}
			}
			set(name, cur)
		}
		if !improved {
			break
		}
	}
	cost()
	after := median()
	out := slices.Clone(consts)
	where := fmt.Sprintf("fitted by running the model against the %d issue times measured on %s at %.0f MHz (ordering modes and inline sweep; median error %.1f%% -> %.1f%%)",
		len(ts), orUnknown(m.GPU), mhz, 100*before, 100*after)
	for _, name := range refined {
		ns := get(name)
		for _, half := range []struct {
			suffix string
			v      float64
		}{{".cycles", ns * mhz / 1000}, {".ns", 0}} {
			c := profile.Constant{Name: name + half.suffix, Value: half.v, Unit: map[string]string{".cycles": "cycles", ".ns": "ns"}[half.suffix], Kind: profile.KindMeasured, Source: where}
			if i := slices.IndexFunc(out, func(o profile.Constant) bool { return o.Name == c.Name }); i >= 0 {
				out[i] = c
			} else {
				out = append(out, c)
			}
		}
	}
	return out, before, after, nil
}
