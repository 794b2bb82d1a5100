package moe_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/moe"
)

func ep64() moe.Shape {
	s := v3()
	s.Ranks, s.Tokens = 64, 256
	return s
}

func TestGroupLimitResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lim  moe.GroupLimit
		s    moe.Shape
		want moe.GroupLimit
		err  string
		// field is the input a refusal names, which a command shows
		// as its flag.
		field string
	}{
		{"off", moe.GroupLimit{Groups: 8}, v3(), moe.GroupLimit{}, "", ""},
		{"deepseek", moe.GroupLimit{Groups: 8, TopK: 4}, v3(), moe.GroupLimit{Groups: 8, TopK: 4}, "", ""},
		{"per-node", moe.GroupLimit{TopK: 4}, ep64(), moe.GroupLimit{Groups: 8, TopK: 4}, "", ""},
		{"negative-groups", moe.GroupLimit{Groups: -1, TopK: 1}, v3(), moe.GroupLimit{}, "expert-groups: -1 is negative", "expert-groups"},
		{"negative-topk", moe.GroupLimit{TopK: -2}, v3(), moe.GroupLimit{}, "topk-groups: -2 is negative", "topk-groups"},
		{"too-many", moe.GroupLimit{Groups: 4, TopK: 5}, v3(), moe.GroupLimit{}, "topk-groups: 5 exceeds the 4 expert groups", "topk-groups"},
		{"per-node-too-many", moe.GroupLimit{TopK: 3}, v3(), moe.GroupLimit{}, "topk-groups: 3 exceeds the 2 expert groups", "topk-groups"},
		{"uneven", moe.GroupLimit{Groups: 3, TopK: 1}, v3(), moe.GroupLimit{}, "expert-groups: 256 logical experts do not split into 3 equal groups", "expert-groups"},
		{"too-small", moe.GroupLimit{Groups: 64, TopK: 1}, v3(), moe.GroupLimit{}, "topk-groups: 1 groups of 4 experts cannot hold a token's top-8", "topk-groups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.lim.Resolve(tt.s)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Resolve error = %v, want it to contain %q", err, tt.err)
				}
				if fs := field.Fields(err); len(fs) != 1 || fs[0].Field != tt.field {
					t.Errorf("Resolve error's fields %v, want %s", fs, tt.field)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// Every token of a group-limited routing uses at most TopK groups; with
// one group per node its selections span at most TopK nodes, and the
// loads stay even under uniform popularity.
func TestGenerateGroupLimited(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		lim  moe.GroupLimit
		s    moe.Shape
	}{
		{"deepseek-8-of-4", moe.GroupLimit{Groups: 8, TopK: 4}, ep64()},
		{"per-node-2", moe.GroupLimit{TopK: 2}, ep64()},
		{"one-group", moe.GroupLimit{Groups: 8, TopK: 1}, ep64()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := moe.Generate(tt.s, moe.RoutingSpec{Limit: tt.lim}, 3)
			if err != nil {
				t.Fatal(err)
			}
			checkRouting(t, r)
			c, err := r.CheckGroups(tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if c.Violations != 0 || c.MaxGroups > tt.lim.TopK || c.Tokens != int64(tt.s.Ranks*tt.s.Tokens) {
				t.Fatalf("check = %+v, want no violations within %d groups", c, tt.lim.TopK)
			}
			n := r.Normal()
			for src := range tt.s.Ranks {
				for tok := range r.TokensOf(src) {
					if k := len(n.NodesOf(src, tok)); c.Limit.Groups == tt.s.Nodes() && k > tt.lim.TopK {
						t.Fatalf("rank %d token %d reaches %d nodes, limit %d", src, tok, k, tt.lim.TopK)
					}
				}
			}
			_, experts := rankLoads(r)
			mean := meanOf(experts)
			for e, v := range experts {
				if math.Abs(v-mean)/mean > 0.25 {
					t.Errorf("expert %d receives %v, mean %v: the limit skews a uniform routing", e, v, mean)
				}
			}
		})
	}
}

