package transport

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"moebench/internal/field"
	"moebench/internal/report"
)

// Mechanism is a family of transports declared to the seam: its name,
// the knobs a user may turn, the breakdown causes its transports report,
// and how a configuration of it (a preset's data) becomes a Transport.
// Everything above the seam (the workload, the CLI, sizing) works from
// these declarations and never inspects a mechanism's own configuration.
type Mechanism interface {
	// Name is the mechanism's name, as --transport takes it.
	Name() string
	// Summary is one line for --transport's help.
	Summary() string
	// Knobs are the settings the mechanism takes, in the order a sweep
	// and a sizing study vary them.
	Knobs() []Knob
	// Causes are the breakdown causes of the mechanism's own NIC time
	// (Times.Own), in order.
	Causes() []Cause
	// Build returns the transport named name of configuration cfg (the
	// mechanism's own configuration type, as its presets hold it) with
	// the settings and the workload's needs applied. A setting of a knob
	// the mechanism does not declare is an error.
	Build(cfg any, name string, s Settings, n Needs) (Transport, error)
}

// Sizer is implemented by mechanisms a sizing study can explore: the
// configurations to try for a layer of the given channels, with the
// user's lists (by knob name; missing = the mechanism's default grid).
// Each configuration comes with a short label for the candidate's name.
type Sizer interface {
	SizeSpace(channels int, lists map[string][]int) ([]Sized, error)
}

// Sized is one configuration a sizing study tries.
type Sized struct {
	Settings Settings
	Label    string // e.g. "qps=4" or "T2/R16/B4"
}

// Knob is one setting of a mechanism: an integer in [Min, Max] (Max 0:
// no upper bound), or one of Choices. The CLI builds a flag of Name for
// every knob any registered mechanism declares; a sweep varies it; the
// reports show it under Column when it varies and under Field in CSV.
type Knob struct {
	Name    string // flag and Settings key, e.g. "qps-per-peer"
	Column  string // table column when swept, e.g. "qps/peer"
	Field   string // CSV column (0 where unset); "" = none
	Label   string // plot axis, e.g. "RC QPs per peer"
	Help    string
	Sizes   string // the grid a sizing study tries by default, in words; "" = not sized
	Min     int
	Max     int
	Choices []string
}

// IsChoice reports whether the knob takes one of a list of names.
func (k Knob) IsChoice() bool { return len(k.Choices) > 0 }

// Check reports whether v is a value the knob takes; a refusal is a
// field.Error naming the knob, which a command shows as its flag.
func (k Knob) Check(v string) error {
	if k.IsChoice() {
		if slices.Contains(k.Choices, v) {
			return nil
		}
		return field.Valuef(k.Name, report.Quote(v), "want one of %s", strings.Join(k.Choices, ", "))
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return field.Valuef(k.Name, report.Quote(v), "want an integer")
	}
	switch {
	case n < k.Min:
		return field.Valuef(k.Name, n, "must be at least %d", k.Min)
	case k.Max > 0 && n > k.Max:
		return field.Valuef(k.Name, n, "must be at most %d", k.Max)
	}
	return nil
}

// CheckSizes refuses a list of sizes to try for k that holds one below 1
// or one k refuses (Check), the first such in order.
func (k Knob) CheckSizes(v []int) error {
	for _, x := range v {
		if x < 1 {
			return field.Valuef(k.Name, x, "must be at least 1")
		}
		if err := k.Check(strconv.Itoa(x)); err != nil {
			return err
		}
	}
	return nil
}

// Cause is a share of the critical path a mechanism attributes to
// something of its own, such as a connection-context miss.
type Cause struct {
	Name string // the breakdown key, e.g. "conn_miss"
	Help string
}

// MaxOwnCauses is how many causes of its own a transport may report per
// Op (Times.Own).
const MaxOwnCauses = 2

// Settings are knob values by knob name; a knob not set keeps the
// configuration's own value.
type Settings map[string]string

