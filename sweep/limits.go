package sweep

import (
	"slices"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport/preset"
)

// LimitNames are the limits a point can be refused by: the profile's
// capacity constants, then every preset's library limits.
func LimitNames() []string {
	n := []string{moe.LimitMemory, moe.LimitQPs, moe.LimitQPWR}
	for _, p := range preset.All() {
		for _, l := range p.Limits {
			if !slices.Contains(n, l.Name) {
				n = append(n, l.Name)
			}
		}
	}
	return n
}

// CheckOver refuses limits to run over (Layer.Over) that are empty or
// name none of LimitNames; the names are trimmed.
func CheckOver(names []string) error {
	known := strings.Join(LimitNames(), ", ")
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return input(field.Errorf("over-limit", "empty limit name (known: %s)", known))
		case !slices.Contains(LimitNames(), n):
			return input(field.Valuef("over-limit", report.Quote(n), "unknown limit (known: %s)", known))
		}
	}
	return nil
}
