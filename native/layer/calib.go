package layer

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/native"
	"moebench/profile"
	"moebench/transport/preset"
)

// GridPoint is one native run of the calibration grid.
type GridPoint struct {
	Transport  string `json:"transport"` // a preset's name, or "direct"
	Ranks      int    `json:"ranks"`     // virtual ranks on one GPU
	Tokens     int    `json:"tokens"`
	Hidden     int    `json:"hidden"`
	TopK       int    `json:"topk"`
	Experts    int    `json:"experts"`
	SMsPerRank int    `json:"sms_per_rank,omitempty"` // 0: the engine's choice
	// Normal runs DeepEP's intranode normal mode (direct path), Chunk
	// tokens per tail (0: the default).
	Normal bool `json:"normal,omitempty"`
	Chunk  int  `json:"chunk,omitempty"`
	// GPUs > 1 spreads the ranks over that many GPUs, one each: the
	// direct path then crosses NVLink.
	GPUs int `json:"gpus,omitempty"`
}

// gpus is the GPUs the point runs on.
func (g GridPoint) gpus() int { return max(1, g.GPUs) }

// Name says what the point runs, for progress and tables.
func (g GridPoint) Name() string {
	s := fmt.Sprintf("%s %d ranks × %d tokens", g.Transport, g.Ranks, g.Tokens)
	if g.Normal {
		s = "normal " + s
		if g.Chunk != 0 {
			s += fmt.Sprintf(", chunk %d", g.Chunk)
		}
	}
	if g.gpus() > 1 {
		s += fmt.Sprintf(" on %d GPUs", g.gpus())
	}
	return s
}

// Shape is the point's layer shape (FP8 dispatch, BF16 combine).
func (g GridPoint) Shape() moe.Shape {
	return moe.Shape{Experts: g.Experts, TopK: g.TopK, Hidden: g.Hidden, Tokens: g.Tokens, Ranks: g.Ranks, GPUsPerNode: 1,
		Dispatch: moe.FP8, Combine: moe.BF16}
}

// Transport is the point's transport.
func (g GridPoint) transport() (Transport, error) {
	if g.Transport == "direct" {
		return Transport{Direct: true}, nil
	}
	p, err := preset.Get(g.Transport)
	if err != nil {
		return Transport{}, err
	}
	return Transport{Preset: p}, nil
}

// Grids are the names Grid takes.
var Grids = []string{"ll", "normal", "gpus", "transfer", "all"}

// CheckGrid refuses a name that is none of Grids, as a field.Error
// (grid).
func CheckGrid(name string) error {
	if !slices.Contains(Grids, name) {
		return field.Valuef("grid", report.Quote(name), "want ll, normal, gpus, transfer or all")
	}
	return nil
}

// ErrGrid marks a grid that cannot be measured: an unknown name, or one
// this host's GPUs cannot run.
var ErrGrid = errors.New("grid")

// Grid is the named share of the runs on a host of gpus GPUs: ll (the
// low-latency grid), normal (normal mode's), gpus (one rank per GPU across
// NVLink, which needs two GPUs or more), transfer (the low-latency grid,
// then one rank on the whole GPU and an SM sweep of it) or all
// (DefaultGrid).
func Grid(name string, gpus int) ([]GridPoint, error) {
	switch name {
	case "all":
		return DefaultGrid(gpus), nil
	case "ll":
		return LowLatencyGrid(), nil
	case "normal":
		return NormalGrid(), nil
	case "transfer":
		return TransferGrid(), nil
	case "gpus":
		if g := MultiGPUGrid(gpus); g != nil {
			return g, nil
		}
		return nil, fmt.Errorf("%w gpus: this host has %d GPU; the NVLink share needs 2 or more", ErrGrid, gpus)
	}
	return nil, fmt.Errorf("%w %s: want %s", ErrGrid, name, strings.Join(Grids, ", "))
}

// DefaultGrid is what calibrate --layer measures on a host of gpus GPUs:
// virtual ranks {2, 4, 8}
// × tokens {16, 128} × the three mechanisms and the direct path on
// DeepEP's low-latency shape (288 experts, top-8, hidden 7,168), then
// hidden 2,048, top-4 and half the SMs at 4 ranks × 128 tokens, so that
// per-byte, per-selection and per-SM costs separate; then normal mode's
// share and, with several GPUs, the NVLink share.
func DefaultGrid(gpus int) []GridPoint {
	return append(append(LowLatencyGrid(), NormalGrid()...), MultiGPUGrid(gpus)...)
}

