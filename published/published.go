package published

import (
	"fmt"
	"strconv"
	"strings"
)

// Metrics a row compares: what the library's test printed, in the model's
// terms.
const (
	MeanUs     = "mean µs"          // the phase's mean time
	DeepEPGBps = "DeepEP algo GB/s" // bandwidth as DeepEP's tests count it
	NVLinkGBps = "NVLink GB/s"      // bytes over NVLink per rank over the phase
)

// Row is one published figure and the run that predicts it.
type Row struct {
	Experiment string // the table it comes from
	Case       string // its row there (EP size)
	Phase      string // dispatch or combine
	Metric     string // MeanUs, DeepEPGBps or NVLinkGBps
	Value      float64
	Source     string
	// Conditions are the run's: the prediction is what moebench run
	// prints for them (Args).
	Conditions Conditions
	// NumSMs is the SMs the measured code launched its kernels on where
	// that differs from DeepEP's choice today (0: today's); a figure of
	// the same conditions from today's code matches the row all the same.
	NumSMs int
}

// Args are moebench run's flags for the row's conditions and launch, less
// the profile.
func (r Row) Args() []string {
	a := r.Conditions.Args()
	if r.NumSMs > 0 {
		a = append(a, "--num-sms", strconv.Itoa(r.NumSMs))
	}
	return a
}

// Modes of DeepEP's kernels.
const (
	LL     = "ll"     // low-latency: test_low_latency.py
	Normal = "normal" // normal (high-throughput): test_intranode.py, test_internode.py
)

// Conditions are what one run of DeepEP's tests fixes.
type Conditions struct {
	Mode        string // LL or Normal
	Ranks       int
	GPUsPerNode int
	Experts     int
	TopK        int
	// TopKGroups limits a token to that many expert groups (DeepSeek-V3's
	// topk_group; 0: no limit) of ExpertGroups (0: one a node, as
	// test_internode.py groups them).
	TopKGroups, ExpertGroups int
	Hidden                   int
	Tokens                   int // a rank's
	// NVLink says same-node peers use NVLink: low-latency mode's
	// allow_nvlink_for_low_latency_mode; normal mode always does.
	NVLink        bool
	DispatchDType string // fp8 or bf16; combine is BF16
}

// Args are moebench run's flags for c, less the profile: DeepEP V1's
// kernels (preset deepep-v1) on the shape c gives.
func (c Conditions) Args() []string {
	n := strconv.Itoa
	a := []string{"--workload", "deepep-ll"}
	if c.Mode == Normal {
		a = []string{"--workload", "deepseek-v3", "--mode", "normal"}
	}
	a = append(a, "--ranks", n(c.Ranks), "--gpus-per-node", n(c.GPUsPerNode), "--experts", n(c.Experts), "--topk", n(c.TopK))
	// deepseek-v3 brings its own group limit: say it, or lift it.
	if c.TopKGroups > 0 || c.Mode == Normal {
		a = append(a, "--topk-groups", n(c.TopKGroups))
	}
	if c.ExpertGroups > 0 {
		a = append(a, "--expert-groups", n(c.ExpertGroups))
	}
	a = append(a, "--tokens", n(c.Tokens), "--hidden", n(c.Hidden), "--dispatch-dtype", c.DispatchDType, "--preset", "deepep-v1")
	if c.NVLink && c.Mode == LL {
		a = append(a, "--nvlink")
	}
	return a
}

// OneNode reports whether the run's ranks fit in one node: nothing crosses
// RDMA, and DeepEP's test of it is test_intranode.py.
func (c Conditions) OneNode() bool { return c.Ranks <= c.GPUsPerNode }

// Experiment names the kind of run, as the suite's tables do.
func (c Conditions) Experiment() string {
	switch {
	case c.Mode == LL && c.NVLink:
		return "ll-nvlink"
	case c.Mode == LL:
		return "ll-rdma"
	case c.OneNode():
		return "normal-intranode"
	}
	return "normal-internode"
}

// Unit is the metric's unit.
func (r Row) Unit() string {
	if r.Metric == MeanUs {
		return "µs"
	}
	return "GB/s"
}

// Suite is a named set of rows measured on one platform.
type Suite struct {
	Name, Description string
	Profile           string // the built-in profile of that platform
	Rows              []Row
}

// Suites lists every suite by name.
func Suites() []Suite { return []Suite{DeepEP()} }

// Match returns the suite's row of r's conditions, phase and metric.
func (s Suite) Match(r Row) (Row, bool) {
	for _, p := range s.Rows {
		if p.Conditions == r.Conditions && p.Phase == r.Phase && p.Metric == r.Metric {
			return p, true
		}
	}
	return Row{}, false
}

// Get returns the suite called name.
func Get(name string) (Suite, error) {
	var names []string
	for _, s := range Suites() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Suite{}, fmt.Errorf("no published suite %q (have %s)", name, strings.Join(names, ", "))
}
