package replay_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/replay"
	"moebench/traces"
	"moebench/transport/preset"
)

// sink records what a replay hands it.
type sink struct {
	began  int
	groups []string
	agg    *replay.Aggregate
}

func (s *sink) Begin() error { s.began++; return nil }
func (s *sink) Group(g *replay.Group) error {
	s.groups = append(s.groups, fmt.Sprintf("%d/%d", g.Step, g.Layer))
	return nil
}
func (s *sink) End(a *replay.Aggregate) error { s.agg = a; return nil }

var shape = moe.Shape{Experts: 8, TopK: 2, Hidden: 512, Tokens: 1, Ranks: 2, GPUsPerNode: 2, Dispatch: moe.FP8, Combine: moe.BF16}

// trace has steps × layers groups of two ranks' records, two tokens each,
// rank by rank (every group waits for rank 1) when rankMajor.
func trace(steps, layers int, rankMajor bool) *traces.Memory {
	r := &traces.Memory{H: traces.Header{Version: 1, IDSpace: traces.Logical, Experts: 8, TopK: 2, EPSize: 2, Layers: layers}}
	rec := func(s, l, rank int) traces.Record {
		return traces.Record{Step: s, Layer: l, Rank: rank, TopkIdx: []int32{int32(rank), 4, 2, int32(7 - l)}}
	}
	for s := range steps {
		if rankMajor {
			for rank := range 2 {
				for l := range layers {
					r.Records = append(r.Records, rec(s, l, rank))
				}
			}
			continue
		}
		for l := range layers {
			for rank := range 2 {
				r.Records = append(r.Records, rec(s, l, rank))
			}
		}
	}
	return r
}

func config(t *testing.T, src traces.Reader) replay.Config {
	t.Helper()
	p, err := preset.Get("mini-gda")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	return replay.Config{Name: "mem", Source: src, Shape: shape, IDs: moe.LogicalIDs, RanksBy: "test", Mode: moe.LL, MaxOpen: 8,
		Presets: []preset.Preset{p},
		Run: func(rt *moe.Routing, p preset.Preset) (*moe.Result, error) {
			layer, _ := moe.Channels(rt.Shape, moe.LL, 0, moe.Background{})
			tr, err := p.Transport(preset.Options{LocalExperts: layer})
			if err != nil {
				return nil, err
			}
			return moe.RunLayer(moe.LayerConfig{Routing: rt, Mode: moe.LL, Transport: tr, Profile: prof})
		}}
}

func TestGroupsInEitherOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		rankMajor bool
		maxLayers int
		want      string
	}{
		{"layer by layer", false, 0, "0/0 0/1 0/2 1/0 1/1 1/2"},
		{"rank by rank", true, 0, "0/0 0/1 0/2 1/0 1/1 1/2"},
		{"limited", false, 4, "0/0 0/1 0/2 1/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(t, trace(2, 3, tc.rankMajor))
			cfg.MaxLayers = tc.maxLayers
			var s sink
			agg, err := replay.Run(cfg, &s)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.groups, " "); got != tc.want || s.began != 1 || s.agg != agg {
				t.Fatalf("groups %q (began %d), want %q", got, s.began, tc.want)
			}
			n := len(s.groups)
			if agg.Groups != n || agg.Tokens != int64(4*n) || agg.Selections != int64(8*n) || !agg.Presets[0].Correct {
				t.Errorf("aggregate: %d groups, %d tokens, %d selections, correct %v", agg.Groups, agg.Tokens, agg.Selections, agg.Presets[0].Correct)
			}
			if ph := &agg.Presets[0].Phase[0]; ph.Layer.N() != n || ph.MeanBreakdown(n).Total() <= 0 || len(ph.SlowestRanks()) == 0 {
				t.Errorf("dispatch aggregate: %d layers, breakdown %v", ph.Layer.N(), ph.MeanBreakdown(n))
			}
		})
	}
}

func TestErrorsNameTheRecord(t *testing.T) {
	t.Parallel()
	short := trace(1, 2, false)
	short.Records = short.Records[:3] // step 0, layer 1 lacks rank 1
	otherEP := trace(1, 1, false)
	otherEP.H.EPSize = 4
	for _, tc := range []struct {
		name    string
		src     traces.Reader
		maxOpen int
		input   bool
		want    string
	}{
		{"missing rank", short, 8, false, "mem: the trace ends with step 0, layer 1 recorded by 1 of 2 ranks (missing 1; first record 2)"},
		{"another EP", otherEP, 8, true, "mem: record 0 (step 0, layer 0, rank 0): the trace records ranks of EP4, replaying on 2 ranks (test)"},
		{"interleaved beyond the buffer", trace(1, 3, true), 2, false, "record 2 (step 0, layer 2, rank 0): more than 2 (step, layer) groups"},
		{"empty", &traces.Memory{H: trace(1, 1, false).H}, 8, false, "mem: nothing to replay: the trace holds no records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(t, tc.src)
			cfg.MaxOpen = tc.maxOpen
			_, err := replay.Run(cfg, &sink{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, replay.ErrInput) != tc.input {
				t.Errorf("got %v (input %v), want %q (input %v)", err, errors.Is(err, replay.ErrInput), tc.want, tc.input)
			}
		})
	}
}

// A failing run names its group.
func TestRunErrorIsAGroupError(t *testing.T) {
	t.Parallel()
	cfg := config(t, trace(1, 2, false))
	boom := errors.New("boom")
	cfg.Run = func(*moe.Routing, preset.Preset) (*moe.Result, error) { return nil, boom }
	_, err := replay.Run(cfg, &sink{})
	var ge *replay.GroupError
	if !errors.As(err, &ge) || !errors.Is(err, boom) || ge.Step != 0 || ge.Layer != 0 || err.Error() != "mem: step 0, layer 0: boom" {
		t.Errorf("got %v", err)
	}
}
