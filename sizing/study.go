package sizing

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport"
)

// Study sizes a deployment over a space of configurations.
type Study struct {
	Deployment Deployment
	Space      Space
	Limits     Limits
	// Jobs is how many candidates run at once; 0 means GOMAXPROCS.
	Jobs int
	// Spec is the routing the deployment's was generated from.
	Spec moe.RoutingSpec
	// Budget is the memory the study may hold, which InTurn fits.
	Budget budget.Budget
	Log    *zap.Logger
	// Progress, when set, is called after each run with the runs done and
	// the runs this study (or shard) does at most.
	Progress func(done, total int, name string)
	// Ready, when set, is called once every candidate is built and
	// checked, before any is estimated or modelled: the caller's last chance to
	// refuse the study before its work (every model has read its
	// constants by then).
	Ready func() error
}

// Limits are the constraints a candidate must meet.
type Limits struct {
	MaxQPsPerNIC int   `json:"max_qps_per_nic,omitempty"` // 0: none
	MaxGPUBytes  int64 `json:"max_gpu_bytes,omitempty"`   // 0: none
	// Own bounds the kinds of resource the mechanisms declare with a
	// limit (transport.Resource.Limit), by name, per their words: the
	// most of it a candidate may hold (a proxy's workers per GPU); a kind
	// not listed has none.
	Own      map[string]int `json:"max_own,omitempty"`
	TargetUs float64        `json:"target_us,omitempty"` // 0: none
	// Tolerance is how much slower than the fastest the recommendation
	// may be to save resources, as a fraction.
	Tolerance float64 `json:"tolerance"`
}

// Equal reports whether l and o are the same limits.
func (l Limits) Equal(o Limits) bool {
	return l.MaxQPsPerNIC == o.MaxQPsPerNIC && l.MaxGPUBytes == o.MaxGPUBytes && l.TargetUs == o.TargetUs &&
		l.Tolerance == o.Tolerance && maps.Equal(l.Own, o.Own)
}

// Validate names the first impossible limit.
func (l Limits) Validate() error {
	switch {
	case l.MaxQPsPerNIC < 0:
		return fmt.Errorf("max QPs per NIC: %d is negative (0: no limit)", l.MaxQPsPerNIC)
	case l.MaxGPUBytes < 0:
		return fmt.Errorf("max GPU memory: %d B is negative (0: no limit)", l.MaxGPUBytes)
	case !(l.TargetUs >= 0) || math.IsInf(l.TargetUs, 0):
		return fmt.Errorf("target: %g µs, want finite and not negative (0: none)", l.TargetUs)
	case !(l.Tolerance >= 0 && l.Tolerance <= 1):
		return fmt.Errorf("tolerance: %g, want a fraction in [0, 1]", l.Tolerance)
	}
	for _, name := range slices.Sorted(maps.Keys(l.Own)) {
		if v := l.Own[name]; v < 0 {
			return fmt.Errorf("%s: %d is negative (leave it out for no limit)", name, v)
		}
	}
	return nil
}

