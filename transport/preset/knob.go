package preset

import (
	"fmt"
	"slices"
	"strings"

	"moebench/transport"
)

// KnobError is a knob given that no chosen preset's mechanism declares:
// rather than ignored, it is refused. Takers are the registered
// mechanisms that declare it, Chosen the presets' mechanisms, once each
// in order.
type KnobError struct {
	Knob           string
	Takers, Chosen []string
}

func (e *KnobError) Error() string {
	return fmt.Sprintf("%s applies to %s; none of the chosen mechanisms (%s) takes it", e.Knob, strings.Join(e.Takers, ", "), strings.Join(e.Chosen, ", "))
}

// CheckTaken refuses the knob named knob (a KnobError) when no preset of
// ps runs on a mechanism that declares it.
func CheckTaken(knob string, ps []Preset) error {
	takers := transport.Takers(knob)
	var chosen []string
	for _, p := range ps {
		if slices.Contains(takers, p.Mechanism) {
			return nil
		}
		if !slices.Contains(chosen, p.Mechanism) {
			chosen = append(chosen, p.Mechanism)
		}
	}
	return &KnobError{Knob: knob, Takers: takers, Chosen: chosen}
}
