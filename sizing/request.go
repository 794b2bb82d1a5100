package sizing

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
)

// Request is a study as a command asks for it, unchecked: the layer's
// shape and the names of its mode, background and routing, the
// transports to consider and what the machine may spend on the study.
// Plan checks it in that order and turns it into a Study; a wrong input
// comes back as a field.Error naming it (a command's flag without
// dashes), or as one of the errors below.
type Request struct {
	// Shape is the workload's with what was given over it, its dtypes
	// included; Plan validates it and places it on Profile.
	Shape   moe.Shape
	Profile *profile.Profile
	Mode    string // moe.ParseMode's names
	// NVLink, when set, says whether peers of one NVLink domain use it;
	// unset, they do in normal mode and where a domain spans hosts.
	NVLink *bool
	// Background is workloads.ParseBackground's syntax; one that says
	// neither shared nor reserved is sized both ways.
	Background string
	NumSMs     int
	Chunk      int
	ChunkGiven bool   // a chunk was asked for, 0 included: only normal mode takes one
	Routing    string // moe.ParseRoutingSpec's syntax
	Seed       uint64
	// Transports are mechanisms, each through its presets, or, with
	// ByPreset, Presets are presets by name (preset.Resolve).
	Transports, Presets []string
	ByPreset            bool
	// Knobs are the knob lists given, by name, each value at least 1 and
	// one its knob takes: the budget weighs each mechanism's largest
	// candidate on them, and the study sizes over them. Every knob
	// given must be one a preset's mechanism takes (preset.CheckTaken).
	Knobs map[string][]int
	// Jobs is how many candidates run at once; 0 is as many as fit in
	// Budget, up to one a core.
	Jobs      int
	Budget    budget.Budget
	Limits    LimitsRequest
	NoPayload bool
	Log       *zap.Logger
}

// ErrNegative refuses a negative SM count or chunk.
var ErrNegative = errors.New("the SMs and the chunk must be 0 (the default) or more")

// OverBudget is a study the budget cannot hold: Jobs of its largest
// candidate on a mechanism at once, in turn or side by side. Err's What
// names the layer; Jobs and InTurn say how it would have run.
type OverBudget struct {
	Jobs   int
	InTurn bool
	Err    *budget.Exceeded
}

func (e *OverBudget) Error() string { return e.Err.Error() }
func (e *OverBudget) Unwrap() error { return e.Err }

// Plan checks r and returns the study it asks for: its deployment with
// the routing generated, its presets, knob lists, limits (NewLimits) and
// Jobs. The compute is the caller's to add.
func Plan(r Request) (*Study, error) {
	if r.Log == nil {
		r.Log = zap.NewNop()
	}
	d, s, err := r.deployment()
	if err != nil {
		return nil, err
	}
	spec, err := moe.ParseRoutingSpec(r.Routing)
	if err != nil {
		return nil, field.Errorf("routing", "%v", err)
	}
	presets, err := preset.Resolve(r.Transports, r.Presets, r.ByPreset, r.Profile)
	if err != nil {
		return nil, err
	}
	jobs, inTurn, err := r.fitJobs(s, d.Mode, presets)
	if err != nil {
		return nil, err
	}
	if d.Routing, err = moe.Generate(s, spec, r.Seed); err != nil {
		return nil, err
	}
	d.InTurn = inTurn
	st := &Study{Deployment: d, Space: Space{Presets: presets}, Jobs: jobs, Spec: spec, Budget: r.Budget, Log: r.Log}
	if st.Space.Knobs, err = r.knobs(presets); err != nil {
		return nil, err
	}
	if st.Limits, err = NewLimits(r.Limits); err != nil {
		return nil, err
	}
	if r.Jobs < 0 {
		return nil, field.Valuef("jobs", r.Jobs, "must be 0 (one per core) or more")
	}
	return st, nil
}

// knobs are r's knob lists that hold values, each checked against its
// knob (in transport.AllKnobs' order), the first given against presets.
func (r *Request) knobs(presets []preset.Preset) (map[string][]int, error) {
	lists := map[string][]int{}
	for _, k := range transport.AllKnobs() {
		if v := r.Knobs[k.Name]; len(v) > 0 {
			if err := k.CheckSizes(v); err != nil {
				return nil, err
			}
			lists[k.Name] = v
		}
	}
	for _, k := range transport.AllKnobs() {
		if len(lists[k.Name]) > 0 {
			if err := preset.CheckTaken(k.Name, presets); err != nil {
				return nil, err
			}
		}
	}
	return lists, nil
}