// MultiGPUGrid is, on a host of gpus >= 2 GPUs, the direct path with one
// rank per GPU across NVLink: LL at 16 and 128 tokens, normal mode at
// 1,024 and 4,096; none on one GPU.
func MultiGPUGrid(gpus int) []GridPoint {
	if gpus < 2 {
		return nil
	}
	var g []GridPoint
	for _, t := range []int{16, 128} {
		g = append(g, GridPoint{Transport: "direct", Ranks: gpus, GPUs: gpus, Tokens: t, Hidden: 7168, TopK: 8, Experts: 288})
	}
	for _, t := range []int{1024, 4096} {
		g = append(g, GridPoint{Transport: "direct", Ranks: gpus, GPUs: gpus, Tokens: t, Hidden: 7168, TopK: 8, Experts: 256, Normal: true})
	}
	return g
}

// NormalGrid is normal mode's share of the grid: DeepEP's intranode
// kernels on DeepSeek-V3 (256 experts, top-8, hidden 7,168) at 2, 4 and 8
// virtual ranks × 1,024 and 4,096 tokens, and a tail every 2 and every 16
// tokens at 4 ranks × 4,096, so that the per-chunk costs separate from the
// copies.
func NormalGrid() []GridPoint {
	var g []GridPoint
	for _, r := range []int{2, 4, 8} {
		for _, t := range []int{1024, 4096} {
			g = append(g, GridPoint{Transport: "direct", Ranks: r, Tokens: t, Hidden: 7168, TopK: 8, Experts: 256, Normal: true})
		}
	}
	for _, c := range []int{2, 16} {
		g = append(g, GridPoint{Transport: "direct", Ranks: 4, Tokens: 4096, Hidden: 7168, TopK: 8, Experts: 256, Normal: true, Chunk: c})
	}
	return g
}

// LowLatencyGrid is the low-latency share of DefaultGrid.
func LowLatencyGrid() []GridPoint {
	var g []GridPoint
	for _, tr := range []string{"direct", "mini-gda", "mini-proxy", "dc"} {
		for _, r := range []int{2, 4, 8} {
			for _, t := range []int{16, 128} {
				g = append(g, GridPoint{Transport: tr, Ranks: r, Tokens: t, Hidden: 7168, TopK: 8, Experts: 288})
			}
		}
	}
	for _, tr := range []string{"direct", "mini-gda"} {
		g = append(g,
			GridPoint{Transport: tr, Ranks: 4, Tokens: 128, Hidden: 2048, TopK: 8, Experts: 288},
			GridPoint{Transport: tr, Ranks: 4, Tokens: 128, Hidden: 7168, TopK: 4, Experts: 288},
			GridPoint{Transport: tr, Ranks: 4, Tokens: 128, Hidden: 7168, TopK: 8, Experts: 288, SMsPerRank: 16})
	}
	return g
}

// RawPhase is one phase of a run: means over ranks of each rank's mean
// over the repetitions.
type RawPhase struct {
	ReadyUs     float64 `json:"ready_us"`
	ReadyMaxUs  float64 `json:"ready_max_us"`
	IssueDoneUs float64 `json:"issue_done_us"`
	SendDoneUs  float64 `json:"send_done_us"`
	WaitDoneUs  float64 `json:"signals_seen_us"`
	KernelUs    float64 `json:"kernel_us"`
	PostNs      float64 `json:"post_ns"`
}

// RawRun is one measured grid point.
type RawRun struct {
	Point    GridPoint          `json:"point"`
	Config   native.LayerConfig `json:"config"`
	Workers  int                `json:"proxy_workers,omitempty"`
	Dispatch RawPhase           `json:"dispatch"`
	Combine  RawPhase           `json:"combine"`
	Checked  int64              `json:"checked"`
}

