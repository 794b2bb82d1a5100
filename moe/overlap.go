package moe

import (
	"cmp"
	"fmt"
	"slices"

	"moebench/sim"
)

// Timeline is a layer with its experts' compute under an overlap
// schedule: dispatch and combine as RunLayer simulates them (on each
// micro-batch's tokens under two-batch schedules), the experts' GEMMs as
// the profile's compute model times them, put on each rank's two streams,
// communication and compute. A communication phase is collective: it
// starts when every rank is ready for it, and each rank is done with it
// when the simulation says that rank is.
type Timeline struct {
	Overlap Overlap
	// LayerUs is from the first dispatch's launch until the last rank
	// has its combined tokens.
	LayerUs float64
	// ComputeUs is the busiest rank's compute stream (its experts'
	// GEMMs and activations, the shared expert, sending kernels under the
	// hook); CommUs the communication phases' spans end to end.
	ComputeUs, CommUs float64
	// ExposedUs is the communication compute does not hide: LayerUs less
	// ComputeUs.
	ExposedUs float64
	// ComputeSMs is what the GEMMs beside communication have of the GPU.
	ComputeSMs int
	// HotRank is the rank whose routed experts take longest, with its
	// fullest expert's tokens and its routed experts' time; MeanExpertUs
	// is that time's mean over ranks.
	HotRank                   int
	HotTokens                 int
	HotExpertUs, MeanExpertUs float64
	// Critical is the path that set LayerUs, first step first; BoundBy
	// names its longest step.
	Critical []Step
	BoundBy  string
	// MicroBatches are the two-batch schedules' halves, as RunLayer
	// simulated them (nil otherwise).
	MicroBatches []*Result
}

// Step is one operation on the critical path.
type Step struct {
	Name string `json:"name"`
	// Compute is true for a GEMM or activation, false for communication.
	Compute bool `json:"compute"`
	// Rank is the rank the path passes through the step on.
	Rank    int     `json:"rank"`
	StartUs float64 `json:"start_us"`
	EndUs   float64 `json:"end_us"`
	// Cause is what bound a communication step (its phase's BoundBy).
	Cause string `json:"cause,omitempty"`
}

// Us is the step's length.
func (s Step) Us() float64 { return s.EndUs - s.StartUs }

// Label names the step for a report: the rank of a compute step, the
// cause of a communication one.
func (s Step) Label() string {
	if s.Compute {
		return fmt.Sprintf("%s (rank %d)", s.Name, s.Rank)
	}
	if s.Cause != "" {
		return s.Name + ": " + s.Cause
	}
	return s.Name
}