// deployment is r's mode, NVLink and background, with no routing yet,
// and its shape on the profile.
func (r *Request) deployment() (d Deployment, s moe.Shape, err error) {
	if err := r.Shape.Validate(); err != nil {
		return d, s, err
	}
	if s, err = r.Shape.OnProfile(r.Profile); err != nil {
		return d, s, err
	}
	mode, err := moe.ParseMode(r.Mode)
	if err != nil {
		return d, s, field.Errorf("mode", "%v", err)
	}
	nv := mode == moe.Normal || s.DomainGPUs() > s.GPUsPerNode
	if r.NVLink != nil {
		nv = *r.NVLink
	}
	bg, err := workloads.ParseBackground(r.Background)
	if err != nil {
		return d, s, field.Errorf("background", "%v", err)
	}
	lower := strings.ToLower(r.Background)
	both := bg.CTAs > 0 && !strings.Contains(lower, "shared") && !strings.Contains(lower, "reserved")
	if r.NumSMs < 0 || r.Chunk < 0 {
		return d, s, ErrNegative
	}
	if err := moe.CheckChunk(r.ChunkGiven, mode); err != nil {
		return d, s, err
	}
	if err := s.CheckWrites(mode, r.Chunk); err != nil {
		return d, s, err
	}
	return Deployment{Mode: mode, Profile: r.Profile, NVLink: nv, NumSMs: r.NumSMs, Chunk: r.Chunk,
		Background: bg, BothQueues: both, NoPayload: r.NoPayload}, s, nil
}

// fitJobs refuses, before generating anything, a study the machine
// cannot hold: the largest candidate on each mechanism it considers, Jobs
// at once. Left to its default, Jobs comes down to what fits; like a
// single layer, an LL study too large side by side runs its layers in
// turn when that fits.
func (r *Request) fitJobs(s moe.Shape, mode moe.Mode, presets []preset.Preset) (jobs int, inTurn bool, err error) {
	costs := LargestCosts(s, mode, presets, r.Knobs)
	most := r.Jobs
	if most == 0 {
		most = runtime.GOMAXPROCS(0)
	}
	least := most
	if r.Jobs == 0 {
		least = 1
	}
	jobs, inTurn = r.Budget.Jobs(costs, mode, least, most)
	if jobs < most {
		r.Log.Info("size runs fewer candidates at once to fit memory", zap.Int("jobs", jobs), zap.Int("cores", most),
			zap.String("budget", report.Bytes(r.Budget.Bytes)))
	}
	what := fmt.Sprintf("size of EP%d × %d tokens × top-%d", s.Ranks, s.Tokens, s.TopK)
	for _, c := range costs {
		if err := r.Budget.Allow(what, budget.Times(c, jobs, inTurn)); err != nil {
			return 0, false, &OverBudget{Jobs: jobs, InTurn: inTurn, Err: err.(*budget.Exceeded)}
		}
	}
	return jobs, inTurn, nil
}

// Bounds of the limits given in floats: a per-GPU buffer of a pebibyte
// is past any GPU and still counts in int64 bytes; a layer of 10^12 µs
// (11.6 days) is past any run and within the simulator's picosecond
// clock.
const (
	maxBufferGiB = 1 << 20
	maxTargetUs  = 1e12
)

// LimitsRequest are a study's limits as a command gives them: GPU memory
// in GiB, and the mechanisms' own limits by resource name, -1 for none.
type LimitsRequest struct {
	MaxQPsPerNIC        int
	MaxBufferGiB        float64
	TargetUs, Tolerance float64
	Own                 map[string]int
}

// NewLimits checks l, each limit a field named as the commands name it
// (the mechanisms' own by their declared flag), and returns the Limits.
func NewLimits(l LimitsRequest) (Limits, error) {
	for _, c := range []struct {
		name   string
		v, max float64
	}{{"max-buffer-gib", l.MaxBufferGiB, maxBufferGiB}, {"target-us", l.TargetUs, maxTargetUs}, {"tolerance", l.Tolerance, 1}} {
		if err := field.Float(c.name, c.v, 0, c.max); err != nil {
			return Limits{}, err
		}
	}
	lim := Limits{MaxQPsPerNIC: l.MaxQPsPerNIC, MaxGPUBytes: int64(l.MaxBufferGiB * (1 << 30)),
		TargetUs: l.TargetUs, Tolerance: l.Tolerance}
	if l.MaxQPsPerNIC < 0 {
		return Limits{}, field.Errorf("max-qps-per-nic", "%v", lim.Validate())
	}
	for _, d := range transport.Held() {
		v, ok := l.Own[d.Name]
		switch {
		case !ok || v == -1:
		case v < -1:
			return Limits{}, field.Errorf(d.Limit.Flag, "%d, want -1 (no limit) or more", v)
		default:
			if lim.Own == nil {
				lim.Own = map[string]int{}
			}
			lim.Own[d.Name] = v
		}
	}
	return lim, nil
}

// Total is how many candidates the whole study has, for a shard to
// carry and merge to check.
func (s *Study) Total() int {
	c, _ := Candidates(&s.Deployment, s.Space)
	return len(c)
}
