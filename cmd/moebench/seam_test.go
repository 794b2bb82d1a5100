package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"moebench/transport/toymech"
)

// A mechanism that only its own package knows runs through run, sweep and
// size: flags, columns, causes and sizing grids come from its declaration.
// It registers in a child process, so that the other tests' "all
// transports" stay the built-in ones.
func TestNewMechanismThroughTheCLI(t *testing.T) {
	t.Parallel()
	if os.Getenv("MOEBENCH_TOYMECH") == "" {
		if testing.Short() {
			t.Skip("runs the test binary again")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestNewMechanismThroughTheCLI$", "-test.v")
		cmd.Env = append(os.Environ(), "MOEBENCH_TOYMECH=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNewMechanismThroughTheCLI") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	toymech.Register()
	small := []string{"--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--no-payload-check"}

	out, help, _ := runCLI(t, "run", "--help")
	help += out
	for _, want := range []string{"mini-proxy, toy, or all", "--lanes ints", "toy: FIFO lanes per rank"} {
		if !strings.Contains(help, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}

	out, _, err := runCLI(t, append([]string{"run", "--transport", "toy,mini-gda"}, small...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`lane_setup`, `\ntoy +toy +dispatch`, `\ntoy +combine( +[0-9.]+){6} +0 +0 +0\.5 `,
		`toy lanes/rank +route hash`, `\nmini-gda( +[0-9.]+){8} +— +[0-9a-f]{16} +yes`, `\ntoy( +[0-9.]+){8} +1 +[0-9a-f]{16} +yes`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NO (") {
		t.Errorf("a check failed:\n%s", out)
	}

	out, _, err = runCLI(t, append([]string{"sweep", "--transport", "toy", "--lanes", "1,4", "--format", "csv"}, small...)...)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(stripHeader(out)), "\n")
	if len(rows) != 1+4 || !strings.Contains(rows[0], "breakdown_lane_setup_us") {
		t.Fatalf("sweep: %d rows:\n%s", len(rows), out)
	}
	// Four lanes per rank spread the layer's channels: faster dispatch.
	col := slices.Index(strings.Split(rows[0], ","), "mean_us")
	mean := func(row string) float64 {
		v, err := strconv.ParseFloat(strings.Split(row, ",")[col], 64)
		if err != nil || !strings.Contains(row, ",dispatch,") {
			t.Fatalf("not a dispatch row with a mean: %s", row)
		}
		return v
	}
	if one, four := mean(rows[1]), mean(rows[3]); four >= one {
		t.Errorf("one lane %.1f µs, four lanes %.1f µs", one, four)
	}

	out, _, err = runCLI(t, append([]string{"size", "--transport", "toy", "--lanes", "1,2"}, small...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"toy lanes=1", "toy lanes=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("size lacks %q:\n%s", want, out)
		}
	}

	if _, _, err := runCLI(t, append([]string{"run", "--transport", "mini-gda", "--lanes", "2"}, small...)...); err == nil ||
		!strings.Contains(err.Error(), "--lanes applies to toy") {
		t.Errorf("--lanes on mini-gda: %v", err)
	}
}