// The limit is part of what a seed reproduces; without one the draws are
// the ungrouped ones.
func TestGenerateGroupLimitHash(t *testing.T) {
	t.Parallel()
	s := ep64()
	plain := mustGenerate(t, s, "uniform", 1)
	off, err := moe.Generate(s, moe.RoutingSpec{Limit: moe.GroupLimit{Groups: 8}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	on, _ := moe.Generate(s, moe.RoutingSpec{Limit: moe.GroupLimit{Groups: 8, TopK: 4}}, 1)
	again, _ := moe.Generate(s, moe.RoutingSpec{Limit: moe.GroupLimit{Groups: 8, TopK: 4}}, 1)
	if off.Hash() != plain.Hash() {
		t.Errorf("a limit that is off changed the routing: %s vs %s", off.Hash(), plain.Hash())
	}
	if on.Hash() == plain.Hash() || on.Hash() != again.Hash() {
		t.Errorf("limited %s, again %s, plain %s: want limited reproducible and different", on.Hash(), again.Hash(), plain.Hash())
	}
	// Group-limited routing sends fewer RDMA copies: the point of it.
	if a, b := on.Normal().RemoteNodeSends, plain.Normal().RemoteNodeSends; a >= b {
		t.Errorf("remote (token, node) pairs: limited %d, plain %d; want fewer", a, b)
	}
	if _, err := moe.Generate(s, moe.RoutingSpec{Limit: moe.GroupLimit{Groups: 7, TopK: 1}}, 1); err == nil || !strings.Contains(err.Error(), "7 equal groups") {
		t.Errorf("uneven groups: error = %v", err)
	}
}

// A routing drawn without the limit breaks it for most tokens; CheckGroups
// counts them and the widest span.
func TestCheckGroups(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 8, TopK: 2, Hidden: 128, Tokens: 3, Ranks: 2, GPUsPerNode: 1, Dispatch: moe.BF16, Combine: moe.BF16}
	// Groups of 4: {0..3}, {4..7}; a token that picks 1 and 6 spans both.
	r, err := moe.FromTopk(s, [][]int64{{0, 1, 1, 6, -1, -1}, {7, 4, 2, -1, 3, 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CheckGroups(moe.GroupLimit{Groups: 2, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := moe.GroupCheck{Limit: moe.GroupLimit{Groups: 2, TopK: 1}, Tokens: 5, Violations: 2, MaxGroups: 2}
	if c != want {
		t.Fatalf("CheckGroups = %+v, want %+v", c, want)
	}
	var sum moe.GroupCheck
	sum.Add(c)
	sum.Add(c)
	if sum.Tokens != 10 || sum.Violations != 4 || sum.MaxGroups != 2 {
		t.Fatalf("Add: %+v", sum)
	}
	if off, _ := r.CheckGroups(moe.GroupLimit{}); off.Violations != 0 || off.Tokens != 0 {
		t.Fatalf("no limit: %+v, want nothing counted", off)
	}
}

func ExampleGroupLimit() {
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 64, Ranks: 64, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	// DeepSeek-V3: 8 groups of 32 experts, a token uses at most 4. On 8
	// nodes of 8 GPUs a group is a node's experts.
	lim := moe.GroupLimit{Groups: 8, TopK: 4}
	r, err := moe.Generate(s, moe.RoutingSpec{Limit: lim}, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := r.CheckGroups(lim)
	fmt.Println(lim, "- tokens over the limit:", c.Violations, "- widest token:", c.MaxGroups, "groups")
	plain, _ := moe.Generate(s, moe.RoutingSpec{}, 1)
	u, _ := plain.CheckGroups(lim)
	fmt.Println("ungated routing over the limit:", u.Violations > 0, "- widest token:", u.MaxGroups, "groups")
	// Output:
	// top-4 of 8 expert groups - tokens over the limit: 0 - widest token: 4 groups
	// ungated routing over the limit: true - widest token: 8 groups
}

func TestGroupLimitOver(t *testing.T) {
	t.Parallel()
	ds := moe.GroupLimit{Groups: 8, TopK: 4} // DeepSeek-V3's
	zero, two, nine, minus := 0, 2, 9, -1
	for _, tc := range []struct {
		name          string
		base          moe.GroupLimit
		topk, groups  *int
		want          moe.GroupLimit
		field, errTxt string // the refusal's field and text, "" for none
	}{
		{"nothing given keeps the workload's", ds, nil, nil, ds, "", ""},
		{"top-k groups given", ds, &two, nil, moe.GroupLimit{Groups: 8, TopK: 2}, "", ""},
		{"lifted", ds, &zero, nil, moe.GroupLimit{Groups: 8}, "", ""},
		{"a count over no limit", moe.GroupLimit{}, nil, &two, moe.GroupLimit{}, "expert-groups", "expert-groups 2: no group limit is in force"},
		{"lifted while a count is given", ds, &zero, &two, moe.GroupLimit{}, "expert-groups", "expert-groups 2: no group limit is in force"},
		{"more groups a token may use than there are", ds, &nine, nil, moe.GroupLimit{}, "topk-groups", "topk-groups: 9 exceeds the 8 expert groups"},
		{"a negative count", ds, nil, &minus, moe.GroupLimit{}, "expert-groups", "expert-groups: -1 is negative (0 = one per node)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.base.Over(tc.topk, tc.groups)
			if tc.errTxt == "" {
				if err != nil || got != tc.want {
					t.Errorf("%+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			fs := field.Fields(err)
			if err == nil || err.Error() != tc.errTxt || len(fs) == 0 || fs[0].Field != tc.field {
				t.Errorf("%v, want %q naming %s", err, tc.errTxt, tc.field)
			}
			if (tc.errTxt == "expert-groups 2: no group limit is in force") != errors.Is(err, moe.ErrNoLimit) {
				t.Errorf("errors.Is(ErrNoLimit) = %v", errors.Is(err, moe.ErrNoLimit))
			}
		})
	}
}
