package sweep

import (
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/replay"
	"moebench/results"
	"moebench/traces"
	"moebench/transport"
	"moebench/transport/preset"
)

// Replayer runs a replay's (step, layer) groups as a run runs its points:
// each group's routing is a point of the replay's layer on each preset,
// placed under the memory budget, checked and run under the replay's
// faults. Open resolves the replay from its trace.
type Replayer struct {
	*replay.Replay
	Layer      Layer
	Presets    []preset.Preset
	Profile    *profile.Profile
	Background Background
	Knobs      transport.Settings // the mechanisms' knobs, one value each
	Budget     budget.Budget
	Faults     Faults // every group's, checked against the trace's ranks by Open
	// Failed, when set, hears of each phase of a group's layer that fails
	// under its faults: a result, not an error, which the rows report.
	Failed func(*Failure)
	fault  Fault
}

// ReplayDepthError is a group whose busiest rank's tokens overfill LL
// mode's queues on a preset. The trace sets the tokens, so the way out is
// fewer of them on a rank: normal mode or more ranks.
type ReplayDepthError struct {
	Tokens int
	Preset string
	Err    *moe.DepthError
}

func (e *ReplayDepthError) Error() string {
	return fmt.Sprintf("%d tokens on the busiest rank: preset %s: %v", e.Tokens, e.Preset, e.Err)
}

func (e *ReplayDepthError) Unwrap() error { return e.Err }

// ReplayOptions parses a replay's mode and background into o, refuses a
// chunk given where no normal mode runs (moe.CheckChunk, wrapping
// moe.ErrChunkMode) and checks o's counts (replay.Options.Check): what a
// replay refuses before its profile is loaded, every refusal ErrInput. It
// returns the background as named and parsed.
func ReplayOptions(o *replay.Options, mode, background string, chunkGiven bool) (Background, error) {
	modes, err := Modes([]string{mode})
	if err != nil {
		return Background{}, err
	}
	bgs, err := Backgrounds([]string{background})
	if err != nil {
		return Background{}, err
	}
	if err := moe.CheckChunk(chunkGiven, modes[0]); err != nil {
		return Background{}, input(err)
	}
	o.Mode, o.Background = modes[0], bgs[0].Value
	if err := o.Check(); err != nil {
		return Background{}, input(err)
	}
	return bgs[0], nil
}

// Open resolves the replay of src with options o (replay.New) on the
// replayer's profile and presets, its faults in the header's account, and
// checks the faults against the layer's ranks.
func (r *Replayer) Open(o replay.Options, src traces.Reader) error {
	o.Profile, o.Presets, o.Notes = r.Profile, r.Presets, append(r.Faults.Note(), o.Notes...)
	var err error
	if r.Replay, err = replay.New(o, src); err != nil {
		return err
	}
	c, err := r.Faults.Expand([]Point{{Shape: r.Shape()}})
	if err != nil {
		return err
	}
	r.fault = c[0].Fault
	return nil
}

// point is the replay's layer at shape s, healthy.
func (r *Replayer) point(s moe.Shape) Point {
	return Point{Shape: s, Mode: r.Mode(), NVLink: r.NVLink(), Knobs: r.Knobs, Background: r.Background.Value, BackgroundName: r.Background.Name}
}

// Check checks the layer on every preset before the trace is replayed, as
// a run does: at one token a rank, since each group's busiest rank sets
// its own (and RunGroup checks each group again at that). A refusal is a
// *CheckError.
func (r *Replayer) Check() error {
	c := r.point(r.Shape())
	for _, p := range r.Presets {
		if _, err := r.Layer.Check(c, r.Profile, p); err != nil {
			return err
		}
	}
	return nil
}

// RunGroup models one group's routing rt on preset p under the faults.
// Groups run one at a time, each placed in the budget before it starts
// (its busiest rank sets its size): an LL group that fits only with
// dispatch and combine in turn runs them in turn, and one that does not
// fit is a *budget.Exceeded. Queues too shallow for the group's tokens
// are a *ReplayDepthError.
func (r *Replayer) RunGroup(rt *moe.Routing, p preset.Preset) (*moe.Result, error) {
	c := r.point(rt.Shape)
	c.Fault = r.fault
	cost := budget.LayerCost(c.Shape, c.Mode, p.Mechanism, r.Layer.NumSMs, c.Background, c.Knobs)
	what := fmt.Sprintf("EP%d × %d tokens × top-%d on %s", c.Shape.Ranks, c.Shape.Tokens, c.Shape.TopK, p.Name)
	log := r.Layer.Log
	if log == nil {
		log = zap.NewNop()
	}
	inTurn, _, err := r.Budget.Place(log, what, c.Mode, cost)
	if err != nil {
		return nil, err
	}
	res, err := r.Layer.RunEach(c, rt, r.Profile, p, inTurn, nil)
	if de := (*moe.DepthError)(nil); errors.As(err, &de) {
		return nil, &ReplayDepthError{Tokens: rt.Shape.Tokens, Preset: p.Name, Err: de}
	}
	if err != nil {
		return nil, err
	}
	if r.Failed != nil {
		for _, f := range failures(p.Name, res[0]) {
			f.Group, f.Tokens = true, rt.Shape.Tokens
			r.Failed(f)
		}
	}
	return res[0], nil
}

// Render replays the trace into format on w as it runs (RunGroup on each
// group and preset), under header h with the replay's account (Notes),
// and with plot keeps what a plot of it draws; progress, when set, is
// called after each group.
func (r *Replayer) Render(w io.Writer, format string, h report.Header, plot bool, progress func(g *replay.Group, done int)) (*results.ReplayPlot, error) {
	h.Extra = r.Notes()
	names := make([]string, len(r.Presets))
	for i, p := range r.Presets {
		names[i] = p.Name
	}
	th := r.Header()
	sink, err := results.NewReplaySink(w, format, h, results.ReplayTable{Steps: th.Steps, Layers: th.Layers, Presets: names})
	if err != nil {
		return nil, err
	}
	var pl *results.ReplayPlot
	if plot {
		pl = results.NewReplayPlot(sink, h)
		sink = pl
	}
	return pl, r.Run(sink, r.RunGroup, progress)
}
