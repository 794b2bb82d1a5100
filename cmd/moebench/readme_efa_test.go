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

// The README's EFA DP Direct posting figures are the committed H200 and
// H100 calibrations' ratios to mlx5 with the same pointer payload.
func TestREADMEEFAPostingRatios(t *testing.T) {
	t.Parallel()
	text := readmetext.Flat(readme(t))
	for _, host := range []struct {
		file string
		want func(threadfence, none float64) string
	}{
		{"h200-efa-calibrate-raw.json", func(tf, none float64) string {
			return fmt.Sprintf("at %.2f of it under threadfence, whose mlx5 sequence fences the doorbell record as well; unordered, EFA's fourth 16 B store makes it %.2f times mlx5's", tf, none)
		}},
		{"h100-efa-calibrate-raw.json", func(tf, none float64) string {
			return fmt.Sprintf("gives the same within 2%%, %.2f and %.2f", tf, none)
		}},
	} {
		b, err := os.ReadFile("../../native/testdata/" + host.file)
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
				t.Fatalf("%s %s: EFA %v ns, mlx5 %v ns", host.file, mode, e, x)
			}
			return e / x
		}
		for _, mode := range []string{"release-sys", "fence-sys"} {
			if r := ratio(mode); math.Abs(r-1) > 0.02 {
				t.Errorf("%s %s: EFA/mlx5 %.3f, the README says within 2%%", host.file, mode, r)
			}
		}
		if want := host.want(ratio("threadfence"), ratio("none")); !strings.Contains(text, want) {
			t.Errorf("README lacks %q", want)
		}
	}
}
