package moe_test

import (
	"slices"
	"testing"

	"moebench/moe"
)

func TestPlacement(t *testing.T) {
	t.Parallel()
	s := v3()
	s.PhysicalExperts = 288 // 18 per rank
	tests := []struct {
		p, rank, local, logical, node int
	}{
		{0, 0, 0, 0, 0},
		{17, 0, 17, 17, 0},
		{18, 1, 0, 18, 0},
		{143, 7, 17, 143, 0},
		{144, 8, 0, 144, 1},
		{256, 14, 4, 0, 1},
		{287, 15, 17, 31, 1},
	}
	for _, tt := range tests {
		if got := s.RankOfExpert(tt.p); got != tt.rank {
			t.Errorf("RankOfExpert(%d) = %d, want %d", tt.p, got, tt.rank)
		}
		if got := s.LocalIndex(tt.p); got != tt.local {
			t.Errorf("LocalIndex(%d) = %d, want %d", tt.p, got, tt.local)
		}
		if got := s.LogicalOf(tt.p); got != tt.logical {
			t.Errorf("LogicalOf(%d) = %d, want %d", tt.p, got, tt.logical)
		}
		if got := s.NodeOf(s.RankOfExpert(tt.p)); got != tt.node {
			t.Errorf("node of expert %d = %d, want %d", tt.p, got, tt.node)
		}
	}
	if s.LocalExperts() != 18 || s.Nodes() != 2 {
		t.Errorf("LocalExperts, Nodes = %d, %d; want 18, 2", s.LocalExperts(), s.Nodes())
	}
}

func TestReplicas(t *testing.T) {
	t.Parallel()
	s := v3()
	s.PhysicalExperts = 288
	wide := s
	wide.Experts, wide.PhysicalExperts, wide.TopK = 8, 32, 2
	tests := []struct {
		name string
		s    moe.Shape
		l    int
		want []int
	}{
		{"replicated", s, 0, []int{0, 256}},
		{"last-replicated", s, 31, []int{31, 287}},
		{"single", s, 32, []int{32}},
		{"last", s, 255, []int{255}},
		{"four-each", wide, 3, []int{3, 11, 19, 27}},
		{"negative", s, -1, nil},
		{"past-end", s, 256, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.s.Replicas(tt.l)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Replicas(%d) = %v, want %v", tt.l, got, tt.want)
			}
			if n := tt.s.NumReplicas(tt.l); n != len(tt.want) {
				t.Fatalf("NumReplicas(%d) = %d, want %d", tt.l, n, len(tt.want))
			}
			// Consecutive tokens cycle through the replicas.
			for g := range 2 * len(got) {
				if p := tt.s.PhysicalFor(tt.l, g); p != got[g%len(got)] {
					t.Fatalf("PhysicalFor(%d, %d) = %d, want %d", tt.l, g, p, got[g%len(got)])
				}
			}
		})
	}
}

func TestLocalityOf(t *testing.T) {
	t.Parallel()
	s := v3()
	tests := []struct {
		src, dst int
		want     moe.Locality
	}{
		{3, 3, moe.SameRank},
		{0, 7, moe.SameNode},
		{7, 8, moe.Remote},
		{15, 8, moe.SameNode},
	}
	for _, tt := range tests {
		if got := s.LocalityOf(tt.src, tt.dst); got != tt.want {
			t.Errorf("LocalityOf(%d, %d) = %v, want %v", tt.src, tt.dst, got, tt.want)
		}
	}
}
