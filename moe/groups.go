package moe

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"moebench/internal/field"
	"moebench/routing"
)

// GroupLimit is DeepSeek-V3's group-limited gating (its config's n_group
// and topk_group): the logical experts split into Groups groups of
// consecutive ids, each token first picks TopK groups, then its top-k
// experts within them. When the groups line up with nodes, a token's
// experts span at most TopK nodes, which is what keeps DeepEP's internode
// RDMA traffic bounded. The zero value is no limit.
type GroupLimit struct {
	// Groups is the number of expert groups; 0 means one group per node,
	// as DeepEP's internode test groups them.
	Groups int
	// TopK is the groups each token may use; 0 means no limit.
	TopK int
}

// On reports whether the limit restricts anything.
func (g GroupLimit) On() bool { return g.TopK > 0 }

// Validate checks the limit on its own; Resolve checks it against a shape.
// Their refusals are field.Errors naming expert-groups (Groups) or
// topk-groups (TopK), as the commands name those inputs.
func (g GroupLimit) Validate() error {
	switch {
	case g.Groups < 0:
		return field.Errorf("expert-groups", "%d is negative (0 = one per node)", g.Groups)
	case g.TopK < 0:
		return field.Errorf("topk-groups", "%d is negative (0 = no group limit)", g.TopK)
	case g.Groups > 0 && g.TopK > g.Groups:
		return field.Errorf("topk-groups", "%d exceeds the %d expert groups", g.TopK, g.Groups)
	}
	return nil
}

// ErrNoLimit refuses a group count given where no limit is in force:
// the count would change nothing.
var ErrNoLimit = errors.New("no group limit is in force")

// Over is g with the counts given over it (nil keeps g's own), checked
// (Validate); a group count given where no limit is then in force is
// refused (ErrNoLimit).
func (g GroupLimit) Over(topk, groups *int) (GroupLimit, error) {
	if topk != nil {
		g.TopK = *topk
	}
	if groups != nil {
		g.Groups = *groups
	}
	if err := g.Validate(); err != nil {
		return GroupLimit{}, err
	}
	if groups != nil && !g.On() {
		return GroupLimit{}, field.Valuef("expert-groups", *groups, "%w", ErrNoLimit)
	}
	return g, nil
}

// Resolve fills in the group count for shape s (one per node when 0) and
// checks that the groups divide the logical experts and can hold a token's
// top-k. A limit that is off resolves to the zero value.
func (g GroupLimit) Resolve(s Shape) (GroupLimit, error) {
	if err := g.Validate(); err != nil {
		return GroupLimit{}, err
	}
	if !g.On() {
		return GroupLimit{}, nil
	}
	if g.Groups == 0 {
		g.Groups = s.Nodes()
	}
	switch {
	case s.Experts%g.Groups != 0:
		return GroupLimit{}, field.Errorf("expert-groups", "%d logical experts do not split into %d equal groups", s.Experts, g.Groups)
	case g.TopK > g.Groups:
		return GroupLimit{}, field.Errorf("topk-groups", "%d exceeds the %d expert groups", g.TopK, g.Groups)
	case g.TopK*(s.Experts/g.Groups) < s.TopK:
		return GroupLimit{}, field.Errorf("topk-groups", "%d groups of %d experts cannot hold a token's top-%d", g.TopK, s.Experts/g.Groups, s.TopK)
	}
	return g, nil
}

// String describes the limit, e.g. "top-4 of 8 expert groups".
func (g GroupLimit) String() string {
	switch {
	case !g.On():
		return "no group limit"
	case g.Groups == 0:
		return fmt.Sprintf("top-%d of one expert group per node", g.TopK)
	}
	return fmt.Sprintf("top-%d of %d expert groups", g.TopK, g.Groups)
}

// GroupOf is the group of logical expert l under a resolved limit of s.
func (g GroupLimit) GroupOf(s Shape, l int) int { return l / (s.Experts / g.Groups) }

// groupDraw picks each token's groups: TopK distinct groups, drawn by
// their experts' total popularity (the synthetic stand-in for DeepSeek-V3
// scoring a group by its best experts).
type groupDraw struct {
	lim    GroupLimit
	per    int // logical experts per group
	tab    routing.Alias
	w      []float64
	mark   []uint32
	stamp  uint32
	chosen []bool
}

func newGroupDraw(lim GroupLimit, pop []float64) *groupDraw {
	per := len(pop) / lim.Groups
	w := make([]float64, lim.Groups)
	for l, x := range pop {
		w[l/per] += x
	}
	return &groupDraw{lim: lim, per: per, tab: routing.NewAlias(w), w: w, mark: make([]uint32, lim.Groups), chosen: make([]bool, lim.Groups)}
}

// exclude draws the token's groups and marks every expert outside them as
// taken (mark[l] = stamp), so that the expert draw only finds experts in
// the chosen groups.
func (d *groupDraw) exclude(rng *rand.Rand, mark []uint32, stamp uint32) {
	d.stamp++
	for i := range d.chosen {
		d.chosen[i] = false
	}
	for range d.lim.TopK {
		gi := d.tab.DrawDistinct(rng, d.mark, d.stamp, d.w)
		d.mark[gi] = d.stamp
		d.chosen[gi] = true
	}
	for gi, ok := range d.chosen {
		if ok {
			continue
		}
		for l := gi * d.per; l < (gi+1)*d.per; l++ {
			mark[l] = stamp
		}
	}
}

// GroupCheck is how a routing's tokens sit against a group limit: tokens
// whose experts span more groups than the limit allows are violations (a
// trace recorded under another gating, or none).
type GroupCheck struct {
	Limit      GroupLimit // resolved
	Tokens     int64      // tokens with at least one selection
	Violations int64      // tokens spanning more than Limit.TopK groups
	MaxGroups  int        // the most groups one token spans
}

// CheckGroups counts the tokens of r that break lim (resolved against r's
// shape). Redundant replicas count as their logical expert's group.
func (r *Routing) CheckGroups(lim GroupLimit) (GroupCheck, error) {
	s := r.Shape
	res, err := lim.Resolve(s)
	if err != nil {
		return GroupCheck{}, err
	}
	c := GroupCheck{Limit: res}
	if !res.On() {
		return c, nil
	}
	k := s.TopK
	seen := make([]uint32, res.Groups)
	var stamp uint32
	for rank, row := range r.Idx {
		for t := range r.Tokens[rank] {
			stamp++
			n := 0
			for _, e := range row[t*k : t*k+k] {
				if e < 0 {
					continue
				}
				g := res.GroupOf(s, s.LogicalOf(int(e)))
				if seen[g] != stamp {
					seen[g] = stamp
					n++
				}
			}
			if n == 0 {
				continue
			}
			c.Tokens++
			c.MaxGroups = max(c.MaxGroups, n)
			if n > res.TopK {
				c.Violations++
			}
		}
	}
	return c, nil
}

// Add accumulates another check of the same limit.
func (c *GroupCheck) Add(o GroupCheck) {
	c.Limit = o.Limit
	c.Tokens += o.Tokens
	c.Violations += o.Violations
	c.MaxGroups = max(c.MaxGroups, o.MaxGroups)
}
