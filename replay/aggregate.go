package replay

import (
	"slices"

	"moebench/internal/summary"
	"moebench/moe"
	"moebench/transport/preset"
)

// Aggregate accumulates over every replayed group in memory bounded by
// the ranks, experts and presets, never by the trace's length.
type Aggregate struct {
	Shape      moe.Shape
	Mode       moe.Mode
	NVLink     bool
	Groups     int
	Tokens     int64
	Selections int64
	PerRank    []int64 // selections received over the trace
	PerExpert  []int64
	Locality   [3]int64
	// RankImbalance and ExpertImbalance are the per-group load
	// imbalances; WorstRank and WorstExpert the (step, layer) of the worst.
	RankImbalance, ExpertImbalance summary.Stream
	WorstRank, WorstExpert         [2]int
	GroupLimit                     moe.GroupCheck
	Presets                        []PresetAggregate
}

// PresetAggregate is one preset over the replay.
type PresetAggregate struct {
	Preset  preset.Preset
	Correct bool
	Phase   [2]PhaseAggregate // dispatch, combine
	// Compute sums the layers with their experts' compute, when the
	// replay has it.
	Compute ComputeAggregate
}

// ComputeAggregate is a preset's layers with their experts' compute over
// the replay: sums over layers, µs, and the ranks whose experts were the
// hottest.
type ComputeAggregate struct {
	Layers                        int
	LayerUs, ComputeUs, ExposedUs float64
	hottest                       []int
}

// HottestRanks are the ranks whose routed experts took longest, with the
// layers in which each did, most first.
func (c *ComputeAggregate) HottestRanks() []RankCount { return countsOf(c.hottest) }

// PhaseAggregate is one phase of a preset over the replay.
type PhaseAggregate struct {
	Layer     summary.Stream // the slowest rank's time per layer, µs
	RankMean  float64        // the ranks' mean time, summed over layers
	IssueDone float64        // issue done, summed over layers
	breakdown moe.Breakdown
	slowBreak moe.Breakdown // the slowest rank's critical path, summed over layers
	slowest   []int         // per rank: layers in which it was the slowest
}

func newAggregate(s moe.Shape, ps []preset.Preset) *Aggregate {
	a := &Aggregate{Shape: s, PerRank: make([]int64, s.Ranks), PerExpert: make([]int64, s.Physical())}
	for _, p := range ps {
		pa := PresetAggregate{Preset: p, Correct: true}
		for i := range pa.Phase {
			pa.Phase[i].slowest = make([]int, s.Ranks)
		}
		a.Presets = append(a.Presets, pa)
	}
	return a
}

func (a *Aggregate) add(g *Group) {
	a.Groups++
	for r, n := range g.Traffic.PerRank {
		a.PerRank[r] += n
		a.Selections += n
	}
	for e, n := range g.Traffic.PerExpert {
		a.PerExpert[e] += n
	}
	for i, n := range g.Traffic.ByLocality {
		a.Locality[i] += n
	}
	a.Tokens += int64(g.Tokens)
	a.GroupLimit.Add(g.Groups)
	if g.RankLoad.Imbalance > a.RankImbalance.Max() || a.RankImbalance.N() == 0 {
		a.WorstRank = [2]int{g.Step, g.Layer}
	}
	if g.ExpertLoad.Imbalance > a.ExpertImbalance.Max() || a.ExpertImbalance.N() == 0 {
		a.WorstExpert = [2]int{g.Step, g.Layer}
	}
	a.RankImbalance.Add(g.RankLoad.Imbalance)
	a.ExpertImbalance.Add(g.ExpertLoad.Imbalance)
	for i, run := range g.Runs {
		pa := &a.Presets[i]
		pa.Correct = pa.Correct && run.Result.Correct
		if tl := run.Result.Compute; tl != nil {
			c := &pa.Compute
			if c.hottest == nil {
				c.hottest = make([]int, a.Shape.Ranks)
			}
			c.Layers++
			c.LayerUs += tl.LayerUs
			c.ComputeUs += tl.ComputeUs
			c.ExposedUs += tl.ExposedUs
			if tl.HotRank < len(c.hottest) {
				c.hottest[tl.HotRank]++
			}
		}
		for j, p := range []*moe.Phase{&run.Result.Dispatch, &run.Result.Combine} {
			acc := &pa.Phase[j]
			acc.Layer.Add(p.Time.Max)
			acc.RankMean += p.Time.Mean
			acc.IssueDone += p.IssueDone.Max
			for c, v := range p.Breakdown {
				acc.breakdown[c] += v
			}
			if r := SlowestRank(p); r >= 0 {
				acc.slowest[r]++
				for c, v := range p.Ranks[r].Breakdown {
					acc.slowBreak[c] += v
				}
			}
		}
	}
}

// SlowestRank is the rank whose phase ended last (the lowest on ties), or
// −1 when the phase has no ranks.
func SlowestRank(p *moe.Phase) int {
	best := -1
	for r, t := range p.Ranks {
		if best < 0 || t.Ready > p.Ranks[best].Ready {
			best = r
		}
	}
	return best
}

// RankCount is how many layers a rank was the slowest in.
type RankCount struct {
	Rank   int `json:"rank"`
	Layers int `json:"layers"`
}

// SlowestRanks lists the ranks that were ever the slowest, most often
// first.
func (p *PhaseAggregate) SlowestRanks() []RankCount { return countsOf(p.slowest) }

// countsOf is the ranks counted in per, most layers first (the lowest rank
// on ties).
func countsOf(per []int) []RankCount {
	var out []RankCount
	for r, n := range per {
		if n > 0 {
			out = append(out, RankCount{r, n})
		}
	}
	slices.SortStableFunc(out, func(a, b RankCount) int { return b.Layers - a.Layers })
	return out
}

// MeanBreakdown is the breakdown averaged over n layers.
func (p *PhaseAggregate) MeanBreakdown(n int) moe.Breakdown { return divide(p.breakdown, n) }

// SlowestBreakdown is the slowest rank's critical path averaged over n
// layers.
func (p *PhaseAggregate) SlowestBreakdown(n int) moe.Breakdown { return divide(p.slowBreak, n) }

func divide(sum moe.Breakdown, n int) moe.Breakdown {
	var b moe.Breakdown
	for c, v := range sum {
		b[c] = v / float64(max(n, 1))
	}
	return b
}
