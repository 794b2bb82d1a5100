package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	readmetext "moebench/internal/readme"
)

// The EFA stacks the README compares on P-B200-EFA.
var efaStacks = []string{"deepep-v2-efa", "uccl-ep-efa", "deepep-v1-efa"}

// efaRow is the README's EFA table row of one stack at ranks with
// dispatch type dtype: DeepSeek-V3's LL decode (128 tokens a rank) and
// its normal-mode prefill (4,096), mean dispatch / combine µs and what
// bound each.
func efaRow(t *testing.T, stack string, ranks int, dtype string) string {
	t.Helper()
	cells := []string{"`" + stack + "`", fmt.Sprint(ranks), dtype}
	base := []string{"run", "--profile", "p-b200-efa", "--preset", stack, "--ranks", fmt.Sprint(ranks), "--dispatch-dtype", dtype, "--format", "json"}
	for _, extra := range [][]string{{"--tokens", "128"}, {"--mode", "normal", "--tokens", "4096"}} {
		cells = append(cells, phaseCells(t, append(append([]string{}, base...), extra...)...)...)
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// The README's EFA table is what moebench run predicts for each stack.
func TestREADMEEFATable(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-runs 24 layers; the race detector adds nothing to what the plain run checks")
	}
	text := readme(t)
	for _, stack := range efaStacks {
		for _, ranks := range []int{16, 32} {
			for _, dtype := range []string{"fp8", "bf16"} {
				t.Run(fmt.Sprintf("%s/%d/%s", stack, ranks, dtype), func(t *testing.T) {
					t.Parallel()
					row := efaRow(t, stack, ranks, dtype)
					if !strings.Contains(text, "\n"+row+"\n") {
						t.Errorf("README's EFA table lacks the row\n%s", row)
					}
				})
			}
		}
	}
}

// The README's EFA sizing example recommends what moebench size does.
func TestREADMEEFASize(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-runs nine layers; the race detector adds nothing to what the plain run checks")
	}
	out, stderr, err := runCLI(t, "size", "--profile", "p-b200-efa", "--ranks", "32", "--preset", strings.Join(efaStacks, ","))
	if err != nil {
		t.Fatalf("size: %v\n%s", err, stderr)
	}
	rec := regexp.MustCompile(`Recommended: (.+)\n  - layer (\S+) µs modelled`).FindStringSubmatch(out)
	fast := regexp.MustCompile(`within 5% of the fastest, (.+) \((\S+) µs\)`).FindStringSubmatch(out)
	if rec == nil || fast == nil {
		t.Fatalf("size's recommendation not found in\n%s", out)
	}
	text := strings.Join(strings.Fields(readme(t)), " ")
	for _, want := range []string{
		fmt.Sprintf("It recommends `%s` (%s µs a layer): within 5%% of the fastest, `%s` (%s µs)", rec[1], rec[2], fast[1], fast[2]),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README's EFA sizing example lacks %q", want)
		}
	}
}

// The README's flag_wait figure for NVSHMEM's proxy in prefill is the
// breakdown's.
func TestREADMEEFAFlagWait(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-runs an EP32 prefill layer; the race detector adds nothing to what the plain run checks")
	}
	out, stderr, err := runCLI(t, "run", "--profile", "p-b200-efa", "--preset", "deepep-v1-efa", "--ranks", "32",
		"--mode", "normal", "--tokens", "4096", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc struct {
		Results []struct {
			Dispatch struct {
				Breakdown map[string]float64 `json:"breakdown"`
			} `json:"dispatch"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("`flag_wait` in the breakdown, %.2f ms of the EP32 FP8 dispatch's critical path", doc.Results[0].Dispatch.Breakdown["flag_wait"]/1000)
	if !strings.Contains(readmetext.Flat(readme(t)), want) {
		t.Errorf("README lacks %q", want)
	}
}
