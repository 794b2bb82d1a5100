package sizing

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/report"
	"moebench/transport"
)

// Result is a finished study.
type Result struct {
	Limits     Limits      `json:"limits"`
	Candidates []Candidate `json:"candidates"`
	// Runs is how many candidates were modelled.
	Runs int `json:"runs"`
	// Front lists the Pareto-optimal candidates over layer time and
	// resources, fastest first.
	Front []int `json:"front"`
	// Recommended is the recommendation's index, -1 when every candidate
	// was rejected; Reasons say why it was chosen.
	Recommended int      `json:"recommended"`
	Reasons     []string `json:"reasons"`
}

// feasible reports whether c was modelled, checked out and meets every
// limit.
func feasible(c *Candidate, l Limits) bool {
	return c.Figures != nil && c.Stage != StageFailed && c.Stage != StageRejected && c.Stage != StagePruned &&
		c.Figures.Correct && overLimit(c, l, true) == "" && (l.TargetUs == 0 || c.Figures.LayerUs <= l.TargetUs)
}

// Finish judges candidates (every shard's, in any order): it gives class
// members their representative's figures, rejects what breaks a limit,
// finds the Pareto front, recommends one candidate and says of every
// other why it lost. It depends only on its arguments.
func Finish(cands []Candidate, l Limits) (*Result, error) {
	cs := slices.Clone(cands)
	slices.SortFunc(cs, func(a, b Candidate) int { return a.Index - b.Index })
	for i := range cs {
		if cs[i].Index != i {
			return nil, fmt.Errorf("candidate %d missing (have %d candidates, next is %d)", i, len(cs), cs[i].Index)
		}
	}
	res := &Result{Limits: l, Candidates: cs, Recommended: -1, Front: []int{}, Reasons: []string{}}
	if err := res.takeClasses(); err != nil {
		return nil, err
	}
	ok, err := res.reject()
	if err != nil {
		return nil, err
	}
	res.front(ok)
	if len(res.Front) == 0 {
		res.Reasons = append(res.Reasons, "no candidate meets the limits: see why each was rejected")
		return res, nil
	}
	res.recommend()
	return res, nil
}

// takeClasses gives each candidate that runs as another of its class the
// figures, or the fate, of the one that ran, and counts the runs.
func (res *Result) takeClasses() error {
	cs := res.Candidates
	for i := range cs {
		c := &cs[i]
		c.Verdict, c.Figures = "", cloneFigures(c.Figures)
		if c.Stage == StageRun || c.Stage == StageClass {
			c.By, c.Reason = -1, ""
		}
		if c.Stage == StageRun {
			res.Runs++
		}
		if c.Stage != StageClass {
			continue
		}
		if c.RunBy < 0 || c.RunBy >= len(cs) {
			return fmt.Errorf("candidate %d: runs as %d, which does not exist", i, c.RunBy)
		}
		rep := &cs[c.RunBy]
		switch rep.Stage {
		case StageRun:
			c.Figures = cloneFigures(rep.Figures)
			c.Resources.ConnMissRate = rep.Resources.ConnMissRate
		case StagePruned:
			c.Stage, c.By = StagePruned, rep.By
			c.Reason = fmt.Sprintf("moves the traffic as %s does (the rest idle), which is pruned: %s", rep.Name, rep.Reason)
		case StageFailed:
			c.Stage, c.Reason = StageFailed, rep.Reason
		default:
			return fmt.Errorf("candidate %d: runs as %d, which is %s", i, c.RunBy, rep.Stage)
		}
	}
	return nil
}

// reject gives the rejections, before and after the runs, and the
// pruned their verdict; ok are the candidates left.
func (res *Result) reject() (ok []int, _ error) {
	cs, l := res.Candidates, res.Limits
	for i := range cs {
		c := &cs[i]
		switch c.Stage {
		case StageRejected, StageFailed:
			c.Verdict = Rejected
			continue
		case StagePruned:
			c.Verdict = Dominated
			continue
		}
		if c.Figures == nil {
			return nil, fmt.Errorf("candidate %d (%s) has no figures at stage %q", i, c.Name, c.Stage)
		}
		switch {
		case !c.Figures.Correct:
			c.Verdict, c.Reason = Rejected, "the layer's checks failed in the model"
		case overLimit(c, l, true) != "":
			c.Verdict, c.Reason = Rejected, overLimit(c, l, true)
		case l.TargetUs > 0 && c.Figures.LayerUs > l.TargetUs:
			c.Verdict, c.Reason = Rejected, fmt.Sprintf("misses the %s µs target: the layer takes %s µs", report.NumGrouped(l.TargetUs), report.NumGrouped(c.Figures.LayerUs))
		default:
			ok = append(ok, i)
		}
	}
	return ok, nil
}

