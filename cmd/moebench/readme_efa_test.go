package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	readmetext "moebench/internal/readme"
	"moebench/transport/gda"
)

// The README's EFA DP Direct posting figures are the committed H100
// calibration's ratios to mlx5 with the same pointer payload.
func TestREADMEEFAPostingRatios(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../native/testdata/h100-efa-calibrate-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	var m gda.Measured
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	ratio := func(mode string) float64 {
		e, x := m.EFAIssueNs[mode], m.PointerIssueNs[mode]
		if e <= 0 || x <= 0 {
			t.Fatalf("%s: EFA %v ns, mlx5 %v ns", mode, e, x)
		}
		return e / x
	}
	for _, mode := range []string{"release-sys", "fence-sys"} {
		if r := ratio(mode); math.Abs(r-1) > 0.02 {
			t.Errorf("%s: EFA/mlx5 %.3f, the README says within 2%%", mode, r)
		}
	}
	text := readmetext.Flat(readme(t))
	for _, want := range []string{
		fmt.Sprintf("at %.2f of it under threadfence", ratio("threadfence")),
		fmt.Sprintf("makes it %.2f times mlx5's", ratio("none")),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README lacks %q", want)
		}
	}
}
