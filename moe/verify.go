package moe

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Delivery is one dispatched token as the receiver sees it: who sent it
// (the message header) and where it landed.
type Delivery struct {
	SrcRank int32 // source rank
	Token   int32 // token index on the source rank, from the header
	DstRank int32 // receiving rank
	// LocalExpert and Slot locate the message in the receiver's
	// [local expert][source rank][Tokens] buffer.
	LocalExpert int32
	Slot        int32
}

// Expected returns every delivery a correct dispatch makes, in source
// order: the oracle's own answer, handy for testing a checker or seeding a
// simulation.
func (l *LLLayout) Expected() []Delivery {
	out := make([]Delivery, 0, len(l.Msgs))
	for src := range l.Shape.Ranks {
		for _, m := range l.From(src) {
			out = append(out, Delivery{SrcRank: int32(src), Token: m.Token, DstRank: m.DstRank, LocalExpert: m.LocalExpert, Slot: m.RecvSlot})
		}
	}
	return out
}

// maxReported caps the problems a check spells out; the count covers all.
const maxReported = 10

type problems struct {
	what string
	n    int
	msgs []string
}

func (p *problems) add(format string, args ...any) {
	p.n++
	if len(p.msgs) < maxReported {
		p.msgs = append(p.msgs, fmt.Sprintf(format, args...))
	}
}

func (p *problems) err() error {
	if p.n == 0 {
		return nil
	}
	more := ""
	if p.n > len(p.msgs) {
		more = fmt.Sprintf("; and %d more", p.n-len(p.msgs))
	}
	noun := "problems"
	if p.n == 1 {
		noun = "problem"
	}
	return fmt.Errorf("%s: %d %s: %s%s", p.what, p.n, noun, strings.Join(p.msgs, "; "), more)
}

// CheckDispatch compares delivered messages with the layout: each expected
// (source, token, expert) must arrive exactly once, at its RecvSlot. It
// reports missing, duplicate, misplaced and unexpected deliveries, naming
// ranks, tokens and experts; nil means the dispatch was exact.
func (l *LLLayout) CheckDispatch(delivered []Delivery) error {
	c := l.NewDispatchCheck(l.Blocks())
	for _, d := range delivered {
		c.Add(d)
	}
	return c.Err()
}

// DispatchCheck is CheckDispatch fed one delivery at a time, as a
// simulation makes them: it holds a bit per message rather than the
// deliveries, and finds a slot's token through the layout's blocks.
type DispatchCheck struct {
	l    *LLLayout
	b    LLBlocks
	seen []uint64 // by position in b.Msg
	n    int      // deliveries added
	pr   problems
}

// NewDispatchCheck starts a check against l, whose blocks are b.
func (l *LLLayout) NewDispatchCheck(b LLBlocks) *DispatchCheck {
	return &DispatchCheck{l: l, b: b, seen: make([]uint64, (len(b.Msg)+63)/64), pr: problems{what: "dispatch check"}}
}

// Add checks one delivery.
func (c *DispatchCheck) Add(d Delivery) {
	s := c.l.Shape
	ranks, nl := s.Ranks, s.LocalExperts()
	i := c.n
	c.n++
	if d.SrcRank < 0 || int(d.SrcRank) >= ranks || d.DstRank < 0 || int(d.DstRank) >= ranks ||
		d.LocalExpert < 0 || int(d.LocalExpert) >= nl || d.Slot < 0 || d.Token < 0 {
		c.pr.add("delivery %d (src rank %d token %d → rank %d local expert %d slot %d) is out of range",
			i, d.SrcRank, d.Token, d.DstRank, d.LocalExpert, d.Slot)
		return
	}
	p := int(d.DstRank)*nl + int(d.LocalExpert)
	b := p*ranks + int(d.SrcRank)
	if n := c.b.Off[b+1] - c.b.Off[b]; d.Slot >= n {
		c.pr.add("rank %d token %d delivered to expert %d (rank %d local %d) slot %d, but that expert expects %d tokens from rank %d",
			d.SrcRank, d.Token, p, d.DstRank, d.LocalExpert, d.Slot, n, d.SrcRank)
		return
	}
	j := int(c.b.Off[b] + d.Slot)
	switch want := c.l.Msgs[c.b.Msg[j]].Token; {
	case c.seen[j/64]&(1<<(j%64)) != 0:
		c.pr.add("rank %d token %d delivered twice to expert %d (rank %d local %d) slot %d",
			d.SrcRank, d.Token, p, d.DstRank, d.LocalExpert, d.Slot)
	case want != d.Token:
		c.pr.add("rank %d token %d misplaced at expert %d (rank %d local %d) slot %d, which belongs to token %d",
			d.SrcRank, d.Token, p, d.DstRank, d.LocalExpert, d.Slot, want)
	}
	c.seen[j/64] |= 1 << (j % 64)
}