// Raw is what calibrate --layer measured, enough to refit without a GPU:
// every routing is regenerated from Routing and Seed.
type Raw struct {
	Device native.DeviceInfo `json:"device"`
	// Host is the machine that drove the GPU: the proxy's CPU workers ran
	// on it, so its cores bound how many each rank got.
	Host     string   `json:"host_cpu,omitempty"`
	ClockMHz float64  `json:"clock_mhz"`
	Routing  string   `json:"routing"`
	Seed     uint64   `json:"seed"`
	Runs     []RawRun `json:"runs"`
	// routings, when set, keeps each point's routing: a fit models every
	// run hundreds of times.
	routings *routingCache
}

type routingCache struct {
	mu sync.Mutex
	m  map[GridPoint]*moe.Routing
}

// Measure runs the grid on the library. progress, when set, hears of each
// run.
func Measure(lib Runner, grid []GridPoint, o Options, progress func(string)) (*Raw, error) {
	raw := &Raw{Device: lib.Device(), Host: report.LocalHost().String(), Routing: moe.RoutingSpec{}.String(), Seed: 1}
	for _, g := range grid {
		rt, err := raw.routing(g)
		if err != nil {
			return nil, err
		}
		tr, err := g.transport()
		if err != nil {
			return nil, err
		}
		opt := o
		opt.GPUs = g.gpus()
		opt.SMsPerRank = g.SMsPerRank
		if g.Normal {
			opt.Mode, opt.Chunk = moe.Normal, g.Chunk
		}
		m, err := Run(lib, rt, tr, opt, moe.Background{})
		if err != nil {
			return nil, fmt.Errorf("calibration run %s: %w", g.Name(), err)
		}
		raw.ClockMHz = m.Result.ClockMHz
		run := RawRun{Point: g, Config: m.Config, Workers: m.Result.Workers, Checked: m.Result.Checked,
			Dispatch: rawPhase(&m.Dispatch), Combine: rawPhase(&m.Combine)}
		raw.Runs = append(raw.Runs, run)
		if progress != nil {
			progress(fmt.Sprintf("%s (hidden %d, top-%d, %d SMs): dispatch %.1f µs, combine %.1f µs",
				g.Name(), g.Hidden, g.TopK, m.Config.SMsPerRank, run.Dispatch.ReadyUs, run.Combine.ReadyUs))
		}
	}
	return raw, nil
}

func rawPhase(st *PhaseStats) RawPhase {
	return RawPhase{ReadyUs: st.Ready.Mean, ReadyMaxUs: st.Ready.Max, IssueDoneUs: st.IssueDone.Mean, SendDoneUs: st.SendDone.Mean,
		WaitDoneUs: st.WaitDone.Mean, KernelUs: st.KernelUs, PostNs: st.PostNs}
}

func (r *Raw) routing(g GridPoint) (*moe.Routing, error) {
	if c := r.routings; c != nil {
		c.mu.Lock()
		rt, ok := c.m[g]
		c.mu.Unlock()
		if ok {
			return rt, nil // the model only reads it
		}
	}
	spec, err := moe.ParseRoutingSpec(r.Routing)
	if err != nil {
		return nil, err
	}
	rt, err := moe.Generate(g.Shape(), spec, r.Seed)
	if err == nil && r.routings != nil {
		r.routings.mu.Lock()
		r.routings.m[g] = rt
		r.routings.mu.Unlock()
	}
	return rt, err
}

// Merge is r with o's runs added: measurements of one GPU, routing and
// seed, taken in separate calls (one grid, then another).
func (r *Raw) Merge(o *Raw) (*Raw, error) {
	a, b := r.Device, o.Device
	switch {
	case a.Name != b.Name || a.Driver != b.Driver || a.CUDARuntime != b.CUDARuntime || a.SMs != b.SMs:
		return nil, fmt.Errorf("layer measurement: measured on %s (driver %s), not %s (driver %s) as the others", b.Name, b.Driver, a.Name, a.Driver)
	case r.Routing != o.Routing || r.Seed != o.Seed:
		return nil, fmt.Errorf("layer measurement: routing %s seed %d, not %s seed %d as the others", o.Routing, o.Seed, r.Routing, r.Seed)
	}
	m := *r
	m.Runs = append(append([]RawRun(nil), r.Runs...), o.Runs...)
	if m.Host == "" {
		m.Host = o.Host
	}
	return &m, nil
}

