package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"moebench/fault"
	"moebench/internal/field"
)

// Faults are the faults every point runs under: the specifications, the
// loss rates on every link to sweep (Swept even when empty) and either one
// fault seed or, with Seeds > 0, seeds 1 to Seeds for every point.
type Faults struct {
	Specs []string
	Loss  []float64
	Swept bool // the loss rates are an axis
	Seed  uint64
	Seeds int
}

// Any reports whether a layer runs under faults.
func (f Faults) Any() bool { return len(f.Specs) > 0 || f.Swept }

// Expand gives every point its faults: one per loss rate, and with seeds
// one per seed, innermost, so that a point's seeds run side by side. A
// fault naming a rank past a point's layer is the caller's input.
func (f Faults) Expand(points []Point) ([]Point, error) {
	if !f.Any() {
		return points, nil
	}
	sw := fault.Sweep{Specs: f.Specs, Seeds: []uint64{f.Seed}}
	if f.Swept {
		sw.Loss = append([]float64{}, f.Loss...) // non-nil: swept, even if empty
	}
	if f.Seeds > 0 {
		sw.Seeds = sw.Seeds[:0]
		for s := 1; s <= f.Seeds; s++ {
			sw.Seeds = append(sw.Seeds, uint64(s))
		}
	}
	var out []Point
	point := 0
	for _, c := range points {
		vs, err := sw.Variants(c.Shape.Ranks)
		if err != nil {
			return nil, input(err)
		}
		for _, byLoss := range vs {
			for _, v := range byLoss {
				c.Fault = Fault{Plan: v.Plan, Loss: v.Loss, Point: point, Seeds: f.Seeds, Seed: v.Seed}
				out = append(out, c)
			}
			point++
		}
	}
	return out, nil
}

// Note is a header's account of the faults, none when healthy.
func (f Faults) Note() []string {
	if !f.Any() {
		return nil
	}
	p, _ := fault.Parse(f.Specs, f.Seed)
	s := "faults " + p.String()
	if f.Swept {
		var l []string
		for _, x := range f.Loss {
			l = append(l, strconv.FormatFloat(x, 'g', -1, 64))
		}
		s += "; packet loss on every link swept over " + strings.Join(l, ", ")
	}
	if f.Seeds > 0 {
		s += fmt.Sprintf("; fault seeds 1 to %d per point", f.Seeds)
	} else {
		s += fmt.Sprintf("; fault seed %d", f.Seed)
	}
	return []string{s}
}

// MaxSeeds bounds Seeds: a p99 wants about a hundred, and each seed is a
// full run of every point.
const MaxSeeds = 10000

// Check refuses faults that do not parse, a loss rate outside [0, 1) and
// more seeds than MaxSeeds.
func (f Faults) Check() error {
	if _, err := fault.Parse(f.Specs, f.Seed); err != nil {
		return input(field.Errorf("fault", "%v", err))
	}
	for _, l := range f.Loss {
		if math.IsNaN(l) || l < 0 || l >= 1 {
			return input(field.Valuef("loss", l, "want a rate from 0 to below 1"))
		}
	}
	if f.Seeds < 0 || f.Seeds > MaxSeeds {
		return input(field.Valuef("seeds", f.Seeds, "want 1 to %d", MaxSeeds))
	}
	return nil
}
