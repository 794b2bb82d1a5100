package microbench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/profile"
	"moebench/transport/gda"
)

// OrderingNames are the doorbell orderings' names, in gda's order.
func OrderingNames() []string {
	var n []string
	for _, m := range gda.OrderingModes() {
		n = append(n, m.String())
	}
	return n
}

// ParseOrderings reads orderings by name, or "all" alone for every one;
// an unknown name is a field.Error of ordering.
func ParseOrderings(names []string) ([]gda.Ordering, error) {
	if len(names) == 1 && names[0] == "all" {
		return gda.OrderingModes(), nil
	}
	var out []gda.Ordering
	for _, n := range names {
		m, ok := gda.ParseOrdering(n)
		if !ok {
			return nil, field.Valuef("ordering", report.Quote(n), "want one of %v or all", OrderingNames())
		}
		out = append(out, m)
	}
	return out, nil
}

// ParseStyles reads publication styles by name; an unknown name is a
// field.Error of style.
func ParseStyles(names []string) ([]gda.Publication, error) {
	var out []gda.Publication
	for _, n := range names {
		style, ok := gda.ParsePublication(n)
		if !ok {
			return nil, field.Valuef("style", report.Quote(n), "want thread, coop, handoff or lock")
		}
		out = append(out, style)
	}
	return out, nil
}

// ErrNoneRuns is RateSweep's error when no combination of the grid can
// run.
var ErrNoneRuns = errors.New("no combination of the sweep can run")

// RateSweep is the grid's posting rates: its combinations checked and
// passed to allow (Configs), then modelled (RateRows); a grid none of
// whose combinations can run is ErrNoneRuns.
func RateSweep(p *profile.Profile, g RateGrid, allow func(gda.RateConfig) error, skip func(name string, err error)) ([]Row, error) {
	cfgs, err := g.Configs(p, allow)
	if err != nil {
		return nil, err
	}
	rows, err := RateRows(p, cfgs, skip)
	if err == nil && len(rows) == 0 {
		return nil, ErrNoneRuns
	}
	return rows, err
}

// RateGrid is a sweep of the posting-rate experiment: every combination of
// its lists.
type RateGrid struct {
	Styles                                   []gda.Publication
	Orderings                                []gda.Ordering
	Payloads, Threads, QPs, SMs, PerDoorbell []int
	Inline                                   bool
	Depth                                    int
}

// Configs are the grid's combinations, each value checked against p
// (gda.RateConfig.CheckFields, whose errors are field.Errors) and each
// combination that can run passed to allow, which may refuse it (a
// memory budget), all before anything runs.
func (g RateGrid) Configs(p *profile.Profile, allow func(gda.RateConfig) error) ([]gda.RateConfig, error) {
	var cfgs []gda.RateConfig
	for _, style := range g.Styles {
		for _, o := range g.Orderings {
			for _, pay := range g.Payloads {
				for _, th := range g.Threads {
					for _, q := range g.QPs {
						for _, sm := range g.SMs {
							for _, db := range g.PerDoorbell {
								cfg := gda.RateConfig{Threads: th, QPs: q, SMs: sm, PerDoorbell: db, Style: style,
									Ordering: o, Payload: pay, Inline: g.Inline, Depth: g.Depth}
								if err := cfg.CheckFields(p); err != nil {
									return nil, err
								}
								if cfg.Validate() == nil {
									if err := allow(cfg); err != nil {
										return nil, err
									}
								}
								cfgs = append(cfgs, cfg)
							}
						}
					}
				}
			}
		}
	}
	return cfgs, nil
}

// RateRows models the posting rate of each of cfgs that can run; skip
// hears of each combination that cannot (a cross product has some), by
// its name.
func RateRows(p *profile.Profile, cfgs []gda.RateConfig, skip func(name string, err error)) ([]Row, error) {
	var rows []Row
	for _, cfg := range cfgs {
		name := fmt.Sprintf("%d threads, %d QPs, %d SMs, %d/doorbell, %s, %s, %d B",
			cfg.Threads, cfg.QPs, cfg.SMs, cfg.PerDoorbell, cfg.Style, cfg.Ordering, cfg.Payload)
		if err := cfg.Validate(); err != nil {
			skip(name, err)
			continue
		}
		v, err := gda.Rate(p, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, Row{Experiment: "rate", Case: name, Metric: "message rate", Unit: "M msg/s", Paper: math.NaN(), Model: v})
	}
	return rows, nil
}