// Check reports a raw measurement that cannot be refitted.
func (r *Raw) Check() error {
	if len(r.Runs) == 0 {
		return errors.New("layer measurement: no runs")
	}
	for i, run := range r.Runs {
		if err := run.Point.Shape().Validate(); err != nil {
			return fmt.Errorf("layer measurement: run %d: %w", i, err)
		}
		if _, err := run.Point.transport(); err != nil {
			return fmt.Errorf("layer measurement: run %d: %w", i, err)
		}
		for _, v := range []float64{run.Dispatch.ReadyUs, run.Combine.ReadyUs} {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("layer measurement: run %d (%s, %d ranks, %d tokens): ready time %v", i, run.Point.Transport, run.Point.Ranks, run.Point.Tokens, v)
			}
		}
		if run.Point.Normal && run.Point.Transport != "direct" {
			return fmt.Errorf("layer measurement: run %d: normal mode runs on the direct path, not %s", i, run.Point.Transport)
		}
		if run.Config.Ranks != run.Point.Ranks || run.Config.SMsPerRank < 1 || run.Config.Normal != run.Point.Normal || run.Config.GPUs != run.Point.gpus() {
			return fmt.Errorf("layer measurement: run %d: its configuration (%d ranks, %d SMs) does not match its point", i, run.Config.Ranks, run.Config.SMsPerRank)
		}
	}
	return nil
}

// Comparison is one run's model beside its measurement, µs.
type Comparison struct {
	Run                         RawRun
	Dispatch, Combine           float64 // model mean ready
	DispatchIssue, CombineIssue float64 // model issue done (mean over ranks)
	DispatchSeen, CombineSeen   float64 // model: the last signal visible (mean over ranks)
}

// Error is model/measured - 1 of the phase times.
func (c Comparison) Error() (dispatch, combine float64) {
	return c.Dispatch/c.Run.Dispatch.ReadyUs - 1, c.Combine/c.Run.Combine.ReadyUs - 1
}

// Compare models every run of raw on prof (with the emulated NIC).
func Compare(raw *Raw, prof *profile.Profile) ([]Comparison, error) {
	out := make([]Comparison, len(raw.Runs))
	errs := make([]error, len(raw.Runs))
	idx := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				out[i], errs[i] = compareOne(raw, raw.Runs[i], prof)
			}
		}()
	}
	for i := range raw.Runs {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return out, errors.Join(errs...)
}

func compareOne(raw *Raw, run RawRun, prof *profile.Profile) (Comparison, error) {
	rt, err := raw.routing(run.Point)
	if err != nil {
		return Comparison{}, err
	}
	tr, err := run.Point.transport()
	if err != nil {
		return Comparison{}, err
	}
	// Times only: the native run checked the payload it moved.
	res, err := predict(rt, run.Config, run.Workers, tr, prof, moe.Background{}, zap.NewNop(), true)
	if err != nil {
		return Comparison{}, fmt.Errorf("%s: %w", run.Point.Name(), err)
	}
	return Comparison{Run: run, Dispatch: res.Dispatch.Time.Mean, Combine: res.Combine.Time.Mean,
		DispatchIssue: res.Dispatch.IssueDone.Mean, CombineIssue: res.Combine.IssueDone.Mean,
		DispatchSeen: res.Dispatch.Delivered.Mean, CombineSeen: res.Combine.Delivered.Mean}, nil
}

// param is one constant the fit moves, within its bounds (bounds.go).
type param struct {
	name  string
	start float64 // used when the profile's value is 0
}

// stage fits params on the runs it takes.
type stage struct {
	what   string
	takes  func(GridPoint) bool
	params []param
}

// on is a stage's run filter: the transports given, the mode, one GPU or
// several.
func on(normal, multi bool, paths ...string) func(GridPoint) bool {
	return func(g GridPoint) bool {
		return g.Normal == normal && (g.gpus() > 1) == multi && slices.Contains(paths, g.Transport)
	}
}

