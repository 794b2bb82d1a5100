package budget

import (
	"fmt"
	"math"

	"go.uber.org/zap"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport"
)

// Budget bounds the memory a command's work may take, checked from the
// estimates before any work starts.
type Budget struct {
	Bytes int64 // 0: no limit
}

// Exceeded is the refusal of work whose estimate is over the budget.
type Exceeded struct {
	What   string   // what was asked, e.g. "run of EP16 × 128 tokens × top-8 on mini-gda"
	Cost   moe.Cost // what it would need
	Budget int64
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("%s would need about %s of memory and %s messages, more than the budget of %s",
		e.What, report.Bytes(e.Cost.Bytes), report.Large(e.Cost.Messages), report.Bytes(e.Budget))
}

// Fits reports whether an estimate of bytes is within the budget.
func (b Budget) Fits(bytes int64) bool { return b.Bytes <= 0 || bytes <= b.Bytes }

// Allow refuses an estimate over the budget; what says what was asked.
func (b Budget) Allow(what string, c moe.Cost) error {
	if b.Fits(c.Bytes) {
		return nil
	}
	return &Exceeded{What: what, Cost: c, Budget: b.Bytes}
}

// InTurn reports whether a layer in mode needs dispatch and combine in
// turn to fit: an LL layer over the budget side by side but not in turn.
func (b Budget) InTurn(mode moe.Mode, c moe.Cost) bool {
	return mode == moe.LL && !b.Fits(c.Bytes) && b.Fits(c.InTurn)
}

// Place decides how one layer of cost runs within the budget and refuses
// it when it cannot: an LL layer over the budget side by side that fits
// with dispatch and combine in turn runs them in turn (the same result,
// one core, about half the memory), logged; what says what was asked. The
// cost returned is the one it runs under.
func (b Budget) Place(log *zap.Logger, what string, mode moe.Mode, c moe.Cost) (inTurn bool, _ moe.Cost, _ error) {
	switch {
	case b.InTurn(mode, c):
		log.Info("dispatch and combine in turn to fit memory", zap.String("point", what),
			zap.String("side_by_side", report.Bytes(c.Bytes)), zap.String("in_turn", report.Bytes(c.InTurn)),
			zap.String("budget", report.Bytes(b.Bytes)))
		inTurn, c.Bytes = true, c.InTurn
		what += ", dispatch and combine in turn"
	case mode == moe.LL && !b.Fits(c.Bytes):
		what += fmt.Sprintf(" (about %s even with dispatch and combine in turn)", report.Bytes(c.InTurn))
	}
	return inTurn, c, b.Allow(what, c)
}

// Point is one layer of a sweep to place within the budget, and how it
// was placed.
type Point struct {
	What string
	Mode moe.Mode
	Cost moe.Cost

	InTurn bool  // placed: dispatch and combine in turn
	Weight int64 // placed: the estimate it runs under
	many   bool  // in turn so as to run beside others
}

// PlacePoints decides how each of pts runs, conc at once at most: beside
// the others side by side when that fits, else in turn (two in-turn
// layers on two cores finish sooner than two side by side one after the
// other), else alone, side by side or in turn; it refuses a point that
// fits in none. A point in turn only to run beside others, whose
// neighbours in the order cannot run beside it, runs alone side by side.
// The moves to in turn are logged.
func (b Budget) PlacePoints(log *zap.Logger, pts []Point, conc int64) error {
	for k := range pts {
		p := &pts[k]
		c := p.Cost
		switch {
		case conc > 1 && b.Fits(ClampMul(c.Bytes, conc)):
			p.Weight = c.Bytes
		case conc > 1 && p.Mode == moe.LL && b.Fits(ClampMul(c.InTurn, conc)):
			p.InTurn, p.many, p.Weight = true, true, c.InTurn
		case b.Fits(c.Bytes):
			p.Weight = c.Bytes
		case p.Mode == moe.LL && b.Fits(c.InTurn):
			p.InTurn, p.Weight = true, c.InTurn
		default:
			_, _, err := b.Place(zap.NewNop(), p.What, p.Mode, c)
			return err
		}
	}
	for k := range pts {
		p := &pts[k]
		beside := func(j int) bool { return j >= 0 && j < len(pts) && b.Fits(p.Weight+pts[j].Weight) }
		if p.many && b.Fits(p.Cost.Bytes) && !beside(k-1) && !beside(k+1) {
			p.InTurn, p.many, p.Weight = false, false, p.Cost.Bytes
		}
	}
	for _, p := range pts {
		if !p.InTurn {
			continue
		}
		c, what := p.Cost, p.What
		if p.many {
			c.Bytes, c.InTurn = ClampMul(c.Bytes, conc), ClampMul(c.InTurn, conc)
			what += fmt.Sprintf(", %d points at once", conc)
		}
		b.Place(log, what, p.Mode, c)
	}
	return nil
}

// Jobs is how many layers of a study run at once within the budget,
// between least and most, when each of costs (the study's largest layer
// on each mechanism) may run jobs at once: the most that fit side by
// side, or, for an LL study, in turn. When none fits, it is least, in
// turn for an LL study, for the refusal to say what that would need.
func (b Budget) Jobs(costs []moe.Cost, mode moe.Mode, least, most int) (jobs int, inTurn bool) {
	jobs = least
	for j := most; j >= least; j-- {
		side, turn := true, mode == moe.LL
		for _, c := range costs {
			side = side && b.Fits(ClampMul(c.Bytes, int64(j)))
			turn = turn && b.Fits(ClampMul(c.InTurn, int64(j)))
		}
		if side || turn {
			return j, !side
		}
		inTurn = mode == moe.LL
	}
	return jobs, inTurn
}

// Times is the cost of jobs layers of c at once, in turn or side by side.
func Times(c moe.Cost, jobs int, inTurn bool) moe.Cost {
	c.Bytes = ClampMul(c.Bytes, int64(jobs))
	if inTurn {
		c.Bytes = ClampMul(c.InTurn, int64(jobs))
	}
	return c
}

// LayerCost is the estimated cost of one layer of shape in mode on a
// mechanism, its state as the mechanism declares it for the layer's
// channels (numSMs and the background's) and the knobs in force
// (transport.CostOf).
func LayerCost(s moe.Shape, mode moe.Mode, mechanism string, numSMs int, bg moe.Background, knobs transport.Settings) moe.Cost {
	layer, _ := moe.Channels(s, mode, numSMs, bg)
	return moe.EstimateCost(s, mode, transport.CostOf(mechanism, s.Ranks, layer, knobs))
}

// ClampMul is a·b, at most math.MaxInt64.
func ClampMul(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
