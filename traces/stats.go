package traces

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"

	"moebench/internal/report"
)

// LayerStats is the load of one MoE layer across a whole trace, counted per
// logical expert: it depends on routing alone, not on where experts live.
type LayerStats struct {
	Layer      int   `json:"layer"`
	Records    int64 `json:"records"`
	Steps      int   `json:"steps"` // distinct steps seen in this layer
	Tokens     int64 `json:"tokens"`
	Selections int64 `json:"selections"` // slots that are not −1
	// Per-expert selections per step: the largest and the mean over experts.
	MaxPerExpert  float64 `json:"max_per_expert"`
	MeanPerExpert float64 `json:"mean_per_expert"`
	Imbalance     float64 `json:"imbalance"`  // max / mean; 1 = perfectly even
	Top1Share     float64 `json:"top1_share"` // the hottest expert's share of selections
	CV            float64 `json:"cv"`         // coefficient of variation of expert loads
	Gini          float64 `json:"gini"`       // 0 = even, → 1 = one expert takes all
	Unused        int     `json:"unused"`     // experts never selected
}

// Summary is what inspect reports about a trace.
type Summary struct {
	Header     Header       `json:"header"`
	Records    int64        `json:"records"`
	Tokens     int64        `json:"tokens"`
	Selections int64        `json:"selections"`
	Empty      int64        `json:"empty_slots"` // −1 slots
	Weighted   int64        `json:"weighted_records"`
	Steps      int          `json:"steps_seen"`
	Ranks      int          `json:"ranks_seen"` // distinct ranks, −1 counted as one
	Layers     []LayerStats `json:"layers"`
}

// Inspect streams r once and accumulates its statistics. Memory is one
// count per (layer, logical expert) plus the sets of steps seen.
func Inspect(r Reader) (*Summary, error) {
	h := r.Header()
	s := &Summary{Header: h}
	counts := make([][]int64, h.Layers)
	layerSteps := make([]map[int]struct{}, h.Layers)
	steps, ranks := map[int]struct{}{}, map[int]struct{}{}
	recs := make([]int64, h.Layers)
	toks := make([]int64, h.Layers)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		l := rec.Layer
		if counts[l] == nil {
			counts[l] = make([]int64, h.Experts)
			layerSteps[l] = map[int]struct{}{}
		}
		c := counts[l]
		var p2l []int32
		if h.IDSpace == Physical {
			p2l = h.PhysicalToLogical[l]
		}
		for _, e := range rec.TopkIdx {
			if e < 0 {
				s.Empty++
				continue
			}
			if p2l != nil {
				e = p2l[e]
			}
			c[e]++
		}
		n := int64(rec.Tokens(h.TopK))
		s.Records++
		s.Tokens += n
		recs[l]++
		toks[l] += n
		if rec.TopkWeights != nil {
			s.Weighted++
		}
		steps[rec.Step] = struct{}{}
		ranks[rec.Rank] = struct{}{}
		layerSteps[l][rec.Step] = struct{}{}
	}
	s.Steps, s.Ranks = len(steps), len(ranks)
	for l, c := range counts {
		if c == nil {
			continue
		}
		ls := layerStats(c, len(layerSteps[l]))
		ls.Layer, ls.Records, ls.Tokens = l, recs[l], toks[l]
		s.Selections += ls.Selections
		s.Layers = append(s.Layers, ls)
	}
	return s, nil
}

func layerStats(c []int64, steps int) LayerStats {
	ls := LayerStats{Steps: steps}
	var sum, hi int64
	for _, x := range c {
		sum += x
		hi = max(hi, x)
		if x == 0 {
			ls.Unused++
		}
	}
	ls.Selections = sum
	if sum == 0 || steps == 0 {
		return ls
	}
	n := float64(len(c))
	mean := float64(sum) / n
	ls.MaxPerExpert = float64(hi) / float64(steps)
	ls.MeanPerExpert = mean / float64(steps)
	ls.Imbalance = float64(hi) / mean
	ls.Top1Share = float64(hi) / float64(sum)
	var ss float64
	for _, x := range c {
		d := float64(x) - mean
		ss += d * d
	}
	ls.CV = math.Sqrt(ss/n) / mean
	sorted := slices.Clone(c)
	slices.Sort(sorted)
	var acc float64
	for i, x := range sorted {
		acc += float64(i+1) * float64(x)
	}
	ls.Gini = 2*acc/(n*float64(sum)) - (n+1)/n
	return ls
}