// stages fit the kernel side on the direct path first (no NIC), then the
// emulated NIC on the GPU-posted paths, then its host-memory reads and the
// CPU workers on mini-proxy. Each constant belongs to one stage, and a
// stage's runs depend on no later stage's constants.
var stages = []stage{
	{"kernel side (direct path)", on(false, false, "direct"), []param{
		{"kernel.start_ns", 1000}, {"kernel.cast_ns", 1500}, {"kernel.grid_sync_ns", 1500},
		{"kernel.recv_task_ns", 1000}, {"kernel.recv_token_ns", 300}, {"kernel.reduce_token_ns", 1500},
		{"gpu.warp_copy_ns", 1500}, {"gpu.warp_copy_gbs", 5}, {"gpu.copy_gbs", 2400},
		{"kernel.recv_gbs", 2400}, {"kernel.reduce_gbs", 2400},
		{"gpu.peer_copy_ns", 1000}, {"gpu.peer_warp_gbs", 20}, {"gpu.copy_queue_wait", 0.5},
		{"gpu.peer_latency_ns", 700},
	}},
	// gpu.handoff is the GPU calibration's: no mechanism of the grid
	// publishes by hand-off, so these runs cannot move it.
	{"emulated NIC (mini-gda, dc)", on(false, false, "mini-gda", "dc"), []param{
		{"emunic.poll_ns", 1000}, {"emunic.wqe_ns", 1000}, {"emunic.drain_ns", 1000},
		{"emunic.copy_ns", 1000}, {"emunic.latency_ns", 700},
		{"emunic.warp_gbs", 3}, {"emunic.sm_gbs", 30}, {"emunic.atomic_ns", 1500},
	}},
	{"host queues and CPU workers (mini-proxy)", on(false, false, "mini-proxy"), []param{
		{"emunic.host_wqe_ns", 1000}, {"emunic.host_drain_ns", 3000}, {"pcie.host_read_mps", 100},
		{"proxy.desc_flight_ns", 500}, {"proxy.post_chain.ns", 300}, {"proxy.post_wr.ns", 50},
	}},
	// Normal mode last, on the LL fit's GPU constants: only what its
	// kernels add (the chunk's barrier and tail, the receiver's turns and
	// copy rate). Refitting gpu.peer_gbs here as well (its bulk copies
	// bind it) gained normal mode little and cost LL more: one rate must
	// serve both.
	{"normal mode's chunks (direct path)", on(true, false, "direct"), []param{
		{"kernel.nvl_chunk_ns", 1000}, {"kernel.nvl_recv_chunk_ns", 1000}, {"kernel.nvl_warp_gbs", 20},
	}},
	// NVLink between GPUs, from the direct path with one rank per GPU, in
	// both modes, on everything the single-GPU stages fitted.
	{"NVLink between GPUs (direct path)", func(g GridPoint) bool { return g.gpus() > 1 && g.Transport == "direct" }, []param{
		{"nvlink.gbs", 450}, {"nvlink.warp_gbs", 30}, {"nvlink.latency_ns", 1000},
		{"nvlink.copy_ns", 500},
	}},
}

// Fitted is one fitted constant beside the bounds it was fitted within.
type Fitted struct {
	Name   string
	Value  float64 // as written: four significant digits
	Unit   string
	Lo, Hi float64
	Why    string // the bounds' physics or datasheet
	At     string // "lower" or "upper" when the fit ended on that bound
}

// FitResult is what Fit changed and how well the model then matches.
type FitResult struct {
	Profile   *profile.Profile
	Constants []profile.Constant // the fitted ones, in name order
	Fitted    []Fitted           // the same, with their bounds
	Before    []Comparison
	After     []Comparison
	Evals     int
	raw       *Raw
	base      *profile.Profile
	bounds    map[string]bound
}

// OnBound names the fitted constants that ended on a bound: the runs
// would take them further, so the model's structure, not the constant,
// carries what is left of the error.
func (r *FitResult) OnBound() []Fitted {
	var out []Fitted
	for _, f := range r.Fitted {
		if f.At != "" {
			out = append(out, f)
		}
	}
	return out
}

