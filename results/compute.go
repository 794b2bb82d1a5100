package results

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"moebench/internal/report"
	"moebench/moe"
)

// Compute is a layer with its experts' compute, as the run JSON promises
// it: the timeline's figures, its critical path and, over a step of
// Layers layers, the step's time and throughput.
type Compute struct {
	Overlap    string     `json:"overlap"`
	LayerUs    float64    `json:"layer_us"`
	ComputeUs  float64    `json:"compute_us"`
	CommUs     float64    `json:"comm_us"`
	ExposedUs  float64    `json:"exposed_us"`
	ComputeSMs int        `json:"compute_sms"`
	HotRank    int        `json:"hot_rank"`
	HotTokens  int        `json:"hot_rank_expert_tokens"`
	HotUs      float64    `json:"hot_rank_experts_us"`
	MeanUs     float64    `json:"mean_experts_us"`
	BoundBy    string     `json:"bound_by"`
	Critical   []moe.Step `json:"critical_path"`
	// Layers is the step's MoE layers; StepUs their time and
	// TokensPerSec each GPU's tokens a second at it (a rank's tokens over
	// the step). LostPct is the share of the step communication leaves
	// exposed: the throughput a transport costs.
	Layers       int     `json:"layers"`
	StepUs       float64 `json:"step_us"`
	TokensPerSec float64 `json:"tokens_per_sec_per_gpu"`
	LostPct      float64 `json:"exposed_pct"`
}

// ComputeOf is the document of a timeline over a step of layers layers of
// tokens tokens a rank (nil without compute).
func ComputeOf(tl *moe.Timeline, layers, tokens int) *Compute {
	if tl == nil {
		return nil
	}
	c := &Compute{Overlap: tl.Overlap.String(), LayerUs: tl.LayerUs, ComputeUs: tl.ComputeUs, CommUs: tl.CommUs,
		ExposedUs: tl.ExposedUs, ComputeSMs: tl.ComputeSMs, HotRank: tl.HotRank, HotTokens: tl.HotTokens,
		HotUs: tl.HotExpertUs, MeanUs: tl.MeanExpertUs, BoundBy: tl.BoundBy, Critical: tl.Critical, Layers: layers,
		StepUs: float64(layers) * tl.LayerUs}
	if c.StepUs > 0 {
		c.TokensPerSec = float64(tokens) / (c.StepUs * 1e-6)
		c.LostPct = 100 * tl.ExposedUs / tl.LayerUs
	}
	return c
}

// computeTable is the runs with compute: each schedule's compute,
// communication, what of it is exposed, the layer, the step over its
// layers, and the longest step of the critical path.
func computeTable(runs []Run) *report.Table {
	kc := knobCols(runs)
	// A swept --overlap is a knob column already.
	swept := slices.Contains(kc, "overlap")
	cols := []string{"preset", "transport", "overlap", "compute µs", "comm µs", "exposed µs", "layer µs", "exposed %",
		"layers", "step µs", "tokens/s/GPU", "hottest rank", "bound by"}
	num := []bool{false, false, false, true, true, true, true, true, true, true, true, false, false}
	if swept {
		cols, num = slices.Delete(cols, 2, 3), slices.Delete(num, 2, 3)
	}
	t := withKnobs(kc, cols, num)
	for i := range runs {
		r := &runs[i]
		c := r.Compute
		if c == nil {
			continue
		}
		row := append(knobVals(r), r.Preset, r.Transport)
		if !swept {
			row = append(row, c.Overlap)
		}
		t.Rows = append(t.Rows, append(row,
			report.Num(c.ComputeUs), report.Num(c.CommUs), report.Num(c.ExposedUs), report.Num(c.LayerUs), report.Num(c.LostPct),
			strconv.Itoa(c.Layers), report.Num(c.StepUs), report.Grouped(int(math.Round(c.TokensPerSec))),
			fmt.Sprintf("%d (%d tokens, %s µs)", c.HotRank, c.HotTokens, report.Num(c.HotUs)), c.BoundBy))
	}
	return t
}
