package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport"
)

// budgetFlags bound what a command may take, checked from the estimate
// before any work starts.
type budgetFlags struct {
	maxMemory string
	bytes     int64 // resolved: --max-memory, else this machine's memory
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
		b.bytes = machineMemory()
		return nil
	}
	v, err := parseBytes(b.maxMemory)
	if err != nil {
		return fmt.Errorf("%w: --max-memory: %v", errUsage, err)
	}
	b.bytes = v
	return nil
}

// fits reports whether an estimate of bytes is within the budget.
func (b *budgetFlags) fits(bytes int64) bool { return b.bytes <= 0 || bytes <= b.bytes }

// inTurn reports whether a layer in mode needs dispatch and combine in
// turn to fit: an LL layer over the budget side by side but not in turn.
func (b *budgetFlags) inTurn(mode moe.Mode, c moe.Cost) bool {
	return mode == moe.LL && !b.fits(c.Bytes) && b.fits(c.InTurn)
}

// place decides how one layer of cost runs within the budget and refuses
// it when it cannot: an LL layer over the budget side by side that fits
// with dispatch and combine in turn runs them in turn (the same result,
// one core, about half the memory), logged; what says what was asked.
func (b *budgetFlags) place(log *zap.Logger, what string, mode moe.Mode, c moe.Cost) (inTurn bool, _ moe.Cost, _ error) {
	switch {
	case b.inTurn(mode, c):
		log.Info("dispatch and combine in turn to fit memory", zap.String("point", what),
			zap.String("side_by_side", report.Bytes(c.Bytes)), zap.String("in_turn", report.Bytes(c.InTurn)),
			zap.String("budget", report.Bytes(b.bytes)))
		inTurn, c.Bytes = true, c.InTurn
		what += ", dispatch and combine in turn"
	case mode == moe.LL && !b.fits(c.Bytes):
		what += fmt.Sprintf(" (about %s even with dispatch and combine in turn)", report.Bytes(c.InTurn))
	}
	return inTurn, c, b.allow(what, c)
}

// point is one layer of a sweep to place within the budget, and how it
// was placed.
type point struct {
	what   string
	mode   moe.Mode
	cost   moe.Cost
	inTurn bool
	weight int64 // the estimate it runs under
	many   bool  // in turn so as to run beside others
}

// placePoints decides how each of pts runs, conc at once at most: beside
// the others side by side when that fits, else in turn (two in-turn
// layers on two cores finish sooner than two side by side one after the
// other), else alone, side by side or in turn; it refuses a point that
// fits in none. A point in turn only to run beside others, whose
// neighbours in the order cannot run beside it, runs alone side by side.
// The moves to in turn are logged.
func (b *budgetFlags) placePoints(log *zap.Logger, pts []point, conc int64) error {
	for k := range pts {
		p := &pts[k]
		c := p.cost
		switch {
		case conc > 1 && b.fits(clampMul(c.Bytes, conc)):
			p.weight = c.Bytes
		case conc > 1 && p.mode == moe.LL && b.fits(clampMul(c.InTurn, conc)):
			p.inTurn, p.many, p.weight = true, true, c.InTurn
		case b.fits(c.Bytes):
			p.weight = c.Bytes
		case p.mode == moe.LL && b.fits(c.InTurn):
			p.inTurn, p.weight = true, c.InTurn
		default:
			_, _, err := b.place(zap.NewNop(), p.what, p.mode, c)
			return err
		}
	}
	for k := range pts {
		p := &pts[k]
		beside := func(j int) bool { return j >= 0 && j < len(pts) && b.fits(p.weight+pts[j].weight) }
		if p.many && b.fits(p.cost.Bytes) && !beside(k-1) && !beside(k+1) {
			p.inTurn, p.many, p.weight = false, false, p.cost.Bytes
		}
	}
	for _, p := range pts {
		if !p.inTurn {
			continue
		}
		c, what := p.cost, p.what
		if p.many {
			c.Bytes, c.InTurn = clampMul(c.Bytes, conc), clampMul(c.InTurn, conc)
			what += fmt.Sprintf(", %d points at once", conc)
		}
		b.place(log, what, p.mode, c)
	}
	return nil
}

// allow refuses an estimate over the budget; what says what was asked.
func (b *budgetFlags) allow(what string, c moe.Cost) error {
	if b.fits(c.Bytes) {
		return nil
	}
	limit := fmt.Sprintf("--max-memory %s (%s)", b.maxMemory, report.Bytes(b.bytes))
	if b.maxMemory == "" {
		limit = fmt.Sprintf("the %s this machine has (--max-memory to change)", report.Bytes(b.bytes))
	}
	return fmt.Errorf("%w: %s would need about %s of memory and %s messages, more than %s; ask for less",
		errUsage, what, report.Bytes(c.Bytes), report.Large(c.Messages), limit)
}

// layerCost is the estimated cost of one layer of configuration c on a
// mechanism, its state as the mechanism declares it for the layer's
// channels and the knobs in force (transport.CostOf).
func layerCost(c config, mechanism string, numSMs int) moe.Cost {
	layer, _ := moe.Channels(c.shape, c.mode, numSMs, c.bg)
	return moe.EstimateCost(c.shape, c.mode, transport.CostOf(mechanism, c.shape.Ranks, layer, c.knobs))
}

// parseBytes reads a size: a number with an optional unit, B, KB, MB, GB,
// TB (powers of 1000) or K, KiB, M, MiB, G, GiB, T, TiB (powers of 1024).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%s is not a size (want e.g. 8GiB, 500MB or 1073741824)", report.Quote(s))
	}
	mult := map[string]float64{"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%s: unknown unit %s (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", report.Quote(s), report.Quote(unit))
	}
	b := v * mult
	if b < 1 || b >= math.MaxInt64 {
		return 0, fmt.Errorf("%s is out of range (want at least 1 byte)", report.Quote(s))
	}
	return int64(b), nil
}

// machineMemory is the physical memory (MemTotal), or 0 (no limit) where
// it cannot be read.
func machineMemory() int64 { return meminfo("/proc/meminfo", "MemTotal") }

func clampInt64(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// clampMul is a·b, at most math.MaxInt64.
func clampMul(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
