package moe_test

import (
	"testing"

	"moebench/moe"
)

// layoutCases are routings with redundancy, several nodes, -1 slots and
// ragged per-rank token counts.
func layoutCases(t testing.TB) map[string]*moe.Routing {
	t.Helper()
	redundant := v3()
	redundant.PhysicalExperts = 288
	redundant.Ranks, redundant.Tokens = 32, 64
	small := moe.Shape{Experts: 8, TopK: 3, Hidden: 4096, Tokens: 4, Ranks: 4, GPUsPerNode: 2, Dispatch: moe.FP8, Combine: moe.BF16}
	ragged, err := moe.FromTopk(small, [][]int64{
		{0, 1, 2, 7, -1, 6, -1, -1, -1, 3, 4, 5},
		{},
		{5, 4, -1},
		{2, 0, 1, 6, 7, 3},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*moe.Routing{
		"v3-powerlaw":     mustGenerate(t, v3(), "powerlaw:1.2", 11),
		"redundant-ranks": mustGenerate(t, redundant, "imbalanced-ranks:3", 12),
		"ragged":          ragged,
	}
}

func TestLLLayout(t *testing.T) {
	t.Parallel()
	for name, r := range layoutCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := r.Shape
			l := r.LL()
			sel := r.Selections()
			if len(l.Msgs) != sel {
				t.Fatalf("%d messages for %d selections", len(l.Msgs), sel)
			}
			var counts, byLoc, perRank, perExpert int64
			for _, c := range l.Counts {
				counts += int64(c)
			}
			for _, n := range l.ByLocality {
				byLoc += n
			}
			for _, n := range l.RecvPerRank {
				perRank += n
			}
			for _, n := range l.RecvPerExpert {
				perExpert += n
			}
			for what, got := range map[string]int64{"counts": counts, "locality": byLoc, "per rank": perRank, "per expert": perExpert} {
				if got != int64(sel) {
					t.Errorf("%s sum to %d, want %d selections", what, got, sel)
				}
			}
			// Every message matches its routing entry, and receive slots
			// number each (source, expert) block 0, 1, 2... in token order.
			next := make([]int32, s.Physical())
			for src := range s.Ranks {
				clear(next)
				lastTok := int32(-1)
				for _, m := range l.From(src) {
					e := m.Expert(s)
					if got := r.Idx[src][int(m.Token)*s.TopK+int(m.Slot)]; int(got) != e {
						t.Fatalf("rank %d token %d slot %d: message to expert %d, routing says %d", src, m.Token, m.Slot, e, got)
					}
					if m.RecvSlot != next[e] {
						t.Fatalf("rank %d token %d → expert %d: receive slot %d, want %d", src, m.Token, e, m.RecvSlot, next[e])
					}
					if m.Token < lastTok {
						t.Fatalf("rank %d: messages out of token order", src)
					}
					lastTok = m.Token
					next[e]++
				}
				for p := range s.Physical() {
					if got := l.Count(src, s.RankOfExpert(p), s.LocalIndex(p)); got != int(next[p]) {
						t.Fatalf("Count(%d, expert %d) = %d, want %d", src, p, got, next[p])
					}
				}
			}
			if ld := l.RankLoad(); ld.Max < int64(ld.Mean) || l.RecvPerRank[ld.ArgMax] != ld.Max {
				t.Errorf("RankLoad %+v inconsistent", ld)
			}
		})
	}
}

func TestNormalLayout(t *testing.T) {
	t.Parallel()
	for name, r := range layoutCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := r.Shape
			n := r.Normal()
			nodes := s.Nodes()
			wantRank := make([]int32, s.Ranks*s.Ranks)
			wantNode := make([]int32, s.Ranks*nodes)
			var pairs, remoteNodes, perExpert int64
			for src := range s.Ranks {
				for tok := range r.TokensOf(src) {
					inRank := make([]bool, s.Ranks)
					inNode := make([]bool, nodes)
					for _, e := range r.Idx[src][tok*s.TopK : (tok+1)*s.TopK] {
						if e >= 0 {
							inRank[s.RankOfExpert(int(e))] = true
							inNode[s.NodeOf(s.RankOfExpert(int(e)))] = true
						}
					}
					for dst, in := range inRank {
						if in != n.InRank(src, tok, dst) {
							t.Fatalf("InRank(%d, %d, %d) = %v, want %v", src, tok, dst, !in, in)
						}
						if in {
							wantRank[src*s.Ranks+dst]++
							pairs++
						}
					}
					for node, in := range inNode {
						if in {
							wantNode[src*nodes+node]++
							if node != s.NodeOf(src) {
								remoteNodes++
							}
						}
					}
					if got := len(n.NodesOf(src, tok)); got > len(n.RanksOf(src, tok)) {
						t.Fatalf("rank %d token %d: %d nodes for %d ranks", src, tok, got, len(n.RanksOf(src, tok)))
					}
				}
			}
			for i := range wantRank {
				if n.TokensPerRank[i] != wantRank[i] {
					t.Fatalf("TokensPerRank[%d→%d] = %d, want %d", i/s.Ranks, i%s.Ranks, n.TokensPerRank[i], wantRank[i])
				}
			}
			for i := range wantNode {
				if n.TokensPerNode[i] != wantNode[i] {
					t.Fatalf("TokensPerNode[%d→node %d] = %d, want %d", i/nodes, i%nodes, n.TokensPerNode[i], wantNode[i])
				}
			}
			for _, c := range n.TokensPerExpert {
				perExpert += int64(c)
			}
			if perExpert != int64(r.Selections()) {
				t.Errorf("TokensPerExpert sum to %d, want %d selections", perExpert, r.Selections())
			}
			var byLoc, recv int64
			for _, c := range n.ByLocality {
				byLoc += c
			}
			for _, c := range n.RecvPerRank {
				recv += c
			}
			if byLoc != pairs || recv != pairs || int64(len(n.RankList)) != pairs {
				t.Errorf("locality %d, received %d, rank list %d; want %d (token, rank) pairs", byLoc, recv, len(n.RankList), pairs)
			}
			if n.RemoteNodeSends != remoteNodes {
				t.Errorf("RemoteNodeSends = %d, want %d", n.RemoteNodeSends, remoteNodes)
			}
		})
	}
}

// bigShape is the benchmark scale: 1,024 ranks × 128 tokens × top-8, one
// expert per rank, about 1M selections.
func bigShape() moe.Shape {
	return moe.Shape{Experts: 1024, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 1024, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
}

func BenchmarkGenerate1024Ranks(b *testing.B) {
	for _, spec := range []string{"uniform", "powerlaw:1.2"} {
		b.Run(spec, func(b *testing.B) {
			sp, err := moe.ParseRoutingSpec(spec)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := moe.Generate(bigShape(), sp, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLayout1024Ranks(b *testing.B) {
	r := mustGenerate(b, bigShape(), "powerlaw:1.2", 1)
	b.Run("ll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.LL()
		}
	})
	b.Run("normal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Normal()
		}
	})
	b.Run("hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Hash()
		}
	})
}