// Fit moves the kernel-side and emulated-NIC constants of base until the
// model of every measured run matches it (least squares of log ratios of
// dispatch and combine, issue-done times at a quarter weight), stage by
// stage, each constant within the bounds physics and the GPU's datasheet
// allow it (bounds.go); source names what the constants came from.
func Fit(raw *Raw, base *profile.Profile, source string, progress func(string)) (*FitResult, error) {
	if err := raw.Check(); err != nil {
		return nil, err
	}
	ds, err := lookupDatasheet(raw.Device.Name)
	if err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	shortest := math.Inf(1)
	for _, r := range raw.Runs {
		shortest = min(shortest, r.Dispatch.ReadyUs*1000, r.Combine.ReadyUs*1000)
	}
	bs := bounds(ds, shortest)
	for _, st := range stages {
		for _, q := range st.params {
			b, ok := bs[q.name]
			d, known := profile.Lookup(q.name)
			if !ok || !known {
				return nil, fmt.Errorf("fit %s: %s has no bounds", st.what, q.name)
			}
			// Within what the profile accepts as well (a floor of 1 GB/s
			// for a GPU-wide rate, say).
			b.lo, b.hi = max(b.lo, d.Min), min(b.hi, d.Max)
			bs[q.name] = b
		}
	}
	raw = raw.withRoutings()
	prof := base.Clone()
	before, err := Compare(raw, prof)
	if err != nil {
		return nil, err
	}
	res := &FitResult{Before: before, raw: raw, base: base.Clone(), bounds: bs}
	var fitted []param
	for _, st := range stages {
		sub := raw.only(func(i int, r RawRun) bool { return st.takes(r.Point) })
		if len(sub.Runs) == 0 {
			continue
		}
		n, rms, err := fitStage(prof, st, sub, bs, false)
		res.Evals += n
		if err != nil {
			return nil, fmt.Errorf("fit %s: %w", st.what, err)
		}
		fitted = append(fitted, st.params...)
		if progress != nil {
			progress(fmt.Sprintf("fitted %s on %d runs in %d model evaluations: rms log error %.3f", st.what, len(sub.Runs), n, rms))
		}
	}
	after, err := Compare(raw, prof)
	if err != nil {
		return nil, err
	}
	res.After = after
	prof.Origins = append(prof.Origins, "calibrate --layer fit")
	res.Profile = prof
	sort.Slice(fitted, func(i, j int) bool { return fitted[i].name < fitted[j].name })
	for i, p := range fitted {
		if i > 0 && fitted[i-1].name == p.name {
			continue // refitted by a later stage: its last value is in prof
		}
		c, _ := prof.Constant(p.name)
		d, _ := profile.Lookup(p.name)
		b := bs[p.name]
		f := Fitted{Name: p.name, Value: round4(c.Value), Unit: d.Unit, Lo: b.lo, Hi: b.hi, Why: b.source}
		switch {
		case c.Value <= b.lo*(1+onBound):
			f.At = "lower"
		case c.Value >= b.hi*(1-onBound):
			f.At = "upper"
		}
		res.Fitted = append(res.Fitted, f)
		src := source
		if f.At != "" {
			src += fmt.Sprintf("; on its %s bound (%s)", f.At, f.Why)
		}
		res.Constants = append(res.Constants, profile.Constant{Name: p.name, Value: f.Value, Unit: d.Unit, Kind: profile.KindMeasured, Source: src})
	}
	return res, nil
}

// onBound is how close to a bound, relatively, a constant sits on it.
const onBound = 1e-3

// only is r with the runs keep takes.
func (r *Raw) only(keep func(int, RawRun) bool) *Raw {
	sub := &Raw{Device: r.Device, Routing: r.Routing, Seed: r.Seed, routings: r.routings}
	for i, run := range r.Runs {
		if keep(i, run) {
			sub.Runs = append(sub.Runs, run)
		}
	}
	return sub
}

// withRoutings is r, keeping the routings it generates.
func (r *Raw) withRoutings() *Raw {
	c := *r
	c.routings = &routingCache{m: map[GridPoint]*moe.Routing{}}
	return &c
}

// fitStage fits st's constants in p to the runs of sub, within bs; warm
// starts from p's values, as they are. It returns the model evaluations
// and the rms log error it ended at.
func fitStage(p *profile.Profile, st stage, sub *Raw, bs map[string]bound, warm bool) (int, float64, error) {
	resid := func(p *profile.Profile) ([]float64, error) {
		cs, err := Compare(sub, p)
		if err != nil {
			return nil, err
		}
		return residuals(cs), nil
	}
	maxEvals := 600
	if warm {
		// A start at the optimum of all runs but one: a few steps
		// settle it.
		maxEvals = 4 * (len(st.params) + 1)
	}
	n, err := levenbergMarquardt(p, st.params, bs, warm, resid, maxEvals)
	if err != nil {
		return n, 0, err
	}
	r, err := resid(p)
	if err != nil {
		return n, 0, err
	}
	return n + 1, math.Sqrt(sumSq(r) / float64(len(r))), nil
}

