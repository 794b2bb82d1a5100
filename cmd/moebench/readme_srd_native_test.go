package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The README's native SRD figures come from the committed H100 runs.
func TestREADMEQuotesNativeSRD(t *testing.T) {
	t.Parallel()
	text := readmeFlat(t)
	// srd-qps preset transport phase mean p50 max issue kernel algo model ratio
	var table []string
	byQPs := map[string]map[string][]string{}
	var order []string
	for _, r := range textRows(t, "../../native/testdata/h100-layer-srd-qps.txt") {
		if byQPs[r[0]] == nil {
			byQPs[r[0]] = map[string][]string{}
			order = append(order, r[0])
		}
		byQPs[r[0]][r[3]] = r
	}
	for _, q := range order {
		d, c := byQPs[q]["dispatch"], byQPs[q]["combine"]
		table = append(table, fmt.Sprintf("| %s | %s | %s | %s, %s |", q, d[4], c[4], d[11], c[11]))
	}
	if len(table) != 4 {
		t.Fatalf("%d SRD queue counts in the run, want 4", len(table))
	}
	wantQuote(t, text, "the SRD queue sweep", "%s", strings.Join(table, "\n"))

	// ranks GPUs preset transport phase mean p50 max issue kernel algo model ratio
	mean, quoted := map[string]float64{}, map[string]string{}
	span := 0.0
	for _, r := range textRows(t, "../../native/testdata/h100-layer-srd.txt") {
		mean[r[2]+"/"+r[0]+"/"+r[4]], quoted[r[2]+"/"+r[0]+"/"+r[4]] = num(t, r[5]), r[5]
		if r[3] == "srd" {
			span = max(span, math.Abs(num(t, r[12])-1))
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, n := range []string{"2", "4", "8"} {
		x := mean["deepep-v2-efa/"+n+"/dispatch"] / mean["mini-gda/"+n+"/dispatch"]
		lo, hi = min(lo, x), max(hi, x)
	}
	wantQuote(t, text, "mini-gda beside SRD", "mini-gda on the same card takes %s / %s µs", quoted["mini-gda/8/dispatch"], quoted["mini-gda/8/combine"])
	wantQuote(t, text, "SRD against mini-gda", "SRD's two queues a rank are %.1f–%.1f times mini-gda's dispatch at 2, 4 and 8 ranks, the model within %.0f%% of every phase", lo, hi, 100*span)
}
