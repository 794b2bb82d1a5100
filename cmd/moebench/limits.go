package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport/preset"
)

// overLimitFlag lets run and sweep go over named limits.
const overLimitFlag = "over-limit"

// limitFlags are run's and sweep's override of the limits a deployment
// must stay under.
type limitFlags struct {
	over       []string
	registered bool // the command takes --over-limit
}

func (l *limitFlags) register(fs *pflag.FlagSet) {
	l.registered = true
	fs.StringSliceVar(&l.over, overLimitFlag, nil, "run anyway over these limits, by the name a refusal gives (a list): "+
		strings.Join(limitNames(), ", ")+"; the output marks the result as run over them")
}

// limitNames are the limits a run can be refused by: the profile's
// capacity constants, then every preset's library limits.
func limitNames() []string {
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

// check refuses an --over-limit naming no limit.
func (l *limitFlags) check(fs *pflag.FlagSet) error {
	known := limitNames()
	if fs.Changed(overLimitFlag) && len(l.over) == 0 {
		return fmt.Errorf("%w: --%s: empty limit name (known: %s)", errUsage, overLimitFlag, strings.Join(known, ", "))
	}
	for _, n := range l.over {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return fmt.Errorf("%w: --%s: empty limit name (known: %s)", errUsage, overLimitFlag, strings.Join(known, ", "))
		case !slices.Contains(known, n):
			return fmt.Errorf("%w: --%s %s: unknown limit (known: %s)", errUsage, overLimitFlag, report.Quote(n), strings.Join(known, ", "))
		}
	}
	return nil
}

// names are the limits to go over, trimmed.
func (l *limitFlags) names() []string {
	var n []string
	for _, s := range l.over {
		n = append(n, strings.TrimSpace(s))
	}
	return n
}

// limitHint says how to run over the limit err names, for a command that
// takes --over-limit.
func limitHint(f *layerFlags, err error) string {
	if !f.limits.registered {
		return ""
	}
	var le *moe.LimitError
	if errors.As(err, &le) {
		return fmt.Sprintf(" (--%s %s runs it anyway, marked)", overLimitFlag, le.Limit.Name)
	}
	var ce *moe.CapacityError
	if errors.As(err, &ce) && ce.Kind == moe.CapacityWRs {
		return fmt.Sprintf(" (--%s %s runs it anyway, marked)", overLimitFlag, ce.Constant)
	}
	return ""
}