// WriteJSON renders the summary as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}

// WriteTable renders the summary for a terminal, numbers at three
// significant digits.
func (s *Summary) WriteTable(w io.Writer) error {
	h := &s.Header
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	unknown := func(v int) string {
		if v == 0 {
			return "unknown"
		}
		return strconv.Itoa(v)
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(tw, "provenance\t%s\n", orDash(h.Provenance))
	space := h.IDSpace
	if h.IDSpace == Physical {
		space += fmt.Sprintf(" (%d physical → %d logical experts; loads below are per logical expert)", h.PhysicalExperts, h.Experts)
	}
	fmt.Fprintf(tw, "id space\t%s\n", space)
	fmt.Fprintf(tw, "shape\t%d layers × %d experts, top-%d; steps %s, ep size %s, gpus/node %s\n",
		h.Layers, h.Experts, h.TopK, unknown(h.Steps), unknown(h.EPSize), unknown(h.GPUsPerNode))
	syn := yes(h.Synthesized)
	if h.Synthesized {
		syn += " (tokens made up to match per-expert counts: no real co-selection)"
	}
	fmt.Fprintf(tw, "synthesized\t%s\n", syn)
	fmt.Fprintf(tw, "records\t%d (steps seen %d, ranks seen %d, with weights %d)\n", s.Records, s.Steps, s.Ranks, s.Weighted)
	fmt.Fprintf(tw, "tokens\t%d (selections %d, empty slots %d)\n", s.Tokens, s.Selections, s.Empty)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "layer\tsteps\ttokens\tmax/expert/step\tmean/expert/step\timbalance\ttop-1 share\tcv\tgini\tunused\t\n")
	var worst, sumImb float64
	worstL := -1
	for _, l := range s.Layers {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", l.Layer, l.Steps, l.Tokens,
			report.Sig3(l.MaxPerExpert), report.Sig3(l.MeanPerExpert), report.Sig3(l.Imbalance), pct(l.Top1Share), report.Sig3(l.CV), report.Sig3(l.Gini), l.Unused)
		sumImb += l.Imbalance
		if l.Imbalance > worst {
			worst, worstL = l.Imbalance, l.Layer
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Layers) > 0 {
		_, err := fmt.Fprintf(w, "\nimbalance (max/mean tokens per expert): mean %s over %d layers, worst %s in layer %d\n",
			report.Sig3(sumImb/float64(len(s.Layers))), len(s.Layers), report.Sig3(worst), worstL)
		return err
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func pct(x float64) string { return report.Sig3(100*x) + "%" }

// Inspection is a trace's Summary with the file it came from and the host
// that read it: what inspecting a file reports.
type Inspection struct {
	File string      `json:"file"`
	Host report.Host `json:"host"`
	*Summary
}

// InspectFile opens the trace at path and summarises it (Inspect) on host.
func InspectFile(path string, host report.Host) (*Inspection, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s, err := Inspect(r)
	if err != nil {
		return nil, err
	}
	return &Inspection{File: path, Host: host, Summary: s}, nil
}

// WriteJSON renders the inspection as indented JSON: the file, the host
// and the summary's fields beside them.
func (in *Inspection) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(in)
}

// WriteTable renders the inspection for a terminal: the file and the host,
// then the summary's table.
func (in *Inspection) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "trace       %s\nhost        %s\n", in.File, in.Host); err != nil {
		return err
	}
	return in.Summary.WriteTable(w)
}