// RunWithCompute runs the layer as RunLayer does and puts its experts'
// compute between dispatch and combine under c's schedule. The
// communication result is RunLayer's, unchanged; Result.Compute holds
// the timeline.
func RunWithCompute(cfg LayerConfig, c ComputeConfig) (*Result, error) {
	out, err := RunWithComputes(cfg, c, []Overlap{c.Overlap})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// RunWithComputes is RunWithCompute under each of several schedules
// (c.Overlap is ignored): the layer and, for the two-batch schedules,
// its micro-batches are simulated once for all of them. The results
// share the communication result; each has its own timeline.
func RunWithComputes(cfg LayerConfig, c ComputeConfig, overlaps []Overlap) ([]*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	two := false
	for _, o := range overlaps {
		c.Overlap = o
		if err := c.Validate(cfg.Routing.Shape, cfg.Mode); err != nil {
			return nil, err
		}
		two = two || o == OverlapTwoBatch || o == OverlapHook
	}
	res, err := RunLayer(cfg)
	if err != nil {
		return nil, err
	}
	var halves [2]*Result
	var parts [2]*Routing
	if two {
		parts[0], parts[1] = cfg.Routing.split()
		for i, rt := range parts {
			h := cfg
			h.Routing, h.Progress = rt, nil
			if halves[i], err = RunLayer(h); err != nil {
				return nil, fmt.Errorf("micro-batch %c: %w", 'A'+i, err)
			}
		}
	}
	out := make([]*Result, len(overlaps))
	for i, o := range overlaps {
		c.Overlap = o
		sched := &schedule{cfg: &cfg, c: &c, ranks: cfg.Routing.Shape.Ranks}
		sched.commSMs = min(res.NumSMs, c.Costs.SMs-1)
		sched.slow = func(r int) float64 { return cfg.Faults.SlowFactor(r) }
		r := *res
		switch o {
		case OverlapTwoBatch, OverlapHook:
			r.Compute = sched.twoBatch(parts, halves)
		default:
			r.Compute = sched.single(res)
		}
		out[i] = &r
	}
	return out, nil
}

// split halves each rank's tokens: the first ceil(n/2) go to micro-batch
// A, the rest to B.
func (r *Routing) split() (a, b *Routing) {
	s := r.Shape
	half := func(first bool) *Routing {
		hs := s
		hs.Tokens = (s.Tokens + 1) / 2
		if !first {
			hs.Tokens = max(1, s.Tokens/2)
		}
		tokens := make([]int, s.Ranks)
		for rank, n := range r.Tokens {
			if first {
				tokens[rank] = (n + 1) / 2
			} else {
				tokens[rank] = n / 2
			}
		}
		out := newRouting(hs, tokens)
		for rank, n := range r.Tokens {
			from := 0
			if !first {
				from = (n + 1) / 2
			}
			k := s.TopK
			copy(out.Idx[rank], r.Idx[rank][from*k:(from+tokens[rank])*k])
			copy(out.Weights[rank], r.Weights[rank][from*k:(from+tokens[rank])*k])
		}
		return out
	}
	return half(true), half(false)
}

// op is one operation of a schedule, in program order.
type op struct {
	name    string
	compute bool
	// A compute op's per-rank length on the whole GPU and, where
	// communication may run beside it, on the SMs it leaves (nil: never
	// beside); a communication op's phase.
	dur, beside []sim.Time
	phase       *Phase
	// deps are earlier ops whose end on the same rank this one waits for.
	deps []int
	// routed marks the routed experts (for the hot rank).
	routed bool
}

// schedule places a layer's ops on each rank's communication and compute
// streams.
type schedule struct {
	cfg     *LayerConfig
	c       *ComputeConfig
	ranks   int
	commSMs int
	slow    func(int) float64
}

// single is the one-batch schedules: none and shared-expert.
func (s *schedule) single(res *Result) *Timeline {
	full := computeTimes(s.cfg.Routing, s.c, s.c.Costs.SMs, false, s.slow)
	var shared []sim.Time
	sharedDep := []int{0}
	if s.c.Overlap == OverlapShared {
		shared = pick(computeTimes(s.cfg.Routing, s.c, s.c.Costs.SMs-s.commSMs, true, s.slow), false)
		sharedDep = nil
	}
	ops := []op{
		{name: "dispatch", phase: &res.Dispatch},
		{name: "shared expert", compute: true, dur: pick(full, false), beside: shared, deps: sharedDep},
		{name: "experts", compute: true, dur: pick(full, true), deps: []int{0}, routed: true},
		{name: "combine", phase: &res.Combine, deps: []int{2}},
	}
	tl := s.run(ops)
	tl.ComputeSMs = s.c.Costs.SMs
	if shared != nil {
		tl.ComputeSMs -= s.commSMs
	}
	return tl
}

// twoBatch is the two micro-batch schedules: two-batch and hook. Without
// the hook a GEMM runs on the SMs communication leaves, slowed by it,
// for as long as a communication phase runs on its rank.
func (s *schedule) twoBatch(rts [2]*Routing, halves [2]*Result) *Timeline {
	hook := s.c.Overlap == OverlapHook
	var full, beside [2][]rankCompute
	for i := range full {
		full[i] = computeTimes(rts[i], s.c, s.c.Costs.SMs, false, s.slow)
		if !hook {
			beside[i] = computeTimes(rts[i], s.c, s.c.Costs.SMs-s.commSMs, true, s.slow)
		}
	}
	b := func(i int, routed bool) []sim.Time {
		if hook {
			return nil
		}
		return pick(beside[i], routed)
	}
	// Program order: both dispatches, the shared experts while they fly,
	// then each micro-batch's experts and its combine.
	ops := []op{
		{name: "dispatch A", phase: &halves[0].Dispatch},
		{name: "shared expert A", compute: true, dur: pick(full[0], false), beside: b(0, false)},
		{name: "dispatch B", phase: &halves[1].Dispatch},
		{name: "shared expert B", compute: true, dur: pick(full[1], false), beside: b(1, false)},
		{name: "experts A", compute: true, dur: pick(full[0], true), beside: b(0, true), deps: []int{0}, routed: true},
		{name: "combine A", phase: &halves[0].Combine, deps: []int{4}},
		{name: "experts B", compute: true, dur: pick(full[1], true), beside: b(1, true), deps: []int{2}, routed: true},
		{name: "combine B", phase: &halves[1].Combine, deps: []int{6}},
	}
	tl := s.run(ops)
	tl.ComputeSMs = s.c.Costs.SMs - s.commSMs
	if hook {
		tl.ComputeSMs = s.c.Costs.SMs
	}
	tl.MicroBatches = halves[:]
	return tl
}

func pick(rc []rankCompute, routed bool) []sim.Time {
	out := make([]sim.Time, len(rc))
	for r, c := range rc {
		if routed {
			out[r] = c.routed
		} else {
			out[r] = c.shared
		}
	}
	return out
}

// pred is what set an op's start on a rank: an earlier op's end there
// (or, under the hook, the end of its sending kernel); op -1 is the
// layer's start.
type pred struct {
	op, rank int
	send     bool
}

// placed is an op's times on each rank and what set its start there.
type placed struct {
	start, end, sendEnd []sim.Time
	by                  []pred
}

// stream is one kind of stream on every rank: when each is free, and
// which op freed it.
type stream struct {
	free []sim.Time
	by   []pred
}

func newStream(n int) stream {
	s := stream{free: make([]sim.Time, n), by: make([]pred, n)}
	for r := range s.by {
		s.by[r] = pred{op: -1, rank: r}
	}
	return s
}

// run places ops in program order. A compute op starts on a rank when its
// compute stream is free and its deps are done there; a communication op
// starts on every rank at once, when each rank's communication stream is
// free and its deps are done (and, under the hook, its compute stream,
// which the sending kernel then holds for the rank's issue time).
//
// Beside each other a GEMM and a phase slow down; which spans overlap
// depends on the placement, so the placement repeats with the previous
// one's spans until it settles (a few passes).
func (s *schedule) run(ops []op) *Timeline {
	var pl []placed
	var comm, comp [][][2]sim.Time
	for range 6 {
		next := s.place(ops, comm, comp)
		if pl != nil && samePlacement(pl, next) {
			break
		}
		pl = next
		comm, comp = spans(ops, pl, s.ranks)
	}
	return s.timeline(ops, pl)
}

// spans are each rank's communication and compute spans of a placement,
// in time order.
func spans(ops []op, pl []placed, n int) (comm, comp [][][2]sim.Time) {
	comm, comp = make([][][2]sim.Time, n), make([][][2]sim.Time, n)
	for i, o := range ops {
		for r := range n {
			sp := [2]sim.Time{pl[i].start[r], pl[i].end[r]}
			if o.compute {
				comp[r] = append(comp[r], sp)
			} else {
				comm[r] = append(comm[r], sp)
			}
		}
	}
	for r := range n {
		slices.SortFunc(comm[r], func(a, b [2]sim.Time) int { return cmp.Compare(a[0], b[0]) })
		slices.SortFunc(comp[r], func(a, b [2]sim.Time) int { return cmp.Compare(a[0], b[0]) })
	}
	return comm, comp
}

func samePlacement(a, b []placed) bool {
	for i := range a {
		if !slices.Equal(a[i].end, b[i].end) {
			return false
		}
	}
	return true
}

// place is one pass of run, with the spans the previous pass found.
func (s *schedule) place(ops []op, commSpans, compSpans [][][2]sim.Time) []placed {
	n := s.ranks
	hook := s.c.Overlap == OverlapHook
	pl := make([]placed, len(ops))
	comm, comp := newStream(n), newStream(n)
	for i, o := range ops {
		p := placed{start: make([]sim.Time, n), end: make([]sim.Time, n), by: make([]pred, n)}
		ready := func(r int) (sim.Time, pred) {
			at, by := sim.Time(0), pred{op: -1, rank: r}
			for _, d := range o.deps {
				if pl[d].end[r] > at {
					at, by = pl[d].end[r], pred{op: d, rank: r}
				}
			}
			for _, st := range []*stream{&comp, &comm} {
				use := (st == &comp && (o.compute || hook)) || (st == &comm && !o.compute)
				if use && st.free[r] > at {
					at, by = st.free[r], st.by[r]
				}
			}
			return at, by
		}
		if o.compute {
			for r := range n {
				p.start[r], p.by[r] = ready(r)
				p.end[r] = p.start[r] + o.dur[r]
				if o.beside != nil && commSpans != nil {
					p.end[r] = progress(p.start[r], o.dur[r], o.beside[r], commSpans[r])
				}
				comp.free[r], comp.by[r] = p.end[r], pred{op: i, rank: r}
			}
			pl[i] = p
			continue
		}
		at, by := sim.Time(0), pred{op: -1}
		for r := range n {
			if t, b := ready(r); t > at || (r == 0 && t == at) {
				at, by = t, b
			}
		}
		p.sendEnd = make([]sim.Time, n)
		for r := range n {
			p.start[r], p.by[r] = at, by
			d := o.phase.Ranks[r].Ready
			p.end[r] = at + d
			if !hook && compSpans != nil && s.c.Costs.CommBeside > 1 {
				p.end[r] = progress(at, d, scale(d, s.c.Costs.CommBeside), compSpans[r])
			}
			p.sendEnd[r] = at + o.phase.Ranks[r].IssueDone
			comm.free[r], comm.by[r] = p.end[r], pred{op: i, rank: r}
			if hook {
				// The sending kernel holds the compute stream until the
				// rank's posts are out; receiving takes no SM.
				comp.free[r], comp.by[r] = p.sendEnd[r], pred{op: i, rank: r, send: true}
			}
		}
		pl[i] = p
	}
	return pl
}

// progress is when an op that takes full alone and beside next to the
// other kind of work ends, started at start: it runs at the slower rate
// while one of the spans (in time order) runs.
func progress(start, full, beside sim.Time, spans [][2]sim.Time) sim.Time {
	if full <= 0 {
		return start
	}
	left := 1.0 // of the op's work
	at := start
	for _, sp := range spans {
		if sp[1] <= at {
			continue
		}
		if sp[0] > at {
			// Whole-GPU time before the span.
			gap := float64(sp[0]-at) / float64(full)
			if gap >= left {
				return at + sim.Time(left*float64(full))
			}
			left -= gap
			at = sp[0]
		}
		over := float64(sp[1]-at) / float64(beside)
		if over >= left {
			return at + sim.Time(left*float64(beside))
		}
		left -= over
		at = sp[1]
	}
	return at + sim.Time(left*float64(full))
}

// timeline reads the figures and the critical path off the placed ops.
func (s *schedule) timeline(ops []op, pl []placed) *Timeline {
	n := s.ranks
	tl := &Timeline{Overlap: s.c.Overlap}
	var end sim.Time
	last := pred{op: -1}
	for i := range ops {
		for r := range n {
			if pl[i].end[r] > end || (pl[i].end[r] == end && last.op < i) {
				end, last = pl[i].end[r], pred{op: i, rank: r}
			}
		}
	}
	tl.LayerUs = end.Us()
	busy := make([]sim.Time, n)
	routed := make([]sim.Time, n)
	for i, o := range ops {
		if o.compute {
			for r := range n {
				d := pl[i].end[r] - pl[i].start[r]
				busy[r] += d
				if o.routed {
					routed[r] += d
				}
			}
			continue
		}
		var e sim.Time
		for r := range n {
			e = max(e, pl[i].end[r])
			if s.c.Overlap == OverlapHook {
				busy[r] += pl[i].sendEnd[r] - pl[i].start[r]
			}
		}
		tl.CommUs += (e - pl[i].start[0]).Us()
	}
	var sum sim.Time
	for r := range n {
		tl.ComputeUs = max(tl.ComputeUs, busy[r].Us())
		sum += routed[r]
		if routed[r] > routed[tl.HotRank] {
			tl.HotRank = r
		}
	}
	tl.HotExpertUs = routed[tl.HotRank].Us()
	tl.MeanExpertUs = sum.Us() / float64(n)
	tl.HotTokens = maxTokens(s.cfg.Routing, tl.HotRank)
	tl.ExposedUs = max(0, tl.LayerUs-tl.ComputeUs)
	tl.Critical = s.critical(ops, pl, last)
	var longest Step
	for _, st := range tl.Critical {
		if st.Us() > longest.Us() {
			longest = st
		}
	}
	tl.BoundBy = longest.Label()
	return tl
}

// critical walks back from the op that ended last through what set each
// op's start.
func (s *schedule) critical(ops []op, pl []placed, at pred) []Step {
	var path []Step
	for at.op >= 0 {
		o, p := ops[at.op], pl[at.op]
		st := Step{Name: o.name, Compute: o.compute, Rank: at.rank, StartUs: p.start[at.rank].Us(), EndUs: p.end[at.rank].Us()}
		if !o.compute {
			st.Cause = o.phase.BoundBy
			if at.send {
				st.Name += " (send)"
				st.EndUs = p.sendEnd[at.rank].Us()
			}
		}
		path = append(path, st)
		at = p.by[at.rank]
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// maxTokens is the most tokens any of rank's local experts receives.
func maxTokens(rt *Routing, rank int) int {
	most := 0
	for _, m := range expertLoad(rt)[rank] {
		most = max(most, m)
	}
	return most
}
