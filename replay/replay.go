package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/traces"
	"moebench/transport/preset"
)

// ErrInput marks an error in what the replay was given (an option out of
// range, the layer the options make of the trace, its rank count against
// the trace's) rather than in the trace or the run: the caller's to change.
var ErrInput = errors.New("replay input")

// Config is one replay.
type Config struct {
	Name   string // the trace, for messages
	Source traces.Reader
	// Shape is the layer; each group sets Tokens to its busiest rank's.
	Shape moe.Shape
	IDs   moe.TraceIDs
	// RanksBy says where the rank count came from, for messages.
	RanksBy string
	Mode    moe.Mode
	NVLink  bool
	// Limit is the group limit tokens are checked against (off: none).
	Limit moe.GroupLimit
	// Steps replays only steps below it, MaxLayers stops after that many
	// groups (0: no limit); MaxOpen groups may wait for records at once.
	Steps, MaxLayers, MaxOpen int
	Presets                   []preset.Preset
	// Run models one routing on one preset.
	Run func(rt *moe.Routing, p preset.Preset) (*moe.Result, error)
	// Progress, when set, is called after each group.
	Progress func(g *Group, done int)
}

// Sink takes a replay as it runs: Begin before the first group, Group
// after each, End with the aggregate.
type Sink interface {
	Begin() error
	Group(*Group) error
	End(*Aggregate) error
}

// Group is one replayed (step, layer) on every preset.
type Group struct {
	Step, Layer int
	Shape       moe.Shape
	Tokens      int // over every source rank
	Traffic     moe.Traffic
	RankLoad    moe.Load
	ExpertLoad  moe.Load
	Groups      moe.GroupCheck // tokens against the group limit, when checked
	Runs        []PresetRun
}

// PresetRun is one preset's result for a group.
type PresetRun struct {
	Preset preset.Preset
	Result *moe.Result
}

// GroupError is a group that failed to replay.
type GroupError struct {
	Trace       string
	Step, Layer int
	Err         error
}

func (e *GroupError) Error() string {
	return fmt.Sprintf("%s: step %d, layer %d: %v", e.Trace, e.Step, e.Layer, e.Err)
}

func (e *GroupError) Unwrap() error { return e.Err }

// pending is one (step, layer) while its records arrive.
type pending struct {
	step, layer int
	ranked      bool
	recs        []moe.TraceTokens
	at          []int64 // each record's index in the trace
	seen        []bool  // ranks recorded, when ranked
	nseen       int
}

type replayer struct {
	cfg      Config
	h        traces.Header
	sink     Sink
	agg      *Aggregate
	open     []*pending
	byKey    map[[2]int]*pending
	unranked int   // lowest step an unranked record may still carry
	nrec     int64 // records read, numbered from 0 as the binary reader numbers them
	done     int
	began    bool
}

// Run reads the trace to the end (or the limits), replaying each group as
// it completes, and returns the aggregate the sink ended with.
func Run(cfg Config, sink Sink) (*Aggregate, error) {
	if cfg.MaxOpen < 1 {
		return nil, fmt.Errorf("max open groups: %d, want at least 1", cfg.MaxOpen)
	}
	rp := &replayer{cfg: cfg, h: cfg.Source.Header(), sink: sink, byKey: map[[2]int]*pending{}, unranked: math.MinInt,
		agg: newAggregate(cfg.Shape, cfg.Presets)}
	rp.agg.Mode, rp.agg.NVLink = cfg.Mode, cfg.NVLink
	return rp.agg, rp.run()
}

// where names a record for errors: the trace, its index and coordinates.
func (rp *replayer) where(at int64, step, layer, rank int) string {
	return fmt.Sprintf("%s: record %d (step %d, layer %d, rank %d)", rp.cfg.Name, at, step, layer, rank)
}

func (rp *replayer) run() error {
	for !rp.limited() {
		rec, err := rp.cfg.Source.Next()
		if err == io.EOF {
			return rp.finish()
		}
		if err != nil {
			return field.Errorf("trace", "%w", err)
		}
		at := rp.nrec
		rp.nrec++
		if rp.cfg.Steps > 0 && rec.Step >= rp.cfg.Steps {
			continue
		}
		if err := rp.add(rec, at); err != nil {
			return err
		}
	}
	return rp.end()
}

