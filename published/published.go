package published

import (
	"fmt"
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
	// Args are moebench run's flags for the same configuration, less the
	// profile: the prediction is what that run prints.
	Args []string
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
