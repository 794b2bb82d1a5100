package main

import (
	"errors"
	"fmt"
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

// lists are the integer knobs' lists given, by name.
func (k *knobFlags) lists() map[string][]int {
	lists := map[string][]int{}
	for n, v := range k.ints {
		if len(*v) > 0 {
			lists[n] = *v
		}
	}
	return lists
}

// checkApplies fails when a knob was given but no chosen preset's
// mechanism takes it, rather than ignoring it (preset.CheckTaken).
func (k *knobFlags) checkApplies(presets []preset.Preset) error {
	for _, kn := range k.knobs {
		if k.given(kn.Name) {
			if err := preset.CheckTaken(kn.Name, presets); err != nil {
				return knobErr(err)
			}
		}
	}
	return nil
}

// knobErr is preset.CheckTaken's refusal as the command line's.
func knobErr(err error) error {
	var ke *preset.KnobError
	if errors.As(err, &ke) {
		return fmt.Errorf("%w: --%s applies to %s; none of the chosen transports (%s) takes it", errUsage, ke.Knob,
			strings.Join(ke.Takers, ", "), strings.Join(ke.Chosen, ", "))
	}
	return err
}
