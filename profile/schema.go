package profile

import (
	"slices"
	"strings"
)

// Def declares one constant: the schema that profiles are checked against.
type Def struct {
	Name string  // dotted name, e.g. "nic.msg_rate_mps"
	Unit string  // ns, cycles, MHz, GB/s, B, Mmsg/s, count, ratio, µs
	Min  float64 // inclusive
	Max  float64 // inclusive
	Doc  string  // what the model does with it
}

// schema gathers the declarations of every schema_*.go file. Each file owns
// the constants of one part of the model, so parts can grow independently.
func schema() []Def {
	var all []Def
	for _, part := range [][]Def{gpuDefs, nicDefs, fabricDefs, proxyDefs, dcDefs, connDefs, nvlinkDefs, kernelDefs, emunicDefs, topoDefs, capacityDefs, efaDefs, faultDefs, computeDefs} {
		all = append(all, part...)
	}
	return all
}

var defIndex = func() map[string]Def {
	m := map[string]Def{}
	for _, d := range schema() {
		if _, dup := m[d.Name]; dup {
			panic("profile: constant declared twice: " + d.Name)
		}
		m[d.Name] = d
	}
	return m
}()

// Defs returns the schema sorted by name.
func Defs() []Def {
	ds := schema()
	slices.SortFunc(ds, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	return ds
}

// Lookup returns the declaration of name.
func Lookup(name string) (Def, bool) {
	d, ok := defIndex[name]
	return d, ok
}

// suggest returns the declared names closest to name (longest common
// prefix first), to help with typos in --set and profile files.
func suggest(name string) []string {
	common := func(a string) int {
		n := 0
		for n < len(a) && n < len(name) && a[n] == name[n] {
			n++
		}
		return n
	}
	ds := Defs()
	slices.SortStableFunc(ds, func(a, b Def) int { return common(b.Name) - common(a.Name) })
	var out []string
	for _, d := range ds {
		if common(d.Name) < 4 || len(out) == 5 {
			break
		}
		out = append(out, d.Name)
	}
	return out
}
