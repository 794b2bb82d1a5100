package results

import (
	"fmt"
	"io"

	"moebench/fault"
	"moebench/internal/plot"
	"moebench/internal/report"
	"moebench/internal/shard"
	"moebench/moe"
	"moebench/transport"
)

// Layer is run's and sweep's document: one Run per point and preset.
type Layer struct {
	Header  report.Header `json:"header"`
	Results []Run         `json:"results"`
}

// Head is the document's header.
func (d *Layer) Head() report.Header { return d.Header }

// One is the document's one run, refused when there is not exactly one
// or when its checks failed: a prediction rests on one correct run.
func (d *Layer) One() (Run, error) {
	if len(d.Results) != 1 {
		return Run{}, fmt.Errorf("%d results, want one", len(d.Results))
	}
	if r := d.Results[0]; !r.Correct {
		return Run{}, fmt.Errorf("the layer's checks failed: %v", r.Problems)
	}
	return d.Results[0], nil
}

// Phase is a phase as the run JSON promises it.
type Phase struct {
	MeanUs         float64            `json:"mean_us"`
	MinUs          float64            `json:"min_us"`
	MaxUs          float64            `json:"max_us"`
	P50Us          float64            `json:"p50_us"`
	P99Us          float64            `json:"p99_us"`
	DeliveredUs    moe.Summary        `json:"last_delivered_us"`
	IssueDoneUs    float64            `json:"issue_done_us"`
	AlgoGBps       float64            `json:"algo_gbps"`
	DeepEPGBps     float64            `json:"deepep_algo_gbps"`
	ScaleOutGBps   float64            `json:"scaleout_gbps"`
	NVLinkGBps     float64            `json:"nvlink_gbps"`
	ScaleOutBytes  int64              `json:"scaleout_bytes"`
	NVLinkBytes    int64              `json:"nvlink_bytes"`
	Messages       int64              `json:"messages"`
	BackgroundMsgs int64              `json:"background_messages"`
	Breakdown      map[string]float64 `json:"breakdown"`
	BoundBy        string             `json:"bound_by"`
	// Failure is why the phase failed under the layer's faults, if it did.
	Failure *Failure `json:"failure,omitempty"`
}

// PhaseOf is a modelled phase's document.
func PhaseOf(p *moe.Phase) Phase {
	return Phase{
		MeanUs: p.Time.Mean, MinUs: p.Time.Min, MaxUs: p.Time.Max, P50Us: p.Time.P50, P99Us: p.Time.P99,
		DeliveredUs: p.Delivered, IssueDoneUs: p.IssueDone.Max, AlgoGBps: p.AlgoGBps, DeepEPGBps: p.DeepEPGBps,
		ScaleOutGBps: p.ScaleOutGBps, NVLinkGBps: p.NVLinkGBps, ScaleOutBytes: p.ScaleOutBytes, NVLinkBytes: p.NVLinkBytes,
		Messages: p.Messages, BackgroundMsgs: p.Background, Breakdown: p.Breakdown.Map(), BoundBy: p.BoundBy,
	}
}

// Bound is the phase's bound-by cell: "failed" when it failed.
func (p *Phase) Bound() string {
	if p.Failure != nil {
		return "failed"
	}
	return p.BoundBy
}

// Knob is one swept knob's value at a point: its column and value.
type Knob struct{ Name, Value string }