// LeaveOneOut predicts every run from a fit without it: its
// configuration (shape, transport, all its repetitions) left out, its
// stage refitted on the rest from the full fit's constants (a warm start,
// a few steps: refitting from scratch costs the whole fit per run), then
// every later stage that fits one of the constants refitted so far. Other
// stages stay as fitted: the run depends on none of their constants. A
// stage left without runs keeps the base's constants. The comparisons are
// in the runs' order.
func (r *FitResult) LeaveOneOut(progress func(string)) ([]Comparison, int, error) {
	out := make([]Comparison, len(r.raw.Runs))
	evals := 0
	for i, run := range r.raw.Runs {
		p := r.Profile.Clone()
		moved := map[string]bool{}
		for _, st := range stages {
			refit := st.takes(run.Point)
			for _, q := range st.params {
				refit = refit || moved[q.name]
			}
			if !refit {
				continue
			}
			for _, q := range st.params {
				moved[q.name] = true
			}
			sub := r.raw.only(func(j int, o RawRun) bool { return j != i && st.takes(o.Point) })
			if len(sub.Runs) == 0 {
				if !st.takes(run.Point) {
					continue // a stage with no runs at all
				}
				for _, q := range st.params {
					c, _ := r.base.Constant(q.name)
					if err := p.SetValue(q.name, c.Value, c.Source); err != nil {
						return nil, evals, err
					}
				}
				continue
			}
			n, _, err := fitStage(p, st, sub, r.bounds, true)
			evals += n
			if err != nil {
				return nil, evals, fmt.Errorf("fit without %s: %s: %w", run.Point.Name(), st.what, err)
			}
		}
		c, err := compareOne(r.raw, run, p)
		if err != nil {
			return nil, evals, err
		}
		out[i] = c
		evals++
		if progress != nil {
			d, m := c.Error()
			progress(fmt.Sprintf("left out %s: dispatch %+.1f%%, combine %+.1f%%", run.Point.Name(), 100*d, 100*m))
		}
	}
	return out, evals, nil
}

// residuals are the log ratios of model to measurement the fit drives to
// zero: dispatch and combine fully, issue-done times and the dispatch's
// last count seen at half weight (a quarter in the squares).
func residuals(cs []Comparison) []float64 {
	var r []float64
	add := func(model, meas, w float64) {
		if model > 0 && meas > 0 {
			r = append(r, w*math.Log(model/meas))
		} else {
			r = append(r, 0)
		}
	}
	for _, c := range cs {
		add(c.Dispatch, c.Run.Dispatch.ReadyUs, 1)
		add(c.Combine, c.Run.Combine.ReadyUs, 1)
		add(c.DispatchIssue, c.Run.Dispatch.IssueDoneUs, 0.5)
		add(c.CombineIssue, c.Run.Combine.IssueDoneUs, 0.5)
		add(c.DispatchSeen, c.Run.Dispatch.WaitDoneUs, 0.5)
	}
	return r
}

func sumSq(r []float64) float64 {
	var s float64
	for _, x := range r {
		s += x * x
	}
	return s
}

