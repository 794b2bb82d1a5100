package budget

import (
	"errors"
	"math"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"moebench/moe"
)

func TestPlace(t *testing.T) {
	t.Parallel()
	c := moe.Cost{Bytes: 100, InTurn: 60, Messages: 7}
	for _, tc := range []struct {
		name   string
		budget int64
		mode   moe.Mode
		turn   bool
		bytes  int64 // the estimate it runs under
		err    string
		logs   int
	}{
		{"no limit", 0, moe.LL, false, 100, "", 0},
		{"fits side by side", 100, moe.LL, false, 100, "", 0},
		{"LL in turn", 99, moe.LL, true, 60, "", 1},
		{"LL too large even in turn", 59, moe.LL, false, 100,
			"x (about 60.0 B even with dispatch and combine in turn) would need about 100.0 B of memory and 7 messages, more than the budget of 59.0 B", 0},
		{"normal never in turn", 99, moe.Normal, false, 100,
			"x would need about 100.0 B of memory and 7 messages, more than the budget of 99.0 B", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zap.InfoLevel)
			turn, got, err := Budget{tc.budget}.Place(zap.New(core), "x", tc.mode, c)
			if tc.err != "" {
				var ex *Exceeded
				if !errors.As(err, &ex) || err.Error() != tc.err {
					t.Fatalf("error %v, want an Exceeded %q", err, tc.err)
				}
				return
			}
			if err != nil || turn != tc.turn || got.Bytes != tc.bytes || logs.Len() != tc.logs {
				t.Errorf("in turn %v, %d bytes, %d logs, %v; want %v, %d, %d", turn, got.Bytes, logs.Len(), err, tc.turn, tc.bytes, tc.logs)
			}
		})
	}
}

func TestPlacePoints(t *testing.T) {
	t.Parallel()
	ll := func(bytes, inTurn int64) Point {
		return Point{What: "p", Mode: moe.LL, Cost: moe.Cost{Bytes: bytes, InTurn: inTurn}}
	}
	for _, tc := range []struct {
		name   string
		budget int64
		conc   int64
		pts    []Point
		turn   []bool
		weight []int64
		err    bool
	}{
		{"all side by side", 200, 2, []Point{ll(100, 60), ll(100, 60)}, []bool{false, false}, []int64{100, 100}, false},
		{"in turn to run two at once", 150, 2, []Point{ll(100, 60), ll(100, 60)}, []bool{true, true}, []int64{60, 60}, false},
		{"alone side by side", 100, 2, []Point{ll(100, 60), ll(100, 60)}, []bool{false, false}, []int64{100, 100}, false},
		{"alone in turn", 80, 2, []Point{ll(100, 60), ll(100, 60)}, []bool{true, true}, []int64{60, 60}, false},
		// The first could run in turn beside one like itself, but its
		// neighbour is too large to run beside it: it runs alone side by side.
		{"beside a larger one", 130, 2, []Point{ll(100, 60), ll(200, 120)}, []bool{false, true}, []int64{100, 120}, false},
		{"normal never in turn", 150, 2, []Point{{Mode: moe.Normal, Cost: moe.Cost{Bytes: 100, InTurn: 100}}}, []bool{false}, []int64{100}, false},
		{"one too large", 50, 2, []Point{ll(40, 30), ll(100, 60)}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Budget{tc.budget}.PlacePoints(zap.NewNop(), tc.pts, tc.conc)
			if tc.err {
				var ex *Exceeded
				if !errors.As(err, &ex) {
					t.Fatalf("error %v, want an Exceeded", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range tc.pts {
				if p.InTurn != tc.turn[i] || p.Weight != tc.weight[i] {
					t.Errorf("point %d: in turn %v under %d, want %v under %d", i, p.InTurn, p.Weight, tc.turn[i], tc.weight[i])
				}
			}
		})
	}
}

func TestJobs(t *testing.T) {
	t.Parallel()
	costs := []moe.Cost{{Bytes: 100, InTurn: 60}, {Bytes: 50, InTurn: 50}}
	for _, tc := range []struct {
		name        string
		budget      int64
		mode        moe.Mode
		least, most int
		jobs        int
		turn        bool
	}{
		{"no limit", 0, moe.LL, 1, 8, 8, false},
		{"seven in turn rather than four side by side", 450, moe.LL, 1, 8, 7, true},
		{"four side by side", 450, moe.LL, 1, 4, 4, false},
		{"eight in turn", 480, moe.LL, 8, 8, 8, true},
		{"normal: four", 450, moe.Normal, 1, 8, 4, false},
		{"none: the least, in turn", 50, moe.LL, 1, 8, 1, true},
		{"none in normal mode", 50, moe.Normal, 2, 2, 2, false},
	} {
		jobs, turn := Budget{tc.budget}.Jobs(costs, tc.mode, tc.least, tc.most)
		if jobs != tc.jobs || turn != tc.turn {
			t.Errorf("%s: %d jobs in turn %v, want %d, %v", tc.name, jobs, turn, tc.jobs, tc.turn)
		}
	}
}

func TestTimesAndClampMul(t *testing.T) {
	t.Parallel()
	c := moe.Cost{Bytes: 100, InTurn: 60, Messages: 3}
	if got := Times(c, 3, false); got.Bytes != 300 || got.Messages != 3 {
		t.Errorf("side by side: %+v", got)
	}
	if got := Times(c, 3, true); got.Bytes != 180 {
		t.Errorf("in turn: %+v", got)
	}
	for _, tc := range []struct{ a, b, want int64 }{
		{3, 4, 12}, {0, 5, 0}, {math.MaxInt64 / 2, 3, math.MaxInt64}, {7, 0, 0},
	} {
		if got := ClampMul(tc.a, tc.b); got != tc.want {
			t.Errorf("ClampMul(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
