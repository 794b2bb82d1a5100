package profile

import (
	"fmt"
	"strings"
)

// Kind says what a constant's value rests on. A built-in profile states
// it for every constant ("kind" in its JSON); a user's file may leave it
// out, and the constant is then unstated.
type Kind string

const (
	// KindDatasheet: a vendor's datasheet, product brief, user guide or
	// architecture document, or a published standard (InfiniBand, PCIe).
	KindDatasheet Kind = "datasheet"
	// KindPaper: a value the paper states, read from a table, figure or
	// section (or a publication that states the platform, as DeepEP's
	// README states its hosts).
	KindPaper Kind = "paper"
	// KindFit: fitted to the paper's microbenchmarks.
	KindFit Kind = "fit"
	// KindMeasured: this project's own native measurements on a GPU, or a
	// bounded fit to them (moebench calibrate).
	KindMeasured Kind = "measured"
	// KindAssumption: a model assumption; its source says why it is kept.
	KindAssumption Kind = "assumption"
	// KindSet: given on the command line (--set).
	KindSet Kind = "set"
)

// kindUnstated is how a constant whose file states no kind is shown.
const kindUnstated = "unstated"

// Kinds lists the kinds a profile file may state. KindSet is the command
// line's, not a file's.
func Kinds() []Kind {
	return []Kind{KindDatasheet, KindPaper, KindFit, KindMeasured, KindAssumption}
}

// String returns the kind's name, "unstated" for none.
func (k Kind) String() string {
	if k == "" {
		return kindUnstated
	}
	return string(k)
}

// parseKind checks a kind a file states.
func parseKind(s string) (Kind, error) {
	var names []string
	for _, k := range Kinds() {
		if s == string(k) {
			return k, nil
		}
		names = append(names, string(k))
	}
	return "", fmt.Errorf("kind %q is not one of %s", s, strings.Join(names, ", "))
}