// levenbergMarquardt fits params in log space within their bounds bs: a
// numerical Jacobian of the residuals, damped Gauss-Newton steps projected
// onto the bounds. Constants at zero start from their start value, and so
// (unless warm) do constants an earlier layer fit set (P-IB's kernel side
// is one): a refit must not depend on the basin the earlier one ended in.
func levenbergMarquardt(p *profile.Profile, params []param, bs map[string]bound, warm bool, resid func(*profile.Profile) ([]float64, error), maxEvals int) (int, error) {
	n := len(params)
	lo, hi, u := make([]float64, n), make([]float64, n), make([]float64, n)
	for j, q := range params {
		b := bs[q.name]
		lo[j], hi[j] = math.Log(b.lo), math.Log(b.hi)
		// A constant at zero or past its upper bound (a value that never
		// binds) gives no gradient: start those from their start value.
		v := p.Get(q.name)
		if c, _ := p.Constant(q.name); !warm && (v <= 0 || v >= b.hi || strings.Contains(c.Source, "calibrate --layer")) {
			v = q.start
		}
		u[j] = min(hi[j], max(lo[j], math.Log(max(v, b.lo))))
	}
	set := func(x []float64) error {
		for j, q := range params {
			b := bs[q.name]
			v := min(b.hi, max(b.lo, math.Exp(x[j]))) // exp(log(hi)) may round past hi
			if err := p.SetValue(q.name, v, "calibrate --layer fit"); err != nil {
				return err
			}
		}
		return nil
	}
	eval := func(x []float64) ([]float64, error) {
		if err := set(x); err != nil {
			return nil, err
		}
		return resid(p)
	}
	evals := 1
	r, err := eval(u)
	if err != nil {
		return evals, err
	}
	cost := sumSq(r)
	lambda := 1e-2
	const h = 0.05
	small := 0 // accepted steps in a row that gained almost nothing
	for evals+n+1 <= maxEvals {
		// Jacobian by forward differences (backward at the upper bound).
		J := make([][]float64, len(r))
		for i := range J {
			J[i] = make([]float64, n)
		}
		for j := range n {
			x := append([]float64(nil), u...)
			step := h
			if x[j]+step > hi[j] {
				step = -h
			}
			x[j] += step
			rj, err := eval(x)
			evals++
			if err != nil {
				return evals, err
			}
			for i := range r {
				J[i][j] = (rj[i] - r[i]) / step
			}
		}
		improved := false
		for try := 0; try < 8 && evals < maxEvals; try++ {
			delta := lmStep(J, r, lambda)
			x := make([]float64, n)
			for j := range n {
				x[j] = min(hi[j], max(lo[j], u[j]+delta[j]))
			}
			rn, err := eval(x)
			evals++
			if err != nil {
				return evals, err
			}
			if c := sumSq(rn); c < cost {
				gain := (cost - c) / cost
				u, r, cost = x, rn, c
				lambda = max(lambda/3, 1e-7)
				improved = true
				if small++; gain >= 1e-4 {
					small = 0
				}
				break
			}
			lambda *= 4
		}
		if !improved || small >= 3 {
			break
		}
	}
	return evals, set(u)
}

// lmStep solves (JᵀJ + λ·diag(JᵀJ)) δ = −Jᵀr.
func lmStep(J [][]float64, r []float64, lambda float64) []float64 {
	n := 0
	if len(J) > 0 {
		n = len(J[0])
	}
	A := make([][]float64, n)
	b := make([]float64, n)
	for a := range n {
		A[a] = make([]float64, n+1)
		for c := range n {
			for i := range J {
				A[a][c] += J[i][a] * J[i][c]
			}
		}
		for i := range J {
			b[a] -= J[i][a] * r[i]
		}
	}
	for a := range n {
		A[a][a] += lambda*A[a][a] + 1e-9
		A[a][n] = b[a]
	}
	// Gaussian elimination with partial pivoting.
	for col := range n {
		piv := col
		for row := col + 1; row < n; row++ {
			if math.Abs(A[row][col]) > math.Abs(A[piv][col]) {
				piv = row
			}
		}
		A[col], A[piv] = A[piv], A[col]
		if A[col][col] == 0 {
			continue
		}
		for row := col + 1; row < n; row++ {
			f := A[row][col] / A[col][col]
			for k := col; k <= n; k++ {
				A[row][k] -= f * A[col][k]
			}
		}
	}
	x := make([]float64, n)
	for row := n - 1; row >= 0; row-- {
		if A[row][row] == 0 {
			continue
		}
		v := A[row][n]
		for k := row + 1; k < n; k++ {
			v -= A[row][k] * x[k]
		}
		x[row] = v / A[row][row]
	}
	return x
}

// round4 keeps four significant digits: the fit is not more exact.
func round4(v float64) float64 {
	if v == 0 {
		return 0
	}
	e := math.Floor(math.Log10(math.Abs(v))) - 3
	f := math.Pow(10, e)
	return math.Round(v/f) * f
}

// TransportByName is "direct" or a preset.
func TransportByName(name string) (Transport, error) {
	return GridPoint{Transport: name}.transport()
}
