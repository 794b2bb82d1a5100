package fault

import (
	"slices"
	"strconv"

	"moebench/internal/field"
)

// Sweep is a plan's faults run over packet-loss rates on every link and
// over fault seeds: a sweep's tails.
type Sweep struct {
	Specs []string  // in Syntax
	Loss  []float64 // rates added as loss:RATE to Specs; nil: not swept
	Seeds []uint64  // at least one
}

// Variant is one (loss rate, seed) of a sweep.
type Variant struct {
	Plan *Plan  // nil when healthy
	Loss string // the rate as given, "" when loss is not swept
	Seed uint64
}

// Variants are the sweep's plans for a layer of ranks, one list per loss
// rate, its seeds in order within it. Errors name the field "fault": a
// specification's syntax, or a rank past the layer's.
func (s Sweep) Variants(ranks int) ([][]Variant, error) {
	losses := []float64{-1}
	if s.Loss != nil {
		losses = s.Loss
	}
	var out [][]Variant
	for _, l := range losses {
		specs, loss := s.Specs, ""
		if l >= 0 {
			loss = strconv.FormatFloat(l, 'g', -1, 64)
			if l > 0 {
				specs = append(slices.Clone(specs), "loss:"+loss)
			}
		}
		var vs []Variant
		for _, seed := range s.Seeds {
			p, err := Parse(specs, seed)
			if err == nil {
				err = p.Validate(ranks)
			}
			if err != nil {
				return nil, field.Errorf("fault", "%w", err)
			}
			if p.Empty() {
				p = nil
			}
			vs = append(vs, Variant{Plan: p, Loss: loss, Seed: seed})
		}
		out = append(out, vs)
	}
	return out, nil
}