// front is the Pareto front of ok over layer time and resources, fastest
// first; the others lose to a front candidate that dominates them where
// there is one.
func (res *Result) front(ok []int) {
	cs := res.Candidates
	dominates := func(a, b *Candidate) bool {
		if a.Figures.LayerUs > b.Figures.LayerUs || !a.Resources.noMore(b.Resources) {
			return false
		}
		return a.Figures.LayerUs < b.Figures.LayerUs || !slices.Equal(a.Resources.cost(), b.Resources.cost())
	}
	for _, i := range ok {
		c := &cs[i]
		for _, j := range ok {
			if j != i && dominates(&cs[j], c) {
				if c.By < 0 || better2(&cs[j], &cs[c.By]) {
					c.By = j
				}
			}
		}
		if c.By < 0 {
			c.Verdict = Front
			res.Front = append(res.Front, i)
		}
	}
	for _, i := range ok {
		c := &cs[i]
		if c.Verdict == Front {
			continue
		}
		for _, j := range res.Front {
			if dominates(&cs[j], c) && (cs[c.By].Verdict != Front || better2(&cs[j], &cs[c.By])) {
				c.By = j
			}
		}
		c.Verdict = Dominated
		c.Reason = lossReason(c, &cs[c.By])
	}
	slices.SortStableFunc(res.Front, func(a, b int) int {
		return cmpFloat(cs[a].Figures.LayerUs, cs[b].Figures.LayerUs)
	})
}

// recommend picks the leanest front candidate within the tolerance of
// the fastest.
func (res *Result) recommend() {
	cs, l := res.Candidates, res.Limits
	fastest := &cs[res.Front[0]]
	bound := fastest.Figures.LayerUs * (1 + l.Tolerance)
	rec := -1
	for _, i := range res.Front {
		c := &cs[i]
		if c.Figures.LayerUs > bound {
			continue
		}
		if rec < 0 || leaner(c, &cs[rec]) {
			rec = i
		}
	}
	res.Recommended = rec
	r := &cs[rec]
	r.Verdict = Recommended
	res.Reasons = recommendReasons(r, fastest, l, len(res.Front))
}

