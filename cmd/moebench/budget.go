package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"moebench/budget"
	"moebench/internal/report"
	"moebench/moe"
)

// budgetFlags bound what a command may take, checked from the estimate
// before any work starts.
type budgetFlags struct {
	maxMemory string
	limit     budget.Budget // resolved: --max-memory, else this machine's memory
}

const maxMemoryUsage = "refuse work whose estimated memory exceeds `SIZE`, and keep the collector's heap within it (e.g. 8GiB, 500MB; default this machine's memory)"

func (b *budgetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&b.maxMemory, "max-memory", "", maxMemoryUsage)
}

// registerInTurn is register for the commands that run an LL layer too
// large side by side with dispatch and combine in turn.
func (b *budgetFlags) registerInTurn(fs *pflag.FlagSet) {
	fs.StringVar(&b.maxMemory, "max-memory", "", maxMemoryUsage+"; an LL layer that fits only with dispatch and combine in turn runs them in turn")
}

// check resolves the budget.
func (b *budgetFlags) check() error {
	if b.maxMemory == "" {
		b.limit = budget.Machine()
		return nil
	}
	v, err := budget.ParseBytes(b.maxMemory)
	if err != nil {
		return fmt.Errorf("%w: --max-memory: %v", errUsage, err)
	}
	b.limit = budget.Budget{Bytes: v}
	return nil
}

// usage shows a refusal over the budget as the command line's: a usage
// error that names --max-memory, or the machine's memory it defaults to.
func (b *budgetFlags) usage(err error) error {
	var ex *budget.Exceeded
	if !errors.As(err, &ex) {
		return err
	}
	limit := fmt.Sprintf("--max-memory %s (%s)", b.maxMemory, report.Bytes(ex.Budget))
	if b.maxMemory == "" {
		limit = fmt.Sprintf("the %s this machine has (--max-memory to change)", report.Bytes(ex.Budget))
	}
	return fmt.Errorf("%w: %s would need about %s of memory and %s messages, more than %s; ask for less",
		errUsage, ex.What, report.Bytes(ex.Cost.Bytes), report.Large(ex.Cost.Messages), limit)
}

// allow refuses an estimate over the budget; what says what was asked.
func (b *budgetFlags) allow(what string, c moe.Cost) error {
	return b.usage(b.limit.Allow(what, c))
}
