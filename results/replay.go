package results

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"moebench/internal/report"
	"moebench/internal/summary"
	"moebench/moe"
	"moebench/replay"
)

// The sinks render a replay as it runs: Begin before the first group,
// Group for each replayed (step, layer), End with the aggregate. Only the
// aggregate is held until the end, so output streams like the input.

// ReplayTable is what the table's column widths are fixed from before
// the first group: the trace's steps and layers and the presets' names.
type ReplayTable struct {
	Steps, Layers int
	Presets       []string
}

// A ReplayFormat makes the sink that renders a replay in its format as
// it runs: replay streams, so its formats are sinks rather than reporters.
type ReplayFormat func(w io.Writer, h report.Header, t ReplayTable) replay.Sink

var replayFormats = map[string]ReplayFormat{}

// RegisterReplay makes a replay format available by name, as Register
// does a document's.
func RegisterReplay(name string, f ReplayFormat) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	if _, dup := replayFormats[name]; dup {
		panic("results: replay format " + name + " registered twice")
	}
	replayFormats[name] = f
}

func init() {
	RegisterReplay("table", func(w io.Writer, h report.Header, t ReplayTable) replay.Sink { return newTableSink(w, h, t) })
	RegisterReplay("json", func(w io.Writer, h report.Header, _ ReplayTable) replay.Sink { return &jsonSink{w: w, h: h} })
	RegisterReplay("csv", func(w io.Writer, h report.Header, _ ReplayTable) replay.Sink {
		return &csvSink{w: csv.NewWriter(w), raw: w, h: h}
	})
}

// NewReplaySink is the sink that renders a replay in the format named as
// it runs.
func NewReplaySink(w io.Writer, format string, h report.Header, t ReplayTable) (replay.Sink, error) {
	formatsMu.RLock()
	f, ok := replayFormats[format]
	formatsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("format %s: a replay result: %w", report.Quote(format), ErrUnsupported)
	}
	return f(w, h, t), nil
}

// modelPhases are a result's two phases by name.
func modelPhases(r *moe.Result) []struct {
	name string
	p    *moe.Phase
} {
	return []struct {
		name string
		p    *moe.Phase
	}{{"dispatch", &r.Dispatch}, {"combine", &r.Combine}}
}

// boundOrFailed is a phase's bound-by cell: "failed" when it failed.
func boundOrFailed(p *moe.Phase) string {
	if p.Failure != nil {
		return "failed"
	}
	return p.BoundBy
}

// phaseNames index replay.PresetAggregate.Phase and modelPhases().
var phaseNames = [2]string{"dispatch", "combine"}

// largestCauses lists up to n causes of b, largest first, with their µs.
func largestCauses(b moe.Breakdown, n int) string {
	var idx []moe.Cause
	for _, c := range moe.Causes() {
		if b[c] > 0 {
			idx = append(idx, c)
		}
	}
	slices.SortStableFunc(idx, func(x, y moe.Cause) int {
		switch {
		case b[x] > b[y]:
			return -1
		case b[x] < b[y]:
			return 1
		}
		return 0
	})
	var parts []string
	for _, i := range idx[:min(n, len(idx))] {
		parts = append(parts, moe.Cause(i).String()+" "+report.Num(b[i]))
	}
	return strings.Join(parts, ", ")
}

// ---- table ----

// tableSink streams the per-layer table with column widths fixed up
// front (figures print with three significant digits, so they fit), then
// renders the aggregate tables.
type tableSink struct {
	w     io.Writer
	h     report.Header
	cols  []string
	num   []bool
	width []int
}