// add files one record under its group and replays what it completes.
func (rp *replayer) add(rec traces.Record, at int64) error {
	R := rp.cfg.Shape.Ranks
	ranked := rec.Rank >= 0
	if ranked {
		if rp.h.EPSize > 0 && rp.h.EPSize != R {
			return inputf("%s: the trace records ranks of EP%d, replaying on %d ranks (%s); ranks can be changed only for traces that record none",
				rp.where(at, rec.Step, rec.Layer, rec.Rank), rp.h.EPSize, R, rp.cfg.RanksBy)
		}
		if rec.Rank >= R {
			return inputf("%s: rank %d is outside the %d ranks (%s)", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Rank, R, rp.cfg.RanksBy)
		}
	} else {
		// Unranked groups end when a later step begins: close those of
		// earlier steps, and refuse records of a step already closed.
		if rec.Step < rp.unranked {
			return fmt.Errorf("%s: records without a rank must come step by step; step %d follows step %d", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Step, rp.unranked)
		}
		if rec.Step > rp.unranked {
			rp.unranked = rec.Step
			for _, g := range slices.Clone(rp.open) {
				if !g.ranked && g.step < rec.Step {
					if err := rp.flush(g); err != nil || rp.limited() {
						return err
					}
				}
			}
		}
	}
	key := [2]int{rec.Step, rec.Layer}
	g := rp.byKey[key]
	if g == nil {
		if len(rp.open) >= rp.cfg.MaxOpen {
			o := rp.open[0]
			return field.Errorf("max-open", "%s: more than %d (step, layer) groups are waiting for records at once (the oldest is step %d, layer %d): the trace interleaves groups beyond the buffer; raise it",
				rp.where(at, rec.Step, rec.Layer, rec.Rank), rp.cfg.MaxOpen, o.step, o.layer)
		}
		g = &pending{step: rec.Step, layer: rec.Layer, ranked: ranked}
		if ranked {
			g.seen = make([]bool, R)
		}
		rp.byKey[key] = g
		rp.open = append(rp.open, g)
	}
	if g.ranked != ranked {
		return fmt.Errorf("%s: step %d, layer %d mixes records with and without a rank", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Step, rec.Layer)
	}
	if ranked {
		if g.seen[rec.Rank] {
			return fmt.Errorf("%s: rank %d already has a record for step %d, layer %d", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Rank, rec.Step, rec.Layer)
		}
		g.seen[rec.Rank] = true
		g.nseen++
	}
	c := rec.Clone() // the reader reuses its buffers
	g.recs = append(g.recs, moe.TraceTokens{Rank: c.Rank, Idx: c.TopkIdx, Weights: c.TopkWeights})
	g.at = append(g.at, at)
	if ranked && g.nseen == R {
		return rp.flush(g)
	}
	return nil
}

func (rp *replayer) limited() bool { return rp.cfg.MaxLayers > 0 && rp.done >= rp.cfg.MaxLayers }

// finish replays the unranked groups still open at the end of the trace;
// a ranked group still open lacks some ranks' records.
func (rp *replayer) finish() error {
	for _, g := range slices.Clone(rp.open) {
		if rp.limited() {
			break
		}
		if g.ranked {
			var miss []string
			for r, ok := range g.seen {
				if !ok {
					if len(miss) == 8 {
						miss = append(miss, "…")
						break
					}
					miss = append(miss, strconv.Itoa(r))
				}
			}
			return fmt.Errorf("%s: the trace ends with step %d, layer %d recorded by %d of %d ranks (missing %s; first record %d)",
				rp.cfg.Name, g.step, g.layer, g.nseen, len(g.seen), strings.Join(miss, ", "), g.at[0])
		}
		if err := rp.flush(g); err != nil {
			return err
		}
	}
	return rp.end()
}

func (rp *replayer) end() error {
	if rp.done == 0 {
		if rp.cfg.Steps > 0 {
			return field.Errorf("steps", "%s: nothing to replay: the trace holds no records of steps below %d", rp.cfg.Name, rp.cfg.Steps)
		}
		return fmt.Errorf("%s: nothing to replay: the trace holds no records", rp.cfg.Name)
	}
	return rp.sink.End(rp.agg)
}

// flush replays group g on every preset and forgets it.
func (rp *replayer) flush(g *pending) error {
	delete(rp.byKey, [2]int{g.step, g.layer})
	rp.open = slices.DeleteFunc(rp.open, func(o *pending) bool { return o == g })
	gr, err := rp.replay(g)
	if err != nil {
		return err
	}
	if !rp.began {
		rp.began = true
		if err := rp.sink.Begin(); err != nil {
			return err
		}
	}
	rp.agg.add(gr)
	if err := rp.sink.Group(gr); err != nil {
		return err
	}
	rp.done++
	if rp.cfg.Progress != nil {
		rp.cfg.Progress(gr, rp.done)
	}
	return nil
}

func (rp *replayer) replay(g *pending) (*Group, error) {
	s := rp.cfg.Shape
	fail := func(err error) error { return &GroupError{Trace: rp.cfg.Name, Step: g.step, Layer: g.layer, Err: err} }
	per, err := moe.TraceRankTokens(s.Ranks, s.TopK, g.recs)
	if err != nil {
		return nil, fail(err)
	}
	s.Tokens = max(1, slices.Max(per))
	if err := s.Validate(); err != nil {
		return nil, fail(err)
	}
	rt, err := moe.FromTrace(s, rp.cfg.IDs, g.recs)
	if err != nil {
		var te *moe.TraceError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: topk_idx[%d,%d]: %s", rp.where(g.at[te.Record], g.step, g.layer, te.Rank), te.Token, te.Slot, te.Msg)
		}
		return nil, fail(err)
	}
	tr := rt.Traffic()
	var gc moe.GroupCheck
	if rp.cfg.Limit.On() {
		if gc, err = rt.CheckGroups(rp.cfg.Limit); err != nil {
			return nil, fail(err)
		}
	}
	total := 0
	for _, n := range per {
		total += n
	}
	gr := &Group{Step: g.step, Layer: g.layer, Shape: s, Tokens: total, Traffic: tr, RankLoad: tr.RankLoad(), ExpertLoad: tr.ExpertLoad(), Groups: gc}
	for _, p := range rp.cfg.Presets {
		res, err := rp.cfg.Run(rt, p)
		if err != nil {
			return nil, fail(err)
		}
		gr.Runs = append(gr.Runs, PresetRun{p, res})
	}
	return gr, nil
}