// SingleRows models one operation's issue, put with completion and round
// trip for each ordering and payload, each payload checked first
// (gda.CheckPayload: a field.Error) where there is an ordering to run.
func SingleRows(p *profile.Profile, orders []gda.Ordering, payloads []int, inline bool) ([]Row, error) {
	for _, pay := range payloads {
		if err := gda.CheckPayload(pay, inline); err != nil && len(orders) > 0 {
			return nil, err
		}
	}
	kind := "inline"
	if !inline {
		kind = "pointer"
	}
	var rows []Row
	for _, o := range orders {
		for _, pay := range payloads {
			r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: o, Payload: pay, Inline: inline})
			if err != nil {
				return nil, err
			}
			c := o.String() + ", " + strconv.Itoa(pay) + " B " + kind
			rows = append(rows,
				Row{Experiment: "single", Case: c, Metric: "issue", Unit: "µs", Paper: math.NaN(), Model: r.Issue.Us()},
				Row{Experiment: "single", Case: c, Metric: "put+completion", Unit: "µs", Paper: math.NaN(), Model: r.PutC.Us()},
				Row{Experiment: "single", Case: c, Metric: "RTT", Unit: "µs", Paper: math.NaN(), Model: r.RTT.Us()},
			)
		}
	}
	return rows, nil
}

// RateFields are the fields of a posting-rate sweep, as commands name
// them; a single-operation sweep reads SingleFields of them.
var (
	RateFields   = []string{"threads", "qps", "sms", "per-doorbell", "style", "ordering", "payload", "pointer", "depth"}
	SingleFields = []string{"ordering", "payload", "pointer"}
)

// SweepOf's refusals of a sweep field given where it is not read, each in
// a field.Error naming it: a value no sweep reads would be silently
// ignored.
var (
	ErrNoSweep   = errors.New("no sweep reads it: the named experiments run fixed cases")
	ErrNotSingle = errors.New("the single-operation sweep does not read it")
)

// SweepOf is the sweep names ask for, given saying which fields a
// command line gave: "rate" alone with a rate field given, "single"
// alone, or "" for the experiments named (Select; "rate" alone among
// them).
func SweepOf(names []string, given func(field string) bool) (string, error) {
	sweep := ""
	if len(names) == 1 && (names[0] == "single" || names[0] == "rate" && slices.ContainsFunc(RateFields, given)) {
		sweep = names[0]
	}
	for _, f := range RateFields {
		switch {
		case !given(f):
		case sweep == "":
			return "", field.Errorf(f, "%w", ErrNoSweep)
		case sweep == "single" && !slices.Contains(SingleFields, f):
			return sweep, field.Errorf(f, "%w", ErrNotSingle)
		}
	}
	return sweep, nil
}

// Sweep is a sweep's lists as a command line gives them, the styles and
// orderings by name.
type Sweep struct {
	Styles, Orderings                        []string
	Payloads, Threads, QPs, SMs, PerDoorbell []int
	Inline                                   bool
	Depth                                    int
}

// Rows runs the sweep named on p: "rate" as RateSweep of every
// combination of the lists, with allow and skip; "single" as SingleRows
// of the orderings and payloads. A name that is not a field's value is a
// field.Error (ParseOrderings, ParseStyles).
func (s Sweep) Rows(p *profile.Profile, name string, allow func(gda.RateConfig) error, skip func(name string, err error)) ([]Row, error) {
	ords, err := ParseOrderings(s.Orderings)
	if err != nil {
		return nil, err
	}
	if name == "single" {
		return SingleRows(p, ords, s.Payloads, s.Inline)
	}
	g := RateGrid{Orderings: ords, Payloads: s.Payloads, Threads: s.Threads, QPs: s.QPs, SMs: s.SMs, PerDoorbell: s.PerDoorbell,
		Inline: s.Inline, Depth: s.Depth}
	if g.Styles, err = ParseStyles(s.Styles); err != nil {
		return nil, err
	}
	return RateSweep(p, g, allow, skip)
}
