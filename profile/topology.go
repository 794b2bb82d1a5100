package profile

import (
	"fmt"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
)

// Setting is a constant's value, by name.
type Setting struct {
	Name  string
	Value float64
}

// ParseTopology reads a fabric's name, KIND[:ROUTING], into the topo.*
// constants it stands for: switch (every NIC on one non-blocking switch,
// tiers 1), or leaf-spine (two tiers) with ecmp or adaptive routing, or
// without, the profile's. The other topo.* constants (radix,
// oversubscription, hops, GPUs per NIC) keep their values.
func ParseTopology(s string) ([]Setting, error) {
	kind, routing, hasRouting := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	switch kind {
	case "switch":
		if hasRouting {
			return nil, fmt.Errorf("%s: one switch has no routing to choose (want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive)", report.Quote(s))
		}
		return []Setting{{"topo.tiers", 1}}, nil
	case "leaf-spine":
		out := []Setting{{"topo.tiers", 2}}
		switch {
		case !hasRouting:
		case routing == "ecmp":
			out = append(out, Setting{"topo.adaptive", 0})
		case routing == "adaptive":
			out = append(out, Setting{"topo.adaptive", 1})
		default:
			return nil, fmt.Errorf("%s: routing %s: want ecmp or adaptive", report.Quote(s), report.Quote(routing))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive", report.Quote(s))
}

// SetTopology sets the topo.* constants the fabric named spec stands for
// (ParseTopology), each with source as its source; sets applied after it
// may refine them. A name it does not read is a field.Error of
// "topology".
func (p *Profile) SetTopology(spec, source string) error {
	vals, err := ParseTopology(spec)
	if err != nil {
		return field.Errorf("topology", "%v", err)
	}
	for _, v := range vals {
		// ParseTopology names schema constants within their ranges only.
		if err := p.SetValue(v.Name, v.Value, source); err != nil {
			return field.Errorf("topology", "%w", err)
		}
	}
	return nil
}
