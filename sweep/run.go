package sweep

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/results"
	"moebench/transport"
	"moebench/transport/preset"
)

// Sweep is a run's or sweep's points on its presets: point i of the
// serial order (configuration-major) is Points[i/len(Presets)] on
// Presets[i%len(Presets)].
type Sweep struct {
	Layer
	Command string // names the points in the budget's messages
	Points  []Point
	Presets []preset.Preset
	Inputs  *Inputs // each point's routing and profile
	Budget  budget.Budget
	// Shard says which points of the serial order this process runs; nil
	// runs them all.
	Shard func(i int) bool
	// Axes are the profile constants swept, and Varies says which other
	// axes take several values, by name (ranks, gpus-per-node, tokens,
	// experts, mode, background, loss, a knob's): the items name their
	// values.
	Axes   []SetAxis
	Varies func(name string) bool
}

// Item is one point run on one preset.
type Item struct {
	Point  Point
	Preset preset.Preset
	Result *moe.Result
	More   []*moe.Result  // the same point under the further compute schedules
	Swept  []results.Knob // the point's values of the axes that vary
	Limits []moe.Usage    // headroom against each limit the point is under
	Layers int            // MoE layers a step, with compute
}

// Plan is what the budget decided of each point, in serial order: its
// estimated messages (a progress bar's units), whether it runs dispatch
// and combine in turn, and the estimate it runs under.
type Plan struct {
	Msgs   []int
	InTurn []bool
	Weight []int64
	Total  int
}

func (s *Sweep) runs(i int) bool { return s.Shard == nil || s.Shard(i) }

// Place places this process's points in the memory budget, refusing one
// the machine cannot hold (a *budget.Exceeded) before anything is
// generated: points run concurrently over the cores, as many at once as
// their estimates fit.
func (s *Sweep) Place() (Plan, error) {
	var pts []budget.Point
	var idx []int // each point's index in the serial order
	for ci, c := range s.Points {
		for pi, p := range s.Presets {
			if i := ci*len(s.Presets) + pi; s.runs(i) {
				cost := budget.LayerCost(c.Shape, c.Mode, p.Mechanism, s.NumSMs, c.Background, c.Knobs)
				pts = append(pts, budget.Point{What: c.what(s.Command, p.Name), Mode: c.Mode, Cost: cost})
				idx = append(idx, i)
			}
		}
	}
	if err := s.Budget.PlacePoints(s.log(), pts, int64(min(runtime.GOMAXPROCS(0), len(pts)))); err != nil {
		return Plan{}, err
	}
	n := len(s.Points) * len(s.Presets)
	pl := Plan{Msgs: make([]int, n), InTurn: make([]bool, n), Weight: make([]int64, n)}
	for k, p := range pts {
		i := idx[k]
		pl.InTurn[i], pl.Weight[i], pl.Msgs[i] = p.InTurn, p.Weight, int(min(p.Cost.Messages, 1<<40))
		pl.Total += pl.Msgs[i]
	}
	return pl, nil
}

func (s *Sweep) log() *zap.Logger {
	if s.Log == nil {
		return zap.NewNop()
	}
	return s.Log
}

