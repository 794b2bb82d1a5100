package moe

// Placement is contiguous, as in DeepEP: physical expert p lives on rank
// p / LocalExperts() at local index p % LocalExperts(), so a rank's experts
// are neighbours in id and the lowest ids sit on rank 0.
//
// Redundant experts extend the id space round-robin: physical id p serves
// logical expert p % Experts. With 256 logical on 288 physical, ids 256..287
// replicate logical 0..31 and land on the last ranks, away from the
// originals on the first ranks, which is the point of replicating a hot
// expert.

// RankOfExpert is the rank that hosts physical expert p.
func (s Shape) RankOfExpert(p int) int { return p / s.LocalExperts() }

// LocalIndex is physical expert p's index among its rank's experts.
func (s Shape) LocalIndex(p int) int { return p % s.LocalExperts() }

// LogicalOf is the logical expert that physical expert p serves.
func (s Shape) LogicalOf(p int) int { return p % s.Experts }

// NumReplicas is how many physical experts serve logical expert l (0 when l
// is out of range).
func (s Shape) NumReplicas(l int) int {
	if l < 0 || l >= s.Experts {
		return 0
	}
	return (s.Physical()-1-l)/s.Experts + 1
}

// Replicas lists the physical experts that serve logical expert l, in
// increasing id; nil when l is out of range.
func (s Shape) Replicas(l int) []int {
	n := s.NumReplicas(l)
	if n == 0 {
		return nil
	}
	out := make([]int, n)
	for j := range out {
		out[j] = l + j*s.Experts
	}
	return out
}

// PhysicalFor is the replica of logical expert l that serves global token
// g (source rank × Tokens + token index): replica g mod NumReplicas(l). The
// choice is fixed by the token so that a routing replays identically, and it
// spreads consecutive tokens evenly over the replicas. l must be in range.
func (s Shape) PhysicalFor(l, g int) int {
	n := s.NumReplicas(l)
	return l + (g%n)*s.Experts
}