// Run is one layer run of one preset.
type Run struct {
	Engine      string            `json:"engine"`
	Transport   string            `json:"transport"`
	Preset      string            `json:"preset"`
	Workload    string            `json:"workload"`
	Mode        string            `json:"mode"`
	Ranks       int               `json:"ranks"`
	GPUsPerNode int               `json:"gpus_per_node"`
	Tokens      int               `json:"tokens"`
	Experts     int               `json:"experts"`
	TopK        int               `json:"topk"`
	Hidden      int               `json:"hidden"`
	NVLink      bool              `json:"nvlink"`
	NumSMs      int               `json:"num_sms"`
	QPsPerPeer  int               `json:"qps_per_peer_requested"`
	Background  string            `json:"background"`
	Sets        []string          `json:"sets,omitempty"`
	Dispatch    Phase             `json:"dispatch"`
	Combine     Phase             `json:"combine"`
	Resources   moe.Resources     `json:"resources"`
	RouteHash   string            `json:"route_hash"`
	BoundBy     string            `json:"bound_by"`
	Correct     bool              `json:"correct"`
	Problems    []string          `json:"problems,omitempty"`
	Events      uint64            `json:"events"`
	Knobs       map[string]string `json:"swept,omitempty"`
	// Limits is the headroom against each limit the point is under;
	// one with over set was run past only because it was overridden.
	Limits []moe.Usage `json:"limits,omitempty"`

	// The element types of the two paths, as --dispatch-dtype and
	// --combine-dtype name them.
	DispatchDType string `json:"dispatch_dtype"`
	CombineDType  string `json:"combine_dtype"`

	// Compute is the layer with its experts' compute, when asked for.
	Compute *Compute `json:"compute,omitempty"`

	// Faults the layer ran under (--fault's syntax) and their seed, and
	// the failure they caused, if any.
	Faults    string   `json:"faults,omitempty"`
	FaultSeed uint64   `json:"fault_seed,omitempty"`
	Failure   *Failure `json:"failure,omitempty"`

	// What the tables show beyond the JSON: the swept knobs in their
	// columns' order, every problem counted, and the mechanisms' knob
	// settings (the CSV's columns).
	Swept        []Knob             `json:"-"`
	ProblemCount int                `json:"-"`
	Settings     transport.Settings `json:"-"`
}

// RunInfo is what a run's document carries beyond the model's result:
// what the command line asked for.
type RunInfo struct {
	Preset, Mechanism string
	Workload          string
	QPsPerPeer        int
	Background        string
	Sets              []string
	Settings          transport.Settings
	Swept             []Knob
	Limits            []moe.Usage
	// Layers is the MoE layers of a step, for a run with compute.
	Layers int
}

// RunOf is a modelled run's document.
func RunOf(r *moe.Result, in RunInfo) Run {
	s := r.Shape
	run := Run{
		Engine: "model", Transport: in.Mechanism, Preset: in.Preset, Workload: in.Workload, Mode: r.Mode.String(),
		Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, Tokens: s.Tokens, Experts: s.Physical(), TopK: s.TopK, Hidden: s.Hidden,
		NVLink: r.NVLink, NumSMs: r.NumSMs, QPsPerPeer: in.QPsPerPeer, Background: in.Background, Sets: in.Sets,
		Dispatch: PhaseOf(&r.Dispatch), Combine: PhaseOf(&r.Combine), Resources: r.Resources,
		RouteHash: r.RouteHash, BoundBy: r.BoundBy, Correct: r.Correct, Problems: r.Problems, Events: r.Events,
		DispatchDType: s.Dispatch.String(), CombineDType: s.Combine.String(), Limits: in.Limits,
		Swept: in.Swept, ProblemCount: r.ProblemCount, Settings: in.Settings,
	}
	if run.Faults = FaultsOf(r); run.Faults != "" {
		run.FaultSeed, run.Failure = r.Faults.Seed, ResultFailure(r)
		run.Dispatch.Failure, run.Combine.Failure = FailureOf("dispatch", r.Dispatch.Failure), FailureOf("combine", r.Combine.Failure)
	}
	run.Knobs = knobMap(in.Swept)
	run.Compute = ComputeOf(r.Compute, max(1, in.Layers), s.Tokens)
	return run
}

// knobMap is the swept knobs for the JSON; nil when none.
func knobMap(k []Knob) map[string]string {
	if len(k) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, x := range k {
		m[x.Name] = x.Value
	}
	return m
}

// phases are the run's two phases by name.
func (r *Run) phases() []namedPhase {
	return []namedPhase{{"dispatch", &r.Dispatch}, {"combine", &r.Combine}}
}

