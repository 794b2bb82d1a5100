package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"moebench/sweep"
	"moebench/transport"
	"moebench/transport/preset"
)

// knobFlags are the flags of every knob a registered mechanism declares:
// integer knobs take lists of integers, choice knobs lists of names.
type knobFlags struct {
	knobs []transport.Knob
	ints  map[string]*[]int
	strs  map[string]*[]string
}

// register adds a flag per knob; sizing says the values are lists to try.
func (k *knobFlags) register(fs *pflag.FlagSet, sizing bool) {
	k.knobs = nil
	k.ints, k.strs = map[string]*[]int{}, map[string]*[]string{}
	for _, kn := range transport.AllKnobs() {
		help := kn.Help
		if sizing {
			if kn.Sizes == "" || kn.IsChoice() {
				continue
			}
			help = fmt.Sprintf("%s to try (default: %s)", kn.Label, kn.Sizes)
		}
		k.knobs = append(k.knobs, kn)
		if kn.IsChoice() {
			k.strs[kn.Name] = fs.StringSlice(kn.Name, nil, help+": "+strings.Join(kn.Choices, ", "))
			continue
		}
		k.ints[kn.Name] = fs.IntSlice(kn.Name, nil, help)
	}
}

// given reports whether the knob's flag has a value.
func (k *knobFlags) given(name string) bool {
	if p := k.ints[name]; p != nil {
		return len(*p) > 0
	}
	if p := k.strs[name]; p != nil {
		return len(*p) > 0
	}
	return false
}

// names are the knobs' flag names.
func (k *knobFlags) names() []string {
	var n []string
	for _, kn := range k.knobs {
		n = append(n, kn.Name)
	}
	return n
}

// axes are the values each knob was given, as given (sweep.WithKnobs
// checks them).
func (k *knobFlags) axes() []sweep.KnobAxis {
	var out []sweep.KnobAxis
	for _, kn := range k.knobs {
		a := sweep.KnobAxis{Knob: kn}
		if p := k.strs[kn.Name]; p != nil {
			a.Values = splitList(*p)
		} else {
			for _, v := range *k.ints[kn.Name] {
				a.Values = append(a.Values, strconv.Itoa(v))
			}
		}
		out = append(out, a)
	}
	return out
}

// sizeLists are the integer knobs' lists, for a sizing study.
func (k *knobFlags) sizeLists() (map[string][]int, error) {
	lists := map[string][]int{}
	for _, kn := range k.knobs {
		p := k.ints[kn.Name]
		if p == nil || len(*p) == 0 {
			continue
		}
		for _, v := range *p {
			if v < 1 {
				return nil, fmt.Errorf("%w: --%s %d: must be at least 1", errUsage, kn.Name, v)
			}
			if err := kn.Check(strconv.Itoa(v)); err != nil {
				return nil, fmt.Errorf("%w: %w", errUsage, err)
			}
		}
		lists[kn.Name] = *p
	}
	return lists, nil
}

// checkApplies fails when a knob was given but no chosen preset's
// mechanism takes it, rather than ignoring it.
func (k *knobFlags) checkApplies(presets []preset.Preset) error {
	for _, kn := range k.knobs {
		if !k.given(kn.Name) {
			continue
		}
		var mechs []string
		takers := transport.Takers(kn.Name)
		for _, p := range presets {
			if slices.Contains(takers, p.Mechanism) {
				return nil
			}
			if !slices.Contains(mechs, p.Mechanism) {
				mechs = append(mechs, p.Mechanism)
			}
		}
		return fmt.Errorf("%w: --%s applies to %s; none of the chosen transports (%s) takes it", errUsage, kn.Name,
			strings.Join(takers, ", "), strings.Join(mechs, ", "))
	}
	return nil
}
