package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"moebench/moe"
	"moebench/sweep"
)

// overLimitFlag lets run and sweep go over named limits.
const overLimitFlag = "over-limit"

// limitFlags are run's and sweep's override of the limits a deployment
// must stay under.
type limitFlags struct {
	over []string
}

func (l *limitFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&l.over, overLimitFlag, nil, "run anyway over these limits, by the name a refusal gives (a list): "+
		strings.Join(sweep.LimitNames(), ", ")+"; the output marks the result as run over them")
}

// check refuses an --over-limit naming no limit.
func (l *limitFlags) check(fs *pflag.FlagSet) error {
	over := l.over
	if fs.Changed(overLimitFlag) && len(over) == 0 {
		over = []string{""}
	}
	return inputErr(sweep.CheckOver(over))
}

// names are the limits to go over, trimmed.
func (l *limitFlags) names() []string {
	var n []string
	for _, s := range l.over {
		n = append(n, strings.TrimSpace(s))
	}
	return n
}

// limitHint says how to run over the limit err names.
func limitHint(err error) string {
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