type namedPhase struct {
	name string
	p    *Phase
}

// Failure is a failed phase's failure, as the JSON has it.
type Failure struct {
	Phase     string  `json:"phase"`
	Mechanism string  `json:"mechanism"`
	Rank      int     `json:"rank"`
	Peer      int     `json:"peer"`
	NIC       int     `json:"nic"`
	QP        int     `json:"qp"`
	AtUs      float64 `json:"at_us"`
	Retries   int     `json:"retries"`
	Status    string  `json:"status"`
	Reason    string  `json:"reason"`
	Message   string  `json:"message"`
}

// ResultFailure is r's failure, its first phase's that failed; nil when
// it completed.
func ResultFailure(r *moe.Result) *Failure {
	phase, f := r.Failed()
	return FailureOf(phase, f)
}

// FailureOf is phase's failure f, nil when none.
func FailureOf(phase string, f *fault.Failure) *Failure {
	if f == nil {
		return nil
	}
	return &Failure{Phase: phase, Mechanism: f.Mechanism, Rank: f.Rank, Peer: f.Peer, NIC: f.NIC, QP: f.QP,
		AtUs: f.At.Us(), Retries: f.Retries, Status: f.Status, Reason: f.Reason, Message: f.Error()}
}

// FaultsOf is the faults a result ran under, as --fault writes them; ""
// when healthy.
func FaultsOf(r *moe.Result) string {
	if r.Faults.Empty() {
		return ""
	}
	return r.Faults.String()
}

// WriteText is the table format: times and rates, the critical path by
// cause, resources and checks, the headroom against each limit, then a
// line for each problem and each failed phase.
func (d *Layer) WriteText(w io.Writer) error {
	if err := mainTable(d.Results).WriteText(w, &d.Header); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nCritical path by cause (µs, mean over ranks; the largest bounds the phase):\n\n"); err != nil {
		return err
	}
	if err := breakdownTable(d.Results).WriteText(w, nil); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nResources and checks:\n\n"); err != nil {
		return err
	}
	if err := resourceTable(d.Results).WriteText(w, nil); err != nil {
		return err
	}
	if t := computeTable(d.Results); len(t.Rows) > 0 {
		if _, err := fmt.Fprintf(w, "\nThe layer with its experts' compute (µs; exposed: the communication compute does not hide):\n\n"); err != nil {
			return err
		}
		if err := t.WriteText(w, nil); err != nil {
			return err
		}
	}
	if t := limitTable(d.Results); len(t.Rows) > 0 {
		if _, err := io.WriteString(w, "\nHeadroom against each limit (GPU memory, NIC queues, the library's own):\n\n"); err != nil {
			return err
		}
		if err := t.WriteText(w, nil); err != nil {
			return err
		}
	}
	for _, r := range d.Results {
		for _, p := range r.Problems {
			if _, err := fmt.Fprintf(w, "! %s: %s\n", r.Preset, p); err != nil {
				return err
			}
		}
	}
	for _, r := range d.Results {
		for _, ph := range r.phases() {
			if f := ph.p.Failure; f != nil {
				if _, err := fmt.Fprintf(w, "! %s: %s failed under faults %s: %s\n", r.Preset, ph.name, r.Faults, f.Message); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// WriteCSV is the csv format: a record per run and phase.
func (d *Layer) WriteCSV(w io.Writer) error {
	return csvTable(d.Results).WriteCSV(w, &d.Header)
}

// Figure is run's plot: the critical path of each preset and phase,
// stacked by cause; a sweep's is the layer time against the first swept
// knob.
func (d *Layer) Figure() plot.Figure {
	if d.Header.Command == "sweep" {
		return sweepFigure(d)
	}
	return runFigure(d)
}

// LayerShard is one shard of a sweep: its slice of the runs, for merge.
type LayerShard struct {
	Header  report.Header `json:"header"`
	Shard   shard.Info    `json:"shard"`
	Results []Run         `json:"results"`
}

// Head is the document's header.
func (d *LayerShard) Head() report.Header { return d.Header }