// Run runs this process's points as planned, concurrently over the
// cores, each once the memory gate admits its estimate; progress, when
// not nil, hears of delivered messages (at most the plan's estimate of
// each point, all of it once the point is done) with the preset's name.
// The items keep the serial order, one per compute schedule with several;
// ran is the serial indices of the points run.
func (s *Sweep) Run(pl Plan, progress func(n int, preset string)) (items []Item, ran []int, err error) {
	type job struct {
		cfg    Point
		rt     *moe.Routing
		prof   *profile.Profile
		p      preset.Preset
		inTurn bool
		weight int64
	}
	var jobs []job
	var left []int // per job, the messages its estimate has left for the bar
	for ci, c := range s.Points {
		rt, prof, err := s.Inputs.Of(c)
		if err != nil {
			return nil, nil, err
		}
		for pi, p := range s.Presets {
			if i := ci*len(s.Presets) + pi; s.runs(i) {
				jobs = append(jobs, job{c, rt, prof, p, pl.InTurn[i], pl.Weight[i]})
				left = append(left, pl.Msgs[i])
				ran = append(ran, i)
			}
		}
	}
	// Progress comes from every running point (and, in LL, from dispatch
	// and combine at once).
	var mu sync.Mutex
	advance := func(i, n int) {
		mu.Lock()
		defer mu.Unlock()
		n = min(n, left[i]) // the estimate is an upper bound
		left[i] -= n
		if progress != nil {
			progress(n, jobs[i].p.Name)
		}
	}
	gate := budget.NewGate(s.Budget)
	items, err = budget.Indexed(len(jobs), 0, func(i int) (Item, error) {
		j := jobs[i]
		if gate.Acquire(j.weight) {
			s.log().Debug("point waited for memory", zap.Int("point", i), zap.String("estimate", report.Bytes(j.weight)))
		}
		defer gate.Release(j.weight)
		res, err := s.RunEach(j.cfg, j.rt, j.prof, j.p, j.inTurn, func(n int) { advance(i, n) })
		if err != nil {
			return Item{}, err
		}
		lim, err := s.Headroom(j.cfg, j.prof, j.p)
		return Item{Point: j.cfg, Preset: j.p, Result: res[0], More: res[1:], Swept: Swept(s.Varies, s.Axes, j.cfg),
			Limits: lim, Layers: s.Compute.Layers}, err
	}, func(i int) { advance(i, left[i]) })
	if err != nil {
		return nil, nil, err
	}
	return EachOverlap(items, len(s.Compute.Scheds) > 1), ran, nil
}

// EachOverlap spreads items of several compute schedules into one each,
// the schedule a swept column.
func EachOverlap(items []Item, several bool) []Item {
	if !several {
		return items
	}
	var out []Item
	for _, it := range items {
		for _, r := range append([]*moe.Result{it.Result}, it.More...) {
			x := it
			x.Result, x.More = r, nil
			x.Swept = append(slices.Clone(it.Swept), results.Knob{Name: "overlap", Value: r.Compute.Overlap.String()})
			out = append(out, x)
		}
	}
	return out
}

// Swept lists point c's values of the axes that vary (varies, by name;
// nil: none) and of the profile constants that take several values.
func Swept(varies func(string) bool, axes []SetAxis, c Point) []results.Knob {
	var k []results.Knob
	multi := func(name string) bool { return varies != nil && varies(name) }
	add := func(name, v string) { k = append(k, results.Knob{Name: name, Value: v}) }
	if multi("ranks") {
		add("ranks", strconv.Itoa(c.Shape.Ranks))
	}
	if multi("gpus-per-node") {
		add("gpus/node", strconv.Itoa(c.Shape.GPUsPerNode))
	}
	if multi("tokens") {
		add("tokens", strconv.Itoa(c.Shape.Tokens))
	}
	if multi("experts") {
		add("experts", strconv.Itoa(c.Shape.Experts))
	}
	if multi("mode") {
		add("mode", c.Mode.String())
	}
	for _, kn := range transport.AllKnobs() {
		if multi(kn.Name) {
			add(kn.Column, KnobValue(kn, c.Knobs))
		}
	}
	if multi("background") {
		add("background", c.BackgroundName)
	}
	if multi("loss") {
		add("loss", c.Fault.Loss)
	}
	for i, a := range axes {
		if len(a.Values) > 1 {
			_, v, _ := strings.Cut(c.Sets[i], "=")
			add(a.Name, v)
		}
	}
	return k
}

// KnobValue is a knob's setting as the reports show it: 0 for an integer
// knob left at the preset's value.
func KnobValue(k transport.Knob, s transport.Settings) string {
	if v, ok := s[k.Name]; ok || k.IsChoice() {
		return v
	}
	return "0"
}