// Run sizes every candidate (see the package documentation) and returns
// those of shard index of count (0 of 1 for all). A shard runs the
// first-wave candidates of every preset, because what it prunes depends on
// them, and of the rest only its own; Finish over every shard's
// candidates gives the unsharded result.
func (s *Study) Run(index, count int) ([]Candidate, error) {
	if count < 1 || index < 0 || index >= count {
		return nil, fmt.Errorf("shard %d of %d: want 0 <= index < count", index, count)
	}
	if err := s.Limits.Validate(); err != nil {
		return nil, err
	}
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	d := &s.Deployment
	if d.InTurn {
		s.Log.Info("dispatch and combine in turn to fit memory", zap.String("budget", report.Bytes(s.Budget.Bytes)))
	}
	if d.Compute != nil {
		if err := d.Compute.Validate(d.Routing.Shape, d.Mode); err != nil {
			return nil, err
		}
	}
	cands, err := Candidates(d, s.Space)
	if err != nil {
		return nil, err
	}
	if err := s.check(cands); err != nil {
		return nil, err
	}
	if s.Ready != nil {
		if err := s.Ready(); err != nil {
			return nil, err
		}
	}
	if err := s.estimate(cands); err != nil {
		return nil, err
	}
	s.reject(cands)
	classes(cands)
	mine := func(c *Candidate) bool { return c.Index%count == index }

	// Wave 1: per preset and queue policy, the candidate with the lowest
	// floor (the fewest resources on ties) runs first.
	first := map[string]int{}
	for i := range cands {
		c := &cands[i]
		if c.Stage != "" {
			continue
		}
		k := c.Preset + "/" + c.Queues
		j, ok := first[k]
		if !ok || better(c, &cands[j]) {
			first[k] = i
		}
	}
	var wave1 []int
	for _, i := range first {
		wave1 = append(wave1, i)
	}
	slices.Sort(wave1)
	// Wave 2: the rest, unless a first-wave run is at least as fast as
	// their floor with no more resources: they can only be dominated.
	var wave2 []int
	for i := range cands {
		c := &cands[i]
		if c.Stage == "" && !slices.Contains(wave1, i) && mine(c) {
			wave2 = append(wave2, i)
		}
	}
	total := len(wave1) + len(wave2)
	done := 0
	if err := s.runAll(cands, wave1, &done, total); err != nil {
		return nil, err
	}
	run2 := wave2
	if s.Deployment.Compute == nil {
		// A floor bounds communication alone: under an overlap schedule
		// the layer may hide it, so nothing is pruned by it.
		run2 = prune(cands, wave1, wave2, s.Limits)
	}
	if err := s.runAll(cands, run2, &done, done+len(run2)); err != nil {
		return nil, err
	}
	var out []Candidate
	for _, c := range cands {
		if mine(&c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// prune marks the candidates of wave2 that a first-wave run already beats
// at their floor with no more resources, and returns the others.
func prune(cands []Candidate, wave1, wave2 []int, l Limits) []int {
	var run []int
	for _, i := range wave2 {
		c := &cands[i]
		for _, a := range wave1 {
			ac := &cands[a]
			if feasible(ac, l) && ac.Resources.noMore(c.Resources) && ac.Figures.LayerUs <= c.FloorUs {
				c.Stage, c.By = StagePruned, a
				c.Reason = fmt.Sprintf("at best %s µs (%s floor), and %s takes %s µs with no more resources",
					report.NumGrouped(c.FloorUs), c.FloorBy, ac.Name, report.NumGrouped(ac.Figures.LayerUs))
				break
			}
		}
		if c.Stage == "" {
			run = append(run, i)
		}
	}
	return run
}

// better reports whether a should run before b in the first wave.
func better(a, b *Candidate) bool {
	if a.FloorUs != b.FloorUs {
		return a.FloorUs < b.FloorUs
	}
	if c := slices.Compare(a.Resources.cost(), b.Resources.cost()); c != 0 {
		return c < 0
	}
	return a.Index < b.Index
}

// check builds each candidate's transport and fails, unrun, those that
// no run could change: queues too shallow for the mode, more memory or
// queues than the hardware has, over a limit its library states
// (moe.PrecheckWith). The estimate still says
// what they would take.
func (s *Study) check(cands []Candidate) error {
	d := &s.Deployment
	for i := range cands {
		c := &cands[i]
		tr, err := c.pre.Build(c.Knobs, c.needs)
		if err != nil {
			c.Stage, c.Reason = StageFailed, fmt.Sprintf("cannot build: %v", err)
			continue
		}
		cfg, lim := moe.LayerConfig{Mode: d.Mode, Transport: tr, Profile: d.Profile, NVLink: d.NVLink,
			NumSMs: d.NumSMs, Chunk: d.Chunk, Background: c.bg}, moe.Limits{Library: c.pre.Limits}
		err = moe.PrecheckWith(d.Routing.Shape, cfg, lim)
		switch {
		case errors.Is(err, moe.ErrQueueDepth):
			c.Stage, c.Reason = StageFailed, fmt.Sprintf("cannot run: %v", err)
			continue
		case errors.Is(err, moe.ErrOverCapacity):
			c.Stage, c.Reason = StageFailed, fmt.Sprintf("cannot run: %v", err)
		case err != nil:
			return fmt.Errorf("candidate %s: %w", c.Name, err)
		}
		// What it takes of each limit, over one or not.
		if c.Headroom, err = moe.Headroom(d.Routing.Shape, cfg, lim); err != nil {
			return fmt.Errorf("candidate %s: %w", c.Name, err)
		}
	}
	return nil
}

// estimate builds each candidate's transport and sizes it analytically
// where the transport is a transport.Estimator.
func (s *Study) estimate(cands []Candidate) error {
	d := &s.Deployment
	shape := d.Routing.Shape
	// The demands differ only by background, which they do not list; none
	// is worked out when every candidate failed already.
	var disp, comb *transport.Demand
	haveDemand := false
	if slices.ContainsFunc(cands, func(c Candidate) bool { return c.Stage == "" }) {
		disp, comb, haveDemand = moe.Demands(d.Routing, d.Mode, d.NVLink, d.Background)
	}
	buffer := moe.LLBufferBytes(shape)
	if d.Mode == moe.Normal {
		buffer = moe.NormalBufferBytes(shape, moe.NormalBufferChannels(d.NumSMs))
	}
	for i := range cands {
		c := &cands[i]
		tr, err := c.pre.Build(c.Knobs, c.needs)
		if err != nil {
			continue
		}
		est, ok := tr.(transport.Estimator)
		if !ok {
			// No analytic estimate: no floor, and the run reports the
			// resources.
			c.Resources = resources(transport.Resources{}, buffer, shape.GPUsPerNode)
			continue
		}
		var r [2]transport.Estimate
		ds := []*transport.Demand{disp, comb}
		if !haveDemand {
			// Configuration figures only: no flows, nothing exact.
			empty := &transport.Demand{Ranks: shape.Ranks, GPUsPerNode: shape.GPUsPerNode, NVLink: d.NVLink, Channels: d.Channels()}
			ds = []*transport.Demand{empty, empty}
		}
		for k, dm := range ds {
			if r[k], err = est.Estimate(dm, d.Profile); err != nil {
				return fmt.Errorf("candidate %s: %w", c.Name, err)
			}
		}
		c.Resources = resources(r[0].Resources.Max(r[1].Resources), buffer, shape.GPUsPerNode)
		c.Resources.Estimated = true
		c.exact = haveDemand && disp.Exact && c.bg.CTAs == 0
		c.FloorUs = (r[0].Floor + r[1].Floor).Us()
		c.FloorBy = r[0].FloorBy
		if r[1].Floor > r[0].Floor {
			c.FloorBy = r[1].FloorBy
		}
		if c.exact && r[0].Class != "" && r[1].Class != "" {
			c.class = r[0].Class + "|" + r[1].Class
		}
	}
	return nil
}

// resources turns a transport's per-NIC report into the candidate's:
// what it holds of a declared kind counted per GPU also per host.
func resources(r transport.Resources, buffer int64, perNode int) Resources {
	out := Resources{QPsPerNIC: r.QPsPerNIC, ActiveConnPerNIC: r.ActiveConnPerNIC, ConnKnee: r.ConnKnee,
		BufferBytes: buffer, ConnMissRate: r.ConnMissRate, Own: r.Own}
	for _, d := range transport.Held() {
		if d.Host == "" {
			continue
		}
		if out.Host == nil {
			out.Host = map[string]int{}
		}
		out.Host[d.Host] = d.PerHost(r.Own[d.Name], perNode)
	}
	// A proxy's rings and send queues live in host memory; GPU-initiated
	// transports keep their send queues in GPU memory.
	if r.HostQueues {
		out.HostQueueBytes = r.QueueBytesPerRank
	} else {
		out.GPUQueueBytes = r.QueueBytesPerRank
	}
	return out
}

// reject marks candidates that break a limit on their estimated
// resources or floor.
func (s *Study) reject(cands []Candidate) {
	for i := range cands {
		c := &cands[i]
		if c.Stage != "" {
			continue
		}
		if why := overLimit(c, s.Limits, c.exact); why != "" {
			c.Stage, c.Reason = StageRejected, why
			continue
		}
		if t := s.Limits.TargetUs; t > 0 && c.FloorUs > t {
			c.Stage = StageRejected
			c.Reason = fmt.Sprintf("misses the %s µs target: at best %s µs (%s floor)", report.NumGrouped(t), report.NumGrouped(c.FloorUs), c.FloorBy)
		}
	}
}

// overLimit says which limit c's resources break, or "". The knee is
// checked only where the connection figures are known.
func overLimit(c *Candidate, l Limits, connKnown bool) string {
	r := &c.Resources
	var own string
	for _, d := range transport.Held() {
		if m, ok := l.Own[d.Name]; ok && d.Limit != nil && r.Own[d.Name] > m {
			own = fmt.Sprintf("over the limit of %d %s: %d", m, d.Words, r.Own[d.Name])
			break
		}
	}
	switch {
	case l.MaxQPsPerNIC > 0 && r.QPsPerNIC > l.MaxQPsPerNIC:
		return fmt.Sprintf("over the limit of %s QPs per NIC: %s", report.Grouped(l.MaxQPsPerNIC), report.Grouped(r.QPsPerNIC))
	case l.MaxGPUBytes > 0 && r.GPUBytes() > l.MaxGPUBytes:
		return fmt.Sprintf("over the limit of %s GiB of buffers per GPU: %s GiB (%s RDMA buffer + %s send queues)",
			report.GiB(l.MaxGPUBytes), report.GiB(r.GPUBytes()), report.GiB(r.BufferBytes), report.GiB(r.GPUQueueBytes))
	case own != "":
		return own
	case connKnown && r.ConnKnee > 0 && r.ActiveConnPerNIC > r.ConnKnee:
		return fmt.Sprintf("over the knee: %s active connections per NIC > the context cache's %s", report.Grouped(r.ActiveConnPerNIC), report.Grouped(r.ConnKnee))
	}
	return ""
}

// classes leaves one candidate of each class to run, the one with the
// fewest resources; the others take its figures.
func classes(cands []Candidate) {
	rep := map[string]int{}
	for i := range cands {
		c := &cands[i]
		if c.Stage != "" || c.class == "" {
			continue
		}
		k := c.Preset + "/" + c.Queues + "/" + c.class
		j, ok := rep[k]
		if !ok {
			rep[k] = i
			continue
		}
		if slices.Compare(c.Resources.cost(), cands[j].Resources.cost()) < 0 {
			rep[k] = i
		}
	}
	for i := range cands {
		c := &cands[i]
		if c.Stage != "" || c.class == "" {
			continue
		}
		if j := rep[c.Preset+"/"+c.Queues+"/"+c.class]; j != i {
			c.Stage, c.RunBy = StageClass, j
		}
	}
}

// runAll runs the candidates at idx, Jobs at a time (budget.Indexed):
// the error is the first candidate's in idx that failed, whichever failed
// first, and the candidates not yet started when one fails are not run.
func (s *Study) runAll(cands []Candidate, idx []int, done *int, total int) error {
	_, err := budget.Indexed(len(idx), s.Jobs, func(k int) (struct{}, error) {
		return struct{}{}, s.runOne(&cands[idx[k]])
	}, func(k int) {
		*done++
		if s.Progress != nil {
			s.Progress(*done, total, cands[idx[k]].Name)
		}
	})
	return err
}

// runOne models the layer on c.
func (s *Study) runOne(c *Candidate) error {
	d := &s.Deployment
	tr, err := c.pre.Build(c.Knobs, c.needs)
	if err != nil {
		c.Stage, c.Reason = StageFailed, fmt.Sprintf("cannot build: %v", err)
		return nil
	}
	log := s.Log
	if log == nil {
		log = zap.NewNop()
	}
	wall := time.Now()
	cfg := moe.LayerConfig{Routing: d.Routing, Mode: d.Mode, Transport: tr, Profile: d.Profile, NVLink: d.NVLink,
		Log: log, NumSMs: d.NumSMs, Chunk: d.Chunk, Background: c.bg, NoPayload: d.NoPayload, InTurn: d.InTurn}
	var res *moe.Result
	if d.Compute != nil {
		res, err = moe.RunWithCompute(cfg, *d.Compute)
	} else {
		res, err = moe.RunLayer(cfg)
	}
	if err != nil {
		if errors.Is(err, moe.ErrQueueDepth) {
			c.Stage, c.Reason = StageFailed, fmt.Sprintf("cannot run: %v", err)
			return nil
		}
		return fmt.Errorf("candidate %s: %w", c.Name, err)
	}
	log.Info("candidate modelled", zap.String("candidate", c.Name), zap.Float64("dispatch_max_us", res.Dispatch.Time.Max),
		zap.Float64("combine_max_us", res.Combine.Time.Max), zap.Duration("wall", time.Since(wall)))
	c.Resources = resources(res.Resources.Resources, res.Resources.BufferBytesPerRank, d.Routing.Shape.GPUsPerNode)
	c.Stage, c.RunBy = StageRun, c.Index
	c.Figures = &Figures{
		Dispatch: phase(&res.Dispatch), Combine: phase(&res.Combine),
		LayerUs: res.Dispatch.Time.Max + res.Combine.Time.Max, BoundBy: res.BoundBy, Correct: res.Correct,
	}
	if tl := res.Compute; tl != nil {
		f := c.Figures
		f.CommUs, f.LayerUs, f.ComputeUs, f.ExposedUs, f.BoundBy = f.LayerUs, tl.LayerUs, tl.ComputeUs, tl.ExposedUs, tl.BoundBy
	}
	return nil
}

func phase(p *moe.Phase) Phase {
	return Phase{MeanUs: p.Time.Mean, P99Us: p.Time.P99, MaxUs: p.Time.Max, BoundBy: p.BoundBy}
}