// Int is an integer knob's value, 0 when unset.
func (s Settings) Int(name string) int {
	n, _ := strconv.Atoi(s[name])
	return n
}

// Clone returns a copy of s.
func (s Settings) Clone() Settings {
	c := make(Settings, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

// Unknown reports the first setting (in name order) that ks does not
// declare, or "".
func (s Settings) Unknown(ks []Knob) string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !slices.ContainsFunc(ks, func(k Knob) bool { return k.Name == n }) {
			return n
		}
	}
	return ""
}

// Needs are what the workload asks of every transport it opens.
type Needs struct {
	// Channels is how many channels (queue selectors) the layer's own
	// traffic posts on.
	Channels int
	// Reserved is how many channels past them reserved background
	// traffic posts on, each to get a queue of its own.
	Reserved int
}

var registry struct {
	sync.Mutex
	mechs  []Mechanism
	causes []Cause
}

// Register makes a mechanism known by its name; registering a name twice
// panics (a programming error, as with database/sql.Register).
func Register(m Mechanism) {
	registry.Lock()
	defer registry.Unlock()
	for _, o := range registry.mechs {
		if o.Name() == m.Name() {
			panic("transport: Register called twice for " + m.Name())
		}
	}
	registry.mechs = append(registry.mechs, m)
	for _, c := range m.Causes() {
		if !slices.ContainsFunc(registry.causes, func(o Cause) bool { return o.Name == c.Name }) {
			registry.causes = append(registry.causes, c)
		}
	}
}

// Mechanisms lists the registered mechanisms in registration order.
func Mechanisms() []Mechanism {
	registry.Lock()
	defer registry.Unlock()
	return slices.Clone(registry.mechs)
}

// Lookup returns the registered mechanism of that name.
func Lookup(name string) (Mechanism, error) {
	for _, m := range Mechanisms() {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("unknown mechanism %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names are the registered mechanisms' names, in registration order.
func Names() []string {
	var names []string
	for _, m := range Mechanisms() {
		names = append(names, m.Name())
	}
	return names
}

// AllKnobs is every knob a registered mechanism declares, once each (the
// first declaration wins), in registration order.
func AllKnobs() []Knob {
	var out []Knob
	for _, m := range Mechanisms() {
		for _, k := range m.Knobs() {
			if !slices.ContainsFunc(out, func(o Knob) bool { return o.Name == k.Name }) {
				out = append(out, k)
			}
		}
	}
	return out
}

// Causes is every cause a registered mechanism declares, once each, in
// registration order.
func Causes() []Cause {
	registry.Lock()
	defer registry.Unlock()
	return slices.Clone(registry.causes)
}

// Takes reports whether m declares the knob named name.
func Takes(m Mechanism, name string) bool {
	return slices.ContainsFunc(m.Knobs(), func(k Knob) bool { return k.Name == name })
}

// Takers are the names of the registered mechanisms that declare the knob
// named name, in registration order.
func Takers(name string) []string {
	var out []string
	for _, m := range Mechanisms() {
		if Takes(m, name) {
			out = append(out, m.Name())
		}
	}
	return out
}

// PowersOfTwo lists 1, 2, 4, ... up to n.
func PowersOfTwo(n int) []int {
	var v []int
	for x := 1; x <= n; x *= 2 {
		v = append(v, x)
	}
	return v
}

// SizeList is the user's list for knob name (sorted, duplicates dropped),
// else def: the values a Sizer tries. Every value must be at least 1.
func SizeList(name string, lists map[string][]int, def []int) ([]int, error) {
	v := slices.Clone(lists[name])
	if len(v) == 0 {
		v = slices.Clone(def)
	}
	slices.Sort(v)
	v = slices.Compact(v)
	for _, x := range v {
		if x < 1 {
			return nil, field.Valuef(name, x, "must be at least 1")
		}
	}
	return v, nil
}