// Err reports what the deliveries added so far got wrong, the slots never
// filled included; nil means the dispatch was exact.
func (c *DispatchCheck) Err() error { return c.err(true) }

// err is Err, with the slots never filled when whole.
func (c *DispatchCheck) err(whole bool) error {
	s := c.l.Shape
	ranks, phys, nl := s.Ranks, s.Physical(), s.LocalExperts()
	pr := problems{what: c.pr.what, n: c.pr.n, msgs: slices.Clone(c.pr.msgs)}
	for p := range phys {
		for src := range ranks {
			if !whole {
				break
			}
			b := p*ranks + src
			for j := c.b.Off[b]; j < c.b.Off[b+1]; j++ {
				if c.seen[j/64]&(1<<(j%64)) == 0 {
					pr.add("rank %d token %d never reached expert %d (rank %d local %d) slot %d",
						src, c.l.Msgs[c.b.Msg[j]].Token, p, p/nl, p%nl, j-c.b.Off[b])
				}
			}
		}
	}
	return pr.err()
}

// Payload is a cheap stand-in for token x: a 64-bit mix of (source rank,
// token), so a receiver can check it got the right token without moving
// real hidden vectors.
func Payload(src, token int) uint64 {
	return mix64(uint64(src)<<32 ^ uint64(uint32(token)))
}

// ExpertOutput is a cheap stand-in for expert(x): a deterministic value in
// [-1, 1) of the token's payload and the LOGICAL expert, so every replica
// of an expert computes the same output, as real replicas do.
func ExpertOutput(src, token, logical int) float64 {
	h := mix64(Payload(src, token) ^ (uint64(logical)+1)*0x9e3779b97f4a7c15)
	return float64(h>>11)/(1<<53)*2 - 1
}

// mix64 is the SplitMix64 finalizer: a bijection that scrambles every bit.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// CombineReference is the combined output of token t on source rank:
// Σ_k w_k · ExpertOutput(rank, t, logical(expert_k)) over valid slots.
func (r *Routing) CombineReference(rank, t int) float64 {
	k := r.Shape.TopK
	var sum float64
	for j := range k {
		e := r.Idx[rank][t*k+j]
		if e < 0 {
			continue
		}
		sum += float64(r.Weights[rank][t*k+j]) * ExpertOutput(rank, t, r.Shape.LogicalOf(int(e)))
	}
	return sum
}

// CombineTolerance is the largest difference CheckCombine accepts, relative
// to max(1, |reference|): summation order may differ, nothing else.
const CombineTolerance = 1e-9

// CheckCombine compares rank's combined outputs, one per token, with
// CombineReference, naming the tokens that differ.
func (r *Routing) CheckCombine(rank int, got []float64) error {
	if rank < 0 || rank >= len(r.Tokens) {
		return fmt.Errorf("combine check: rank %d out of range [0, %d)", rank, len(r.Tokens))
	}
	if len(got) != r.Tokens[rank] {
		return fmt.Errorf("combine check: rank %d: %d outputs for %d tokens", rank, len(got), r.Tokens[rank])
	}
	pr := problems{what: fmt.Sprintf("combine check: rank %d", rank)}
	for t, g := range got {
		want := r.CombineReference(rank, t)
		if !(math.Abs(g-want) <= CombineTolerance*max(1, math.Abs(want))) {
			pr.add("token %d: got %.17g, want %.17g", t, g, want)
		}
	}
	return pr.err()
}