func cloneFigures(f *Figures) *Figures {
	if f == nil {
		return nil
	}
	g := *f
	return &g
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// better2 prefers the faster, then the leaner, then the earlier candidate
// as the one another loses to.
func better2(a, b *Candidate) bool {
	if a.Figures.LayerUs != b.Figures.LayerUs {
		return a.Figures.LayerUs < b.Figures.LayerUs
	}
	return leaner(a, b)
}

// leaner orders by resources, dearest first, then time, then index.
func leaner(a, b *Candidate) bool {
	ca, cb := a.Resources.cost(), b.Resources.cost()
	if c := slices.Compare(ca, cb); c != 0 {
		return c < 0
	}
	if a.Figures.LayerUs != b.Figures.LayerUs {
		return a.Figures.LayerUs < b.Figures.LayerUs
	}
	return a.Index < b.Index
}

// resourcePair prints two amounts of resource w so that they differ.
func resourcePair(w weight, a, b int64) (string, string) {
	if !w.bytes {
		return report.Grouped(int(a)), report.Grouped(int(b))
	}
	x, y := pair(float64(a)/(1<<20), float64(b)/(1<<20))
	return x + " MiB", y + " MiB"
}

// lossReason says how w beats c.
func lossReason(c, w *Candidate) string {
	var parts []string
	if tw, tc := pair(w.Figures.LayerUs, c.Figures.LayerUs); w.Figures.LayerUs < c.Figures.LayerUs {
		parts = append(parts, fmt.Sprintf("%s is faster (%s vs %s µs)", w.Name, tw, tc))
	} else {
		parts = append(parts, fmt.Sprintf("%s is as fast (%s µs)", w.Name, tw))
	}
	cw, cc := w.Resources.cost(), c.Resources.cost()
	ws, _ := weights()
	var less []string
	for i := range cw {
		if cw[i] < cc[i] {
			a, b := resourcePair(ws[i], cw[i], cc[i])
			less = append(less, fmt.Sprintf("%s %s vs %s", ws[i].name, a, b))
		}
	}
	if len(less) > 0 {
		parts = append(parts, "with less: "+strings.Join(less, ", "))
	} else {
		parts = append(parts, "with no more resources")
	}
	if c.Stage == StageClass && c.RunBy == w.Index {
		parts = append(parts, "(the same traffic through the same busy queues; the extra ones sit idle)")
	}
	return strings.Join(parts, " ")
}

// pair prints two figures with enough significant digits to tell them
// apart (three when those do).
func pair(a, b float64) (string, string) {
	sig := func(v float64, n int) string {
		digits := 1
		if v := math.Abs(v); v >= 1 {
			digits = int(math.Floor(math.Log10(v))) + 1
		}
		return strconv.FormatFloat(v, 'f', max(0, n-digits), 64)
	}
	if a == b || sig(a, 3) != sig(b, 3) {
		return report.NumGrouped(a), report.NumGrouped(b)
	}
	for n := 4; n < 10; n++ {
		if x, y := sig(a, n), sig(b, n); x != y {
			return grouped(x), grouped(y)
		}
	}
	return report.NumGrouped(a), report.NumGrouped(b)
}

// grouped puts count's thousands separators into a decimal's integer part.
func grouped(s string) string {
	sign, rest := "", s
	if strings.HasPrefix(s, "-") {
		sign, rest = "-", s[1:]
	}
	i, f, dot := strings.Cut(rest, ".")
	n, err := strconv.Atoi(i)
	if err != nil {
		return s
	}
	if i = report.Grouped(n); dot {
		i += "." + f
	}
	return sign + i
}

func recommendReasons(r, fastest *Candidate, l Limits, front int) []string {
	f := r.Figures
	out := []string{fmt.Sprintf("layer %s µs modelled (dispatch %s µs, combine %s µs on the slowest rank; mean %s and %s µs), bound by %s",
		report.NumGrouped(f.LayerUs), report.NumGrouped(f.Dispatch.MaxUs), report.NumGrouped(f.Combine.MaxUs), report.NumGrouped(f.Dispatch.MeanUs), report.NumGrouped(f.Combine.MeanUs), f.BoundBy)}
	switch {
	case r == fastest && front == 1:
		out = append(out, "the only candidate on the Pareto front")
	case r == fastest:
		out = append(out, fmt.Sprintf("the fastest of the %d candidates on the Pareto front, and the leanest within %s of it", front, pct(l.Tolerance)))
	default:
		out = append(out, fmt.Sprintf("within %s of the fastest, %s (%s µs), and the leanest there: %s", pct(l.Tolerance),
			fastest.Name, report.NumGrouped(fastest.Figures.LayerUs), lessThan(r, fastest)))
	}
	res := r.Resources
	conn := fmt.Sprintf("%s QPs per NIC, %s active connections against the context cache's knee of %s", report.Grouped(res.QPsPerNIC),
		report.Grouped(res.ActiveConnPerNIC), report.Grouped(res.ConnKnee))
	held := transport.Held()
	for _, d := range held {
		if v := res.Own[d.Name]; d.Queues != "" && v > 0 {
			conn += fmt.Sprintf(" (%d %s)", v, d.Queues)
		}
	}
	out = append(out, conn)
	mem := fmt.Sprintf("%s GiB per GPU: %s GiB RDMA buffer (DeepEP's size hint) + %s MiB of send queues", report.GiB(res.GPUBytes()), report.GiB(res.BufferBytes), report.MiB(res.GPUQueueBytes))
	if l.MaxGPUBytes > 0 {
		mem += fmt.Sprintf(", within the limit of %s GiB", report.GiB(l.MaxGPUBytes))
	}
	out = append(out, mem)
	// The dear kinds a candidate holds, else what those it holds none of
	// say it does instead.
	var have, none []string
	for _, d := range held {
		switch v := res.Own[d.Name]; {
		case !d.Dear:
		case v > 0 && d.Held != "":
			have = append(have, fmt.Sprintf(d.Held, v, res.Figure(d)))
		case v == 0 && d.None != "":
			none = append(none, d.None)
		}
	}
	if len(have) > 0 {
		return append(out, fmt.Sprintf("%s, and %s MiB of host rings and queues per GPU", strings.Join(have, "; "), report.MiB(res.HostQueueBytes)))
	}
	return append(out, none...)
}

// lessThan lists what r saves against f.
func lessThan(r, f *Candidate) string {
	cr, cf := r.Resources.cost(), f.Resources.cost()
	ws, _ := weights()
	var s []string
	for i := range cr {
		if cr[i] < cf[i] {
			a, b := resourcePair(ws[i], cr[i], cf[i])
			s = append(s, fmt.Sprintf("%s %s instead of %s", ws[i].name, a, b))
		}
	}
	if len(s) == 0 {
		return "no fewer resources"
	}
	return strings.Join(s, ", ")
}

func pct(f float64) string {
	return strconv.FormatFloat(100*f, 'g', 3, 64) + "%"
}
