package main

import (
	"encoding/json"
	"strings"
	"testing"

	"moebench/internal/report"
)

// faultsSection is the README's Faults section.
func faultsSection(t *testing.T) string {
	t.Helper()
	text := readme(t)
	i := strings.Index(text, "\n### Faults\n")
	if i < 0 {
		t.Fatal("README has no Faults section")
	}
	s := text[i+1:]
	if j := strings.Index(s, "\n### "); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// linesOf are out's lines that keep says to.
func linesOf(out string, keep func(string) bool) []string {
	var l []string
	for _, x := range strings.Split(out, "\n") {
		if keep(x) {
			l = append(l, x)
		}
	}
	return l
}

// quoted reports each of lines the section does not quote as a line of
// its own.
func quoted(t *testing.T, section, what string, lines []string) {
	t.Helper()
	if len(lines) == 0 {
		t.Errorf("%s: the run gave no line to quote", what)
	}
	for _, l := range lines {
		if !strings.Contains(section, "\n"+l+"\n") {
			t.Errorf("%s: README's Faults section lacks the line\n%s", what, l)
		}
	}
}

func textOf(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr)
	}
	return out
}

// The README's Faults section is what these commands print: RC failing
// under 20% loss, with where and why; SRD delivering under it, late;
// a slow rank named as combine's slowest in every replayed layer; and the
// tails over seeds of a swept loss rate.
func TestREADMEFaults(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-runs a few dozen layers; the race detector adds nothing to what the plain run checks")
	}
	section := faultsSection(t)
	t.Run("rc fails", func(t *testing.T) {
		t.Parallel()
		args := []string{"run", "--ranks", "16", "--tokens", "8", "--transport", "mini-gda", "--fault", "loss:0.2"}
		out := textOf(t, args...)
		fails := linesOf(out, func(l string) bool { return strings.HasPrefix(l, "! ") })
		if len(fails) != 1 || !strings.Contains(fails[0], "IBV_WC_RETRY_EXC_ERR") {
			t.Errorf("want one failure with IBV_WC_RETRY_EXC_ERR, got %q", fails)
		}
		quoted(t, section, "mini-gda under loss", fails)
		if again := textOf(t, args...); again != out {
			t.Error("the same seed gave two different runs")
		}
	})
	t.Run("srd degrades", func(t *testing.T) {
		t.Parallel()
		base := []string{"run", "--ranks", "16", "--tokens", "8", "--profile", "p-b200-efa", "--transport", "srd"}
		out := textOf(t, append(base, "--fault", "loss:0.2")...)
		if strings.Contains(out, "\n! ") || strings.Contains(out, "failed") {
			t.Errorf("srd failed under 20%% loss:\n%s", out)
		}
		rows := linesOf(out, func(l string) bool { return strings.HasPrefix(l, "deepep-v2-efa  srd ") })
		quoted(t, section, "srd under loss", rows)
		var doc struct {
			Results []struct {
				Dispatch, Combine struct {
					Mean float64 `json:"mean_us"`
				}
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(textOf(t, append(base, "--format", "json")...)), &doc); err != nil {
			t.Fatal(err)
		}
		h := doc.Results[0]
		if want := "dispatch and combine are " + report.Num(h.Dispatch.Mean) + " and " + report.Num(h.Combine.Mean) + " µs"; !strings.Contains(section, want) {
			t.Errorf("README's Faults section lacks SRD's healthy figures: %q", want)
		}
	})
	t.Run("slow rank", func(t *testing.T) {
		t.Parallel()
		path := genTrace(t, t.TempDir(), "r.bin", "--routing", "uniform", "--ranks", "16", "--experts", "64", "--tokens", "32", "--layers", "4")
		out, err := replayCLI(t, "--trace", path, "--transport", "mini-gda", "--hidden", "2048", "--fault", "slow:5:2")
		if err != nil {
			t.Fatal(err)
		}
		rows := linesOf(out, func(l string) bool { return strings.HasPrefix(l, "   0  ") && strings.Contains(l, " combine ") })
		if len(rows) != 4 {
			t.Fatalf("%d combine rows, want 4", len(rows))
		}
		for _, r := range rows {
			// The slowest rank's column, after the issue-done time.
			if f := strings.Fields(r); f[10] != "5" {
				t.Errorf("combine's slowest rank is %s, want the slow rank 5: %s", f[10], r)
			}
		}
		quoted(t, section, "replay with a slow rank", rows)
		if !strings.Contains(section, "replay --trace r.bin --transport mini-gda --hidden 2048 --fault slow:5:2") ||
			!strings.Contains(section, "trace gen --routing uniform --ranks 16 --experts 64 --tokens 32 --layers 4 --out r.bin") {
			t.Error("README's Faults section does not give the replay's commands as this test runs them")
		}
	})
	t.Run("tails over seeds", func(t *testing.T) {
		t.Parallel()
		out := textOf(t, "sweep", "--ranks", "16", "--tokens", "32", "--transport", "mini-gda,mini-proxy", "--loss", "0,1e-5,1e-4", "--seeds", "8")
		rows := linesOf(out, func(l string) bool { f := strings.Fields(l); return len(f) > 3 && f[3] == "layer" })
		if len(rows) != 6 {
			t.Fatalf("%d layer rows, want 6:\n%s", len(rows), out)
		}
		quoted(t, section, "sweep --seeds", rows)
	})
}
