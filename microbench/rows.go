package microbench

import (
	"fmt"
	"math"
	"slices"

	"github.com/montanaflynn/stats"

	"moebench/internal/field"
	"moebench/profile"
)

// Row is one figure of one experiment.
type Row struct {
	Experiment string  `json:"experiment"`
	Case       string  `json:"case"`
	Metric     string  `json:"metric"`
	Unit       string  `json:"unit"`
	Paper      float64 `json:"paper"` // NaN when the paper has no such figure
	Model      float64 `json:"model"`
	// Source names the paper's table or figure.
	Source string `json:"source,omitempty"`
}

// HasPaper reports whether the paper measured this case.
func (r Row) HasPaper() bool { return !math.IsNaN(r.Paper) }

// RelErr is |model − paper| / |paper|.
func (r Row) RelErr() float64 {
	if !r.HasPaper() || r.Paper == 0 {
		return math.NaN()
	}
	return math.Abs(r.Model-r.Paper) / math.Abs(r.Paper)
}

// Experiment is one named microbenchmark.
type Experiment struct {
	Name    string
	Summary string
	Run     func(p *profile.Profile) ([]Row, error)
}

// Experiments lists the microbenchmarks in the paper's order.
func Experiments() []Experiment {
	return []Experiment{
		{"single-op", "one 8 B write: issue, put+completion, RTT (Table 3)", singleOp},
		{"ordering", "issue and put+completion per ordering mode (Table 4)", ordering},
		{"inline", "inline payload size sweep (Fig. 3)", inline},
		{"rate", "message rate over threads × QPs × SMs × WQEs per doorbell × publication (Table 5)", rate},
		{"completion-scope", "PE-wide quiet vs per-QP completion against QPs (Fig. 4)", completionScope},
		{"clock", "issue against SM clock (Fig. 5 shape)", clock},
		{"presets", "library presets through one 8 B operation (Table 3)", presets},
		{"dc", "DC per-operation cost and destination-switch penalty (§4.3.3)", dc},
		{"connections", "NIC message rate against active connections, by role, reuse and payload (Fig. 10, Tables 15-16)", connections},
		{"proxy-single-op", "mini-proxy one 8 B write, baseline vs tuned handoff, cold vs warm workers (Tables 3, 9)", proxySingleOp},
		{"proxy-capacity", "mini-proxy message rate over workers × batch × worker state (Table 10, Fig. 7)", proxyCapacity},
		{"proxy-loaded", "probe RTT under background load: a shared proxy ring collapses, a reserved one does not (Fig. 6, Table 11)", proxyLoaded},
		{"gda-loaded", "GDAKI probe RTT under background CTAs, sharing its context or not (Table 11)", gdaLoaded},
		{"goodput", "pipelined pointer-write goodput against payload size, mini-proxy and mini-gda (Fig. 8)", goodput},
	}
}

// Select returns the experiments named in only (all when empty), in
// registry order; an unknown name is an error that lists the known ones.
func Select(only []string) ([]Experiment, error) {
	all := Experiments()
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, e := range all {
		names = append(names, e.Name)
	}
	want := map[int]bool{}
	for _, n := range only {
		i := slices.Index(names, n)
		if i < 0 {
			return nil, fmt.Errorf("unknown experiment %q (known: %v)", n, names)
		}
		want[i] = true
	}
	var out []Experiment
	for i, e := range all {
		if want[i] {
			out = append(out, e)
		}
	}
	return out, nil
}

// RunAll runs exps in turn on p, each one's rows after the last's; with
// paperOnly it keeps only the rows that carry the paper's value.
func RunAll(p *profile.Profile, exps []Experiment, paperOnly bool) ([]Row, error) {
	var rows []Row
	for _, e := range exps {
		rs, err := e.Run(p)
		if err != nil {
			return nil, fmt.Errorf("experiment %s: %w", e.Name, err)
		}
		for _, r := range rs {
			if r.HasPaper() || !paperOnly {
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// AgainstPaper runs the experiments named in only (all when empty) on p,
// keeping the rows that carry the paper's value, and their summary: the
// model against the paper's measurements. An unknown name is a
// field.Error of only.
func AgainstPaper(p *profile.Profile, only []string) ([]Row, Summary, error) {
	exps, err := Select(only)
	if err != nil {
		return nil, Summary{}, field.Errorf("only", "%v", err)
	}
	rows, err := RunAll(p, exps, true)
	if err != nil {
		return nil, Summary{}, err
	}
	return rows, Summarize(rows), nil
}

// Summary aggregates the relative errors of rows with a paper value.
type Summary struct {
	Rows      int     `json:"rows"`
	MedianErr float64 `json:"median_rel_err"`
	MeanErr   float64 `json:"mean_rel_err"`
	MaxErr    float64 `json:"max_rel_err"`
	Worst     string  `json:"worst"`
}

// Summarize computes the error summary over rows that have a paper value.
func Summarize(rows []Row) Summary {
	var errs stats.Float64Data
	var s Summary
	for _, r := range rows {
		e := r.RelErr()
		if math.IsNaN(e) {
			continue
		}
		errs = append(errs, e)
		if e > s.MaxErr || s.Worst == "" {
			s.MaxErr = e
			s.Worst = r.Experiment + " / " + r.Case + " / " + r.Metric
		}
	}
	s.Rows = len(errs)
	if s.Rows > 0 {
		s.MedianErr, _ = errs.Median()
		s.MeanErr, _ = errs.Mean()
	}
	return s
}

var nan = math.NaN()
