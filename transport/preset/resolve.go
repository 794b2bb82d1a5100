package preset

import (
	"slices"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/profile"
	"moebench/transport"
)

// Resolve turns mechanisms (transport names) or, with byName, preset
// names into presets. A mechanism runs through the preset of its own
// name, else its first preset, so that new presets appear without changes
// here. "all" takes what prof's platform can run (transport.InAll). Its
// errors name the field at fault, "transport" or "preset".
func Resolve(mechanisms, names []string, byName bool, prof *profile.Profile) ([]Preset, error) {
	all := All()
	if byName {
		return byNames(all, names, prof)
	}
	var mechs []string
	for _, p := range all {
		if !slices.Contains(mechs, p.Mechanism) {
			mechs = append(mechs, p.Mechanism)
		}
	}
	var out []Preset
	for _, t := range mechanisms {
		if t == "all" {
			for _, m := range mechs {
				if transport.InAll(m, prof) {
					p, _ := representative(all, m)
					out = append(out, p)
				}
			}
			continue
		}
		p, ok := representative(all, t)
		if !ok {
			return nil, field.Valuef("transport", report.Quote(t), "no preset of that mechanism (have: %s, or all)", strings.Join(mechs, ", "))
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, field.Errorf("transport", "no transport given")
	}
	return out, nil
}

// byNames are the presets named, "all" those prof's platform runs.
func byNames(all []Preset, names []string, prof *profile.Profile) ([]Preset, error) {
	var out []Preset
	for _, n := range names {
		if n == "all" {
			for _, p := range all {
				if transport.InAll(p.Mechanism, prof) {
					out = append(out, p)
				}
			}
			continue
		}
		p, err := Get(n)
		if err != nil {
			return nil, field.Errorf("preset", "%w", err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, field.Errorf("preset", "no preset given")
	}
	return out, nil
}

// representative is the preset a mechanism runs through: the one of its
// own name, else its first.
func representative(all []Preset, mechanism string) (Preset, bool) {
	for _, p := range all {
		if p.Name == mechanism && p.Mechanism == mechanism {
			return p, true
		}
	}
	for _, p := range all {
		if p.Mechanism == mechanism {
			return p, true
		}
	}
	return Preset{}, false
}