func newTableSink(w io.Writer, h report.Header, rt ReplayTable) *tableSink {
	t := &tableSink{w: w, h: h,
		cols: []string{"step", "layer", "tokens/rank", "preset", "phase", "mean µs", "p50 µs", "p99 µs", "max µs", "issue done µs", "slowest rank",
			"rank imb", "expert imb", "remote", "bound by", "slowest rank's largest causes (µs)"},
		num: []bool{true, true, true, false, false, true, true, true, true, true, true, true, true, true, false, false},
	}
	digits := func(n int) int { return len(strconv.Itoa(max(n-1, 0))) }
	t.width = make([]int, len(t.cols))
	for i, c := range t.cols {
		t.width[i] = max(utf8.RuneCountInString(c), 7)
	}
	t.width[0] = max(4, digits(max(rt.Steps, 1000)))
	t.width[1] = max(5, digits(rt.Layers))
	t.width[4] = len("dispatch")
	t.width[3] = len("preset")
	for _, p := range rt.Presets {
		t.width[3] = max(t.width[3], utf8.RuneCountInString(p))
	}
	t.width[14] = len("dci_switch")
	return t
}

func (t *tableSink) line(cells []string) error {
	var b strings.Builder
	for i, c := range cells {
		pad := strings.Repeat(" ", max(0, t.width[i]-utf8.RuneCountInString(c)))
		if i > 0 {
			b.WriteString("  ")
		}
		switch {
		case t.num[i]:
			b.WriteString(pad + c)
		case i == len(cells)-1:
			b.WriteString(c)
		default:
			b.WriteString(c + pad)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *tableSink) Begin() error {
	var b strings.Builder
	for _, l := range t.h.Lines() {
		b.WriteString("# " + l + "\n")
	}
	b.WriteString("\nPer (step, layer): time over ranks (µs); the slowest rank; load received (imbalance = max/mean selections per rank and per expert; remote = share of selections leaving the node); what bounds the phase (mean over ranks) and the slowest rank's critical path:\n\n")
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return err
	}
	if err := t.line(t.cols); err != nil {
		return err
	}
	rule := make([]string, len(t.cols))
	for i := range rule {
		rule[i] = strings.Repeat("-", t.width[i])
	}
	return t.line(rule)
}

func remoteShare(loc [3]int64) float64 {
	tot := loc[0] + loc[1] + loc[2]
	if tot == 0 {
		return 0
	}
	return float64(loc[moe.Remote]) / float64(tot)
}

func (t *tableSink) Group(g *replay.Group) error {
	for _, run := range g.Runs {
		for _, ph := range modelPhases(run.Result) {
			p := ph.p
			slow, path := "", ""
			if r := replay.SlowestRank(p); r >= 0 {
				slow, path = strconv.Itoa(r), largestCauses(p.Ranks[r].Breakdown, 3)
			}
			if err := t.line([]string{strconv.Itoa(g.Step), strconv.Itoa(g.Layer), strconv.Itoa(g.Shape.Tokens), run.Preset.Name, ph.name,
				report.Num(p.Time.Mean), report.Num(p.Time.P50), report.Num(p.Time.P99), report.Num(p.Time.Max), report.Num(p.IssueDone.Max), slow,
				report.Num(g.RankLoad.Imbalance), report.Num(g.ExpertLoad.Imbalance), report.Pct(remoteShare(g.Traffic.ByLocality)),
				boundOrFailed(p), path}); err != nil {
				return err
			}
		}
		if tl := run.Result.Compute; tl != nil {
			// The layer with its compute: the hottest rank in the slowest
			// rank's column, the critical path's longest step as the bound.
			if err := t.line([]string{strconv.Itoa(g.Step), strconv.Itoa(g.Layer), strconv.Itoa(g.Shape.Tokens), run.Preset.Name, "layer+experts",
				report.Num(tl.LayerUs), "", "", "", "", strconv.Itoa(tl.HotRank), "", "", "", tl.BoundBy,
				fmt.Sprintf("exposed %s, compute %s", report.Num(tl.ExposedUs), report.Num(tl.ComputeUs))}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *tableSink) End(a *replay.Aggregate) error {
	w := t.w
	fmt.Fprintf(w, "\nOver %d (step, layer) groups; layer time = the slowest rank's (µs):\n\n", a.Groups)
	if err := aggTimeTable(a).WriteText(w, nil); err != nil {
		return err
	}
	if t := aggComputeTable(a); len(t.Rows) > 0 {
		io.WriteString(w, "\nThe layers with their experts' compute (µs, summed over the replay's layers; exposed: the communication compute does not hide):\n\n")
		if err := t.WriteText(w, nil); err != nil {
			return err
		}
	}
	io.WriteString(w, "\nCritical path by cause (µs, mean over layers; over all ranks, and of each layer's slowest rank):\n\n")
	if err := aggBreakdownTable(a).WriteText(w, nil); err != nil {
		return err
	}
	io.WriteString(w, "\nLoad received, in selections (imbalance = max/mean; totals over the trace, and per layer):\n\n")
	if err := aggLoadTable(a).WriteText(w, nil); err != nil {
		return err
	}
	loc := a.Locality
	tot := max(loc[0]+loc[1]+loc[2], 1)
	_, err := fmt.Fprintf(w, "\nSelections by locality: same rank %d (%s), same node %d (%s), remote %d (%s); %d tokens, %d selections\n",
		loc[moe.SameRank], report.Pct(float64(loc[moe.SameRank])/float64(tot)), loc[moe.SameNode], report.Pct(float64(loc[moe.SameNode])/float64(tot)),
		loc[moe.Remote], report.Pct(float64(loc[moe.Remote])/float64(tot)), a.Tokens, a.Selections)
	if err != nil {
		return err
	}
	if gc := a.GroupLimit; gc.Limit.On() {
		_, err := fmt.Fprintf(w, "Group limit %s: %d of %d tokens (%s) span more groups, up to %d (replayed as recorded)\n",
			gc.Limit, gc.Violations, gc.Tokens, report.Pct(float64(gc.Violations)/float64(max(gc.Tokens, 1))), gc.MaxGroups)
		if err != nil {
			return err
		}
	}
	for _, pa := range a.Presets {
		if !pa.Correct {
			if _, err := fmt.Fprintf(w, "! %s: some layers failed the checks (see the json output's problems)\n", pa.Preset.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

func slowestText(rc []replay.RankCount, n int) string {
	var parts []string
	for _, c := range rc[:min(n, len(rc))] {
		parts = append(parts, fmt.Sprintf("%d (%d)", c.Rank, c.Layers))
	}
	if len(rc) > n {
		parts = append(parts, "…")
	}
	return strings.Join(parts, ", ")
}

func aggTimeTable(a *replay.Aggregate) *report.Table {
	t := &report.Table{
		Columns: []string{"preset", "transport", "phase", "layers", "mean µs", "p50 µs", "p99 µs", "max µs", "rank mean µs", "issue done µs", "slowest ranks (layers)", "slowest rank bound by", "correct"},
		Numeric: []bool{false, false, false, true, true, true, true, true, true, true, false, false, false},
	}
	n := float64(max(a.Groups, 1))
	for _, pa := range a.Presets {
		for i := range pa.Phase {
			p := &pa.Phase[i]
			s := p.Layer.Summary()
			ok := "yes"
			if !pa.Correct {
				ok = "NO"
			}
			t.Rows = append(t.Rows, []string{pa.Preset.Name, pa.Preset.Mechanism, phaseNames[i], strconv.Itoa(p.Layer.N()),
				report.Num(s.Mean), report.Num(s.P50), report.Num(s.P99), report.Num(s.Max), report.Num(p.RankMean / n), report.Num(p.IssueDone / n),
				slowestText(p.SlowestRanks(), 3), p.SlowestBreakdown(a.Groups).Largest().String(), ok})
		}
	}
	return t
}

func aggComputeTable(a *replay.Aggregate) *report.Table {
	t := &report.Table{
		Columns: []string{"preset", "transport", "layers", "layers µs", "compute µs", "exposed µs", "exposed %", "hottest ranks (layers)"},
		Numeric: []bool{false, false, true, true, true, true, true, false},
	}
	for _, pa := range a.Presets {
		c := &pa.Compute
		if c.Layers == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{pa.Preset.Name, pa.Preset.Mechanism, strconv.Itoa(c.Layers), report.Num(c.LayerUs),
			report.Num(c.ComputeUs), report.Num(c.ExposedUs), report.Num(100 * c.ExposedUs / max(c.LayerUs, 1e-9)), slowestText(c.HottestRanks(), 3)})
	}
	return t
}

func aggBreakdownTable(a *replay.Aggregate) *report.Table {
	t := &report.Table{Columns: append([]string{"preset", "phase", "of"}, moe.CauseNames()...), Numeric: []bool{false, false, false}}
	for range moe.CauseNames() {
		t.Numeric = append(t.Numeric, true)
	}
	for _, pa := range a.Presets {
		for i := range pa.Phase {
			p := &pa.Phase[i]
			for _, b := range []struct {
				of string
				b  moe.Breakdown
			}{{"all ranks", p.MeanBreakdown(a.Groups)}, {"slowest rank", p.SlowestBreakdown(a.Groups)}} {
				row := []string{pa.Preset.Name, phaseNames[i], b.of}
				for _, v := range b.b.Values() {
					row = append(row, report.Num(v))
				}
				t.Rows = append(t.Rows, row)
			}
		}
	}
	return t
}

func aggLoadTable(a *replay.Aggregate) *report.Table {
	t := &report.Table{
		Columns: []string{"received by", "total max", "total mean", "imbalance", "hottest", "its share", "layer imbalance mean", "worst", "worst at (step, layer)"},
		Numeric: []bool{false, true, true, true, true, true, true, true, false},
	}
	for _, r := range []struct {
		name  string
		v     []int64
		imb   *summary.Stream
		worst [2]int
	}{{"rank", a.PerRank, &a.RankImbalance, a.WorstRank}, {"expert", a.PerExpert, &a.ExpertImbalance, a.WorstExpert}} {
		l := moe.LoadOf(r.v)
		share := 0.0
		if a.Selections > 0 {
			share = float64(l.Max) / float64(a.Selections)
		}
		t.Rows = append(t.Rows, []string{r.name, strconv.FormatInt(l.Max, 10), report.Num(l.Mean), report.Num(l.Imbalance), strconv.Itoa(l.ArgMax),
			report.Pct(share), report.Num(r.imb.Mean()), report.Num(r.imb.Max()), fmt.Sprintf("(%d, %d)", r.worst[0], r.worst[1])})
	}
	return t
}

// ---- JSON ----

// Replay is replay's document as its JSON holds it: every (step, layer)
// on every preset, and the aggregate.
type Replay struct {
	Header    report.Header   `json:"header"`
	Layers    []ReplayLayer   `json:"layers"`
	Aggregate ReplayAggregate `json:"aggregate"`
}

// Head is the document's header.
func (d *Replay) Head() report.Header { return d.Header }

// Load is one load vector's summary.
type Load struct {
	Max       int64   `json:"max"`
	ArgMax    int     `json:"argmax"`
	Mean      float64 `json:"mean"`
	Imbalance float64 `json:"imbalance"`
}

func loadOf(l moe.Load) Load { return Load{l.Max, l.ArgMax, l.Mean, l.Imbalance} }

type Locality struct {
	SameRank int64 `json:"same_rank"`
	SameNode int64 `json:"same_node"`
	Remote   int64 `json:"remote"`
}

func localityOf(l [3]int64) Locality {
	return Locality{l[moe.SameRank], l[moe.SameNode], l[moe.Remote]}
}

type Slowest struct {
	Rank      int                `json:"rank"`
	TimeUs    float64            `json:"time_us"`
	Breakdown map[string]float64 `json:"breakdown"`
}

// ReplayLayer is one (step, layer) on one preset; dispatch and combine carry
// the same keys as run's JSON.
type ReplayLayer struct {
	Step        int    `json:"step"`
	Layer       int    `json:"layer"`
	Transport   string `json:"transport"`
	Preset      string `json:"preset"`
	Mode        string `json:"mode"`
	Ranks       int    `json:"ranks"`
	GPUsPerNode int    `json:"gpus_per_node"`
	Tokens      int    `json:"tokens"`
	TotalTokens int    `json:"total_tokens"`
	Experts     int    `json:"experts"`
	TopK        int    `json:"topk"`
	Hidden      int    `json:"hidden"`
	NVLink      bool   `json:"nvlink"`
	Dispatch    Phase  `json:"dispatch"`
	Combine     Phase  `json:"combine"`
	Slowest     struct {
		Dispatch Slowest `json:"dispatch"`
		Combine  Slowest `json:"combine"`
	} `json:"slowest_rank"`
	Load struct {
		PerRank   Load     `json:"per_rank"`
		PerExpert Load     `json:"per_expert"`
		Locality  Locality `json:"locality"`
	} `json:"load"`
	GroupLimit *GroupLimit `json:"group_limit,omitempty"`
	RouteHash  string      `json:"route_hash"`
	BoundBy    string      `json:"bound_by"`
	Correct    bool        `json:"correct"`
	Problems   []string    `json:"problems,omitempty"`
	// Faults the layer ran under and the failure they caused, if any.
	Faults  string   `json:"faults,omitempty"`
	Failure *Failure `json:"failure,omitempty"`
	// Compute is the layer with its experts' compute, when asked for.
	Compute *Compute `json:"compute,omitempty"`
}

// GroupLimit is how the tokens sat against the group limit.
type GroupLimit struct {
	Groups     int   `json:"expert_groups"`
	TopK       int   `json:"topk_groups"`
	Tokens     int64 `json:"tokens"`
	Violations int64 `json:"tokens_over_limit"`
	MaxGroups  int   `json:"max_groups_per_token"`
}

func groupLimitOf(c moe.GroupCheck) *GroupLimit {
	if !c.Limit.On() {
		return nil
	}
	return &GroupLimit{c.Limit.Groups, c.Limit.TopK, c.Tokens, c.Violations, c.MaxGroups}
}

type AggPhase struct {
	LayerUs      moe.Summary        `json:"layer_time_us"`
	RankMeanUs   float64            `json:"rank_mean_us"`
	IssueDoneUs  float64            `json:"issue_done_us"`
	Breakdown    map[string]float64 `json:"breakdown"`
	BoundBy      string             `json:"bound_by"`
	SlowestRanks []replay.RankCount `json:"slowest_ranks"`
	// SlowestBreakdown is the critical path of each layer's slowest rank,
	// averaged over layers: what sets the layer time.
	SlowestBreakdown map[string]float64 `json:"slowest_rank_breakdown"`
}

type AggTransport struct {
	Transport string      `json:"transport"`
	Preset    string      `json:"preset"`
	Layers    int         `json:"layers"`
	Correct   bool        `json:"correct"`
	Dispatch  AggPhase    `json:"dispatch"`
	Combine   AggPhase    `json:"combine"`
	Compute   *AggCompute `json:"compute,omitempty"`
}

// AggCompute is a preset's layers with their experts' compute over the
// replay: the sums over its layers (a step's time when the trace is one
// step) and the ranks whose experts were the hottest.
type AggCompute struct {
	Layers       int                `json:"layers"`
	LayerUs      float64            `json:"layers_us"`
	ComputeUs    float64            `json:"compute_us"`
	ExposedUs    float64            `json:"exposed_us"`
	HottestRanks []replay.RankCount `json:"hottest_ranks"`
}

func aggComputeOf(c *replay.ComputeAggregate) *AggCompute {
	if c.Layers == 0 {
		return nil
	}
	return &AggCompute{Layers: c.Layers, LayerUs: c.LayerUs, ComputeUs: c.ComputeUs, ExposedUs: c.ExposedUs, HottestRanks: c.HottestRanks()}
}

type AggLoad struct {
	Total          Load    `json:"total"`
	ImbalanceMean  float64 `json:"layer_imbalance_mean"`
	ImbalanceWorst float64 `json:"layer_imbalance_worst"`
	WorstAt        [2]int  `json:"worst_at_step_layer"`
	// Selections are the totals behind Total: what each rank (expert)
	// received over the replay.
	Selections []int64 `json:"selections"`
}

type ReplayAggregate struct {
	Layers     int            `json:"layers"`
	Tokens     int64          `json:"tokens"`
	Selections int64          `json:"selections"`
	GroupLimit *GroupLimit    `json:"group_limit,omitempty"`
	Transports []AggTransport `json:"transports"`
	Load       struct {
		PerRank   AggLoad  `json:"per_rank"`
		PerExpert AggLoad  `json:"per_expert"`
		Locality  Locality `json:"locality"`
	} `json:"load"`
}

func slowestOf(p *moe.Phase) Slowest {
	r := replay.SlowestRank(p)
	if r < 0 {
		return Slowest{Rank: -1}
	}
	return Slowest{Rank: r, TimeUs: p.Ranks[r].Ready.Us(), Breakdown: p.Ranks[r].Breakdown.Map()}
}

// jsonSink writes {"header": …, "layers": [ … ], "aggregate": …} with one
// layer object written per group as it completes.
type jsonSink struct {
	w     io.Writer
	h     report.Header
	count int
}

func (j *jsonSink) Begin() error {
	hb, err := json.MarshalIndent(j.h, "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(j.w, "{\n  \"header\": %s,\n  \"layers\": [", hb)
	return err
}

func (j *jsonSink) Group(g *replay.Group) error {
	for _, run := range g.Runs {
		r, s := run.Result, g.Shape
		l := ReplayLayer{Step: g.Step, Layer: g.Layer, Transport: run.Preset.Mechanism, Preset: run.Preset.Name, Mode: r.Mode.String(),
			Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, Tokens: s.Tokens, TotalTokens: g.Tokens, Experts: s.Physical(), TopK: s.TopK, Hidden: s.Hidden,
			NVLink: r.NVLink, Dispatch: PhaseOf(&r.Dispatch), Combine: PhaseOf(&r.Combine),
			RouteHash: r.RouteHash, BoundBy: r.BoundBy, Correct: r.Correct, Problems: r.Problems, GroupLimit: groupLimitOf(g.Groups)}
		l.Slowest.Dispatch, l.Slowest.Combine = slowestOf(&r.Dispatch), slowestOf(&r.Combine)
		l.Faults, l.Failure = FaultsOf(r), ResultFailure(r)
		l.Dispatch.Failure, l.Combine.Failure = FailureOf("dispatch", r.Dispatch.Failure), FailureOf("combine", r.Combine.Failure)
		l.Load.PerRank, l.Load.PerExpert = loadOf(g.RankLoad), loadOf(g.ExpertLoad)
		l.Load.Locality = localityOf(g.Traffic.ByLocality)
		l.Compute = ComputeOf(r.Compute, 1, s.Tokens)
		b, err := json.MarshalIndent(l, "    ", "  ")
		if err != nil {
			return err
		}
		sep := ","
		if j.count == 0 {
			sep = ""
		}
		j.count++
		if _, err := fmt.Fprintf(j.w, "%s\n    %s", sep, b); err != nil {
			return err
		}
	}
	return nil
}

func AggregateOf(a *replay.Aggregate) ReplayAggregate {
	out := ReplayAggregate{Layers: a.Groups, Tokens: a.Tokens, Selections: a.Selections, GroupLimit: groupLimitOf(a.GroupLimit), Transports: []AggTransport{}}
	n := float64(max(a.Groups, 1))
	for _, pa := range a.Presets {
		t := AggTransport{Transport: pa.Preset.Mechanism, Preset: pa.Preset.Name, Layers: a.Groups, Correct: pa.Correct, Compute: aggComputeOf(&pa.Compute)}
		for i, dst := range []*AggPhase{&t.Dispatch, &t.Combine} {
			p := &pa.Phase[i]
			b := p.MeanBreakdown(a.Groups)
			*dst = AggPhase{LayerUs: p.Layer.Summary(), RankMeanUs: p.RankMean / n, IssueDoneUs: p.IssueDone / n,
				Breakdown: b.Map(), BoundBy: b.Largest().String(), SlowestRanks: p.SlowestRanks(), SlowestBreakdown: p.SlowestBreakdown(a.Groups).Map()}
			if dst.SlowestRanks == nil {
				dst.SlowestRanks = []replay.RankCount{}
			}
		}
		out.Transports = append(out.Transports, t)
	}
	out.Load.PerRank = AggLoad{Total: loadOf(moe.LoadOf(a.PerRank)), ImbalanceMean: a.RankImbalance.Mean(), ImbalanceWorst: a.RankImbalance.Max(), WorstAt: a.WorstRank,
		Selections: append([]int64{}, a.PerRank...)}
	out.Load.PerExpert = AggLoad{Total: loadOf(moe.LoadOf(a.PerExpert)), ImbalanceMean: a.ExpertImbalance.Mean(), ImbalanceWorst: a.ExpertImbalance.Max(), WorstAt: a.WorstExpert,
		Selections: append([]int64{}, a.PerExpert...)}
	out.Load.Locality = localityOf(a.Locality)
	return out
}

func (j *jsonSink) End(a *replay.Aggregate) error {
	b, err := json.MarshalIndent(AggregateOf(a), "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(j.w, "\n  ],\n  \"aggregate\": %s\n}\n", b)
	return err
}

// ---- CSV ----

// csvSink writes one record per (step, layer, preset, phase) with every
// figure at full precision, then aggregate records (scope "aggregate",
// figures over layers of the layer time, the slowest rank's).
type csvSink struct {
	w   *csv.Writer
	raw io.Writer
	h   report.Header
}

func csvColumns() []string {
	cols := []string{"scope", "step", "layer", "layers", "preset", "transport", "mode", "ranks", "gpus_per_node", "tokens", "experts", "topk", "hidden", "nvlink",
		"phase", "over", "mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "algo_gbps", "deepep_algo_gbps", "scaleout_gbps", "nvlink_gbps", "messages", "bound_by"}
	for _, c := range moe.CauseNames() {
		cols = append(cols, "breakdown_"+c+"_us")
	}
	return append(cols, "slowest_rank", "slowest_rank_us", "slowest_rank_layers", "rank_load_max", "rank_load_mean", "rank_imbalance",
		"expert_load_max", "expert_load_mean", "expert_imbalance", "same_rank", "same_node", "remote", "route_hash", "correct",
		"tokens_over_group_limit", "max_groups_per_token")
}

func (c *csvSink) Begin() error {
	for _, l := range c.h.Lines() {
		if _, err := io.WriteString(c.raw, "# "+l+"\n"); err != nil {
			return err
		}
	}
	c.w.Write(csvColumns())
	c.w.Flush()
	return c.w.Error()
}

func loadCells(rank, expert moe.Load, loc [3]int64) []string {
	return []string{strconv.FormatInt(rank.Max, 10), csvNum(rank.Mean), csvNum(rank.Imbalance),
		strconv.FormatInt(expert.Max, 10), csvNum(expert.Mean), csvNum(expert.Imbalance),
		strconv.FormatInt(loc[moe.SameRank], 10), strconv.FormatInt(loc[moe.SameNode], 10), strconv.FormatInt(loc[moe.Remote], 10)}
}

func (c *csvSink) Group(g *replay.Group) error {
	s := g.Shape
	for _, run := range g.Runs {
		r := run.Result
		for _, ph := range modelPhases(r) {
			p := ph.p
			row := []string{"layer", strconv.Itoa(g.Step), strconv.Itoa(g.Layer), "1", run.Preset.Name, run.Preset.Mechanism, r.Mode.String(),
				strconv.Itoa(s.Ranks), strconv.Itoa(s.GPUsPerNode), strconv.Itoa(s.Tokens), strconv.Itoa(s.Physical()), strconv.Itoa(s.TopK),
				strconv.Itoa(s.Hidden), strconv.FormatBool(r.NVLink), ph.name, "ranks",
				csvNum(p.Time.Mean), csvNum(p.Time.Min), csvNum(p.Time.Max), csvNum(p.Time.P50), csvNum(p.Time.P99), csvNum(p.IssueDone.Max),
				csvNum(p.AlgoGBps), csvNum(p.DeepEPGBps), csvNum(p.ScaleOutGBps), csvNum(p.NVLinkGBps), strconv.FormatInt(p.Messages, 10), p.BoundBy}
			for _, v := range p.Breakdown.Values() {
				row = append(row, csvNum(v))
			}
			sl := slowestOf(p)
			row = append(row, strconv.Itoa(sl.Rank), csvNum(sl.TimeUs), "")
			row = append(row, loadCells(g.RankLoad, g.ExpertLoad, g.Traffic.ByLocality)...)
			row = append(row, r.RouteHash, strconv.FormatBool(r.Correct))
			row = append(row, groupCells(g.Groups)...)
			c.w.Write(row)
		}
	}
	c.w.Flush()
	return c.w.Error()
}

func (c *csvSink) End(a *replay.Aggregate) error {
	s := a.Shape
	n := float64(max(a.Groups, 1))
	for _, pa := range a.Presets {
		for i := range pa.Phase {
			p := &pa.Phase[i]
			sum := p.Layer.Summary()
			b := p.MeanBreakdown(a.Groups)
			row := []string{"aggregate", "", "", strconv.Itoa(a.Groups), pa.Preset.Name, pa.Preset.Mechanism, a.Mode.String(),
				strconv.Itoa(s.Ranks), strconv.Itoa(s.GPUsPerNode), "", strconv.Itoa(s.Physical()), strconv.Itoa(s.TopK),
				strconv.Itoa(s.Hidden), strconv.FormatBool(a.NVLink), phaseNames[i], "layers",
				csvNum(sum.Mean), csvNum(sum.Min), csvNum(sum.Max), csvNum(sum.P50), csvNum(sum.P99), csvNum(p.IssueDone / n),
				"", "", "", "", "", b.Largest().String()}
			for _, v := range b.Values() {
				row = append(row, csvNum(v))
			}
			rc := p.SlowestRanks()
			if len(rc) > 0 {
				row = append(row, strconv.Itoa(rc[0].Rank), "", strconv.Itoa(rc[0].Layers))
			} else {
				row = append(row, "", "", "")
			}
			row = append(row, loadCells(moe.LoadOf(a.PerRank), moe.LoadOf(a.PerExpert), a.Locality)...)
			row = append(row, "", strconv.FormatBool(pa.Correct))
			row = append(row, groupCells(a.GroupLimit)...)
			c.w.Write(row)
		}
	}
	c.w.Flush()
	return c.w.Error()
}

// groupCells are the group-limit CSV cells, empty when not checked.
func groupCells(c moe.GroupCheck) []string {
	if !c.Limit.On() {
		return []string{"", ""}
	}
	return []string{strconv.FormatInt(c.Violations, 10), strconv.Itoa(c.MaxGroups)}
}
