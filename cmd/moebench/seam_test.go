package main

import (
	"errors"
	"fmt"
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
	for _, want := range []string{", toy, or all", "--lanes ints", "toy: FIFO lanes per rank, overriding the preset's (one value; sweep takes a list)"} {
		if !strings.Contains(help, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}

	out, _, err := runCLI(t, append([]string{"run", "--transport", "toy,mini-gda"}, small...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\ntoy +toy +dispatch`).MatchString(out) {
		t.Errorf("run lacks the toy's dispatch:\n%s", out)
	}
	// The toy's setup is a breakdown cause, and its lanes a declared
	// resource: columns beside the other mechanisms' (0 where a transport
	// holds none), whatever else is registered.
	for _, c := range []struct {
		col  string
		key  []string
		want string
	}{
		{"lane_setup", []string{"toy", "combine"}, "0.5"}, {"lane_setup", []string{"mini-gda", "combine"}, "0"},
		{"toy lanes/rank", []string{"toy"}, "1"}, {"toy lanes/rank", []string{"mini-gda"}, "0"},
		{"QPs/NIC", []string{"toy"}, "1"}, {"correct", []string{"toy"}, "yes"}, {"correct", []string{"mini-gda"}, "yes"},
		{"route hash", []string{"toy"}, cell(out, "route hash", "mini-gda")},
	} {
		if got := cell(out, c.col, c.key...); got != c.want || got == "" {
			t.Errorf("run: %s of %v is %q, want %q:\n%s", c.col, c.key, got, c.want, out)
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

	// The memory budget counts what the toy declares a lane costs: 8
	// ranks × 4 lanes × 64 MiB is 2 GiB beyond the workload's own tens
	// of MiB, over a 1 GiB budget; one lane a rank (512 MiB) is within it.
	budget := []string{"--max-memory", "1GiB"}
	_, _, err = runCLI(t, append(append([]string{"run", "--transport", "toy", "--lanes", "4"}, budget...), small...)...)
	m := regexp.MustCompile(`would need about ([0-9.]+) GiB of memory`).FindStringSubmatch(fmt.Sprint(err))
	if !errors.Is(err, errUsage) || m == nil {
		t.Errorf("run --lanes 4 --max-memory 1GiB: %v", err)
	} else if v, _ := strconv.ParseFloat(m[1], 64); v < float64(8*4*toymech.LaneBytes)/(1<<30) || v > 2.2 {
		t.Errorf("run --lanes 4: about %s GiB, want the 2 GiB of lanes and a little more", m[1])
	}
	if _, _, err := runCLI(t, append(append([]string{"run", "--transport", "toy", "--lanes", "1"}, budget...), small...)...); err != nil {
		t.Errorf("run --lanes 1 --max-memory 1GiB: %v", err)
	}
	// size refuses a study whose largest candidate (8 lanes: 4 GiB) does
	// not fit, even one job at a time.
	if _, _, err := runCLI(t, append(append([]string{"size", "--transport", "toy", "--lanes", "1,8"}, budget...), small...)...); !errors.Is(err, errUsage) ||
		!strings.Contains(err.Error(), "about 4.0 GiB") {
		t.Errorf("size --lanes 1,8 --max-memory 1GiB: %v", err)
	}

	// size shows the declared lanes, takes the limit the toy declares on
	// them, and weighs them first: the leanest within the tolerance saves
	// lanes before QPs.
	out, _, err = runCLI(t, append([]string{"size", "--transport", "toy", "--lanes", "1,2,4", "--max-toy-lanes", "2", "--tolerance", "1"}, small...)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := cell(out, "toy lanes/rank", "toy lanes=2"); got != "2" {
		t.Errorf("size: toy lanes=2 holds %q lanes a rank, want 2:\n%s", got, out)
	}
	for _, want := range []string{`toy lanes=4: rejected: over the limit of 2 toy lanes per rank: 4`, `Recommended: toy lanes=1\n`,
		`the leanest there: toy lanes per rank 1 instead of 2, QPs per NIC 1 instead of 2\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("size lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runCLI(t, append([]string{"size", "--transport", "toy", "--max-toy-lanes", "-2"}, small...)...); !errors.Is(err, errUsage) ||
		!strings.Contains(message(err), "--max-toy-lanes: -2") {
		t.Errorf("--max-toy-lanes -2: %v", err)
	}

	if _, _, err := runCLI(t, append([]string{"run", "--transport", "mini-gda", "--lanes", "2"}, small...)...); err == nil ||
		!strings.Contains(err.Error(), "--lanes applies to toy") {
		t.Errorf("--lanes on mini-gda: %v", err)
	}
}

// cell is the value under column col, in the row of out's table with
// that column whose first fields are key; "" where there is none. Table
// cells are apart by two spaces or more.
func cell(out, col string, key ...string) string {
	split := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		head := split.Split(strings.TrimSpace(l), -1)
		c := slices.Index(head, col)
		if c < 0 || i+2 > len(lines) {
			continue
		}
		for _, row := range lines[i+2:] {
			f := split.Split(strings.TrimSpace(row), -1)
			if len(f) != len(head) {
				break
			}
			if slices.Equal(f[:len(key)], key) {
				return f[c]
			}
		}
	}
	return ""
}
