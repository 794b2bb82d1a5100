package transport

import (
	"fmt"
	"slices"
	"strings"
)

// Figure is what a library's limit bounds, one of the Figure constants.
type Figure string

// The figures a library's limit may bound, each as the layer's shape and
// mode give it.
const (
	FigureRanks        Figure = "ranks"         // expert-parallel ranks
	FigureNodes        Figure = "nodes"         // ranks over GPUs per node: a library's RDMA ranks
	FigureTopK         Figure = "top-k"         // experts per token
	FigureLocalExperts Figure = "local experts" // experts on each rank
	// FigureRDMABytes is the RDMA buffer a rank registers, by DeepEP's
	// size formulas (moe.LLBufferBytes; moe.NormalBufferBytes's RDMA part, none
	// on one NVLink domain, where DeepEP's size hint is 0).
	FigureRDMABytes Figure = "RDMA buffer bytes"
)

// Figures are the figures a library's limit may bound.
func Figures() []Figure {
	return []Figure{FigureRanks, FigureNodes, FigureTopK, FigureLocalExperts, FigureRDMABytes}
}

// LibraryLimit is a bound a library's own code puts on a deployment (a
// rank cap, an integer buffer size, a compile-time array), declared as
// data on the presets that run that library, with where it is stated.
type LibraryLimit struct {
	// Name names it in errors, reports and overrides, e.g.
	// "deepep-v1.normal_ranks".
	Name   string
	Figure Figure
	// Modes it holds in, by name (ll, normal); none: every mode.
	Modes []string
	Max   int64 // the most of Figure the library takes
	// Words say what it bounds, e.g. "the most ranks DeepEP V1's
	// normal-mode kernels take".
	Words string
	// Source is where the library states it: the file, the constant or
	// assertion, the commit.
	Source string
}

// Validate names what is missing or impossible in l.
func (l LibraryLimit) Validate() error {
	switch {
	case l.Name == "" || strings.ContainsAny(l.Name, ", \t"):
		return fmt.Errorf("library limit %q: want a name without spaces or commas", l.Name)
	case !slices.Contains(Figures(), l.Figure):
		return fmt.Errorf("library limit %s: unknown figure %q", l.Name, l.Figure)
	case l.Max < 1:
		return fmt.Errorf("library limit %s: maximum %d, want at least 1", l.Name, l.Max)
	case l.Words == "" || l.Source == "":
		return fmt.Errorf("library limit %s: lacks its words or its source", l.Name)
	}
	for _, m := range l.Modes {
		if m != "ll" && m != "normal" {
			return fmt.Errorf("library limit %s: mode %q, want ll or normal", l.Name, m)
		}
	}
	return nil
}
