package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// small keeps CLI runs in milliseconds: EP8 over two nodes, short tokens.
var small = []string{"--ranks", "8", "--gpus-per-node", "4", "--experts", "32", "--tokens", "16", "--hidden", "1024"}

func layerCLI(t *testing.T, cmd func([]string, *bytes.Buffer, *bytes.Buffer) error, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := cmd(args, &out, &errb)
	return out.String(), errb.String(), err
}

func runCmd(args []string, o, e *bytes.Buffer) error   { return runRun(args, o, e) }
func sweepCmd(args []string, o, e *bytes.Buffer) error { return runSweep(args, o, e) }

func TestRunJSONHasThePromisedKeys(t *testing.T) {
	t.Parallel()
	out, _, err := layerCLI(t, runCmd, append(small, "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Header  map[string]any   `json:"header"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Results) < 2 {
		t.Fatalf("%d results, want one per mechanism with a preset", len(doc.Results))
	}
	if f, _ := doc.Header["figures"].(string); !strings.HasPrefix(f, "modelled") {
		t.Errorf("figures %q, want them labelled modelled", f)
	}
	for _, r := range doc.Results {
		for _, k := range []string{"transport", "preset", "workload", "mode", "ranks", "dispatch", "combine", "resources", "route_hash", "bound_by", "correct"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result lacks %q", k)
			}
		}
		for _, ph := range []string{"dispatch", "combine"} {
			p := r[ph].(map[string]any)
			for _, k := range []string{"mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "algo_gbps", "deepep_algo_gbps", "scaleout_bytes", "nvlink_bytes", "breakdown"} {
				if _, ok := p[k]; !ok {
					t.Errorf("%s lacks %q", ph, k)
				}
			}
		}
		res := r["resources"].(map[string]any)
		for _, k := range []string{"qps_per_nic", "active_connections_per_nic"} {
			if _, ok := res[k]; !ok {
				t.Errorf("resources lack %q", k)
			}
		}
		if r["workload"] != "deepseek-v3" || r["mode"] != "ll" {
			t.Errorf("workload %v mode %v", r["workload"], r["mode"])
		}
	}
}

func TestRunTableNamesTheRunAndEveryMechanism(t *testing.T) {
	t.Parallel()
	out, _, err := layerCLI(t, runCmd, small...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# moebench", "figures modelled", "profile p-ib", "host ", "seed 1", "workload deepseek-v3",
		"mini-gda", "dc ", "dispatch", "combine", "Critical path by cause", "Resources and checks", "route hash"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	t.Parallel()
	args := append(small, "--transport", "mini-gda", "--format", "csv", "--seed", "5")
	a, _, err := layerCLI(t, runCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := layerCLI(t, runCmd, args...)
	strip := func(s string) string { // the header names the host
		_, body, _ := strings.Cut(s, "\npreset,")
		return body
	}
	if strip(a) != strip(b) || strip(a) == "" {
		t.Fatalf("two runs differ:\n%s\n%s", a, b)
	}
}

func TestSweepCrossesTheLists(t *testing.T) {
	t.Parallel()
	args := []string{"--ranks", "4,8", "--gpus-per-node", "4", "--experts", "32", "--tokens", "8", "--hidden", "512",
		"--transport", "mini-gda", "--set", "nic.msg_rate_mps=130,260", "--format", "csv"}
	out, stderr, err := layerCLI(t, sweepCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\nmini-gda,mini-gda,ll,"); n != 2*2*2 {
		t.Fatalf("%d CSV records, want 8 (2 ranks × 2 rates × 2 phases):\n%s", n, out)
	}
	if strings.Contains(stderr, "[=") {
		t.Errorf("progress bar drawn on a non-terminal stderr: %q", stderr)
	}
	table, _, err := layerCLI(t, sweepCmd, args[:len(args)-2]...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "ranks") || !strings.Contains(table, "nic.msg_rate_mps") {
		t.Errorf("table lacks the swept columns:\n%s", table)
	}
}

func TestRunBadInputFailsClearlyAndWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outFile := filepath.Join(dir, "run.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topk", "40", "--experts", "32"}, "--topk: 40 exceeds the 32 experts"},
		{[]string{"--experts", "30", "--ranks", "8"}, "--experts: 30 physical experts cannot be placed evenly on 8 ranks"},
		{[]string{"--tokens", "0"}, "--tokens: 0 per rank"},
		{[]string{"--preset", "warp-drive"}, `unknown preset "warp-drive"`},
		{[]string{"--transport", "smoke-signals"}, `--transport "smoke-signals"`},
		{[]string{"--tokens", "600", "--preset", "deepep-v1"}, "--tokens: QP depth too small: the transport's queues hold 1024 WQEs"},
		{[]string{"--mode", "fast"}, `unknown mode "fast"`},
		{[]string{"--background", "bulk:x"}, "--background"},
		{[]string{"--routing", "zipf"}, "--routing"},
		{[]string{"--set", "gpu.sm_clock=3"}, `unknown constant "gpu.sm_clock"`},
		{[]string{"--ranks", "8,16"}, "run takes one value"},
		{[]string{"--workload", "gpt-5"}, `unknown workload "gpt-5"`},
		{[]string{"--topk-groups", "-1"}, "--topk-groups: -1 is negative"},
		{[]string{"--workload", "qwen3-235b", "--expert-groups", "4"}, "--expert-groups 4: no group limit is in force"},
		{[]string{"--topk-groups", "1", "--expert-groups", "64"}, "--topk-groups: 1 groups of 4 experts cannot hold a token's top-8"},
		{[]string{"--experts", "100", "--ranks", "4", "--gpus-per-node", "4"}, "--expert-groups: 100 logical experts do not split into 8 equal groups"},
		{[]string{"--mode", "normal", "--nvlink=false"}, "--nvlink: normal mode across nodes"},
		{[]string{"--mode", "normal", "--chunk", "100"}, "--chunk: 100 tokens per RDMA write exceed half"},
		// A knob no chosen transport takes fails rather than vanishing.
		{[]string{"--transport", "mini-proxy", "--qps-per-peer", "4"}, "--qps-per-peer applies to mini-gda; none of the chosen transports (mini-proxy)"},
		{[]string{"--preset", "gdaki", "--rings", "4"}, "--rings applies to mini-proxy"},
		{[]string{"--transport", "mini-gda", "--qps-per-peer", "2", "--dcis", "4"}, "--dcis applies to dc; none of the chosen transports (mini-gda)"},
		{[]string{"--dcis", "0"}, "--dcis 0: must be at least 1"},
		{[]string{"--qps-per-peer", "-1"}, "--qps-per-peer -1: must be at least 0"},
		{[]string{"--ordering", "none"}, `--ordering "none": want one of gpu-fence`},
	} {
		_, _, err := layerCLI(t, runCmd, append(tc.args, "--out", outFile)...)
		if err == nil || !strings.Contains(message(err), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
			continue
		}
		if exitCode(err) != 2 {
			t.Errorf("%v: exit code %d, want 2", tc.args, exitCode(err))
		}
		if _, statErr := os.Stat(outFile); statErr == nil {
			t.Fatalf("%v left %s behind", tc.args, outFile)
		}
	}
}

func TestRunOutWritesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.json")
	stdout, _, err := layerCLI(t, runCmd, append(small, "--transport", "mini-gda", "--format", "json", "--out", path)...)
	if err != nil || stdout != "" {
		t.Fatalf("err %v, stdout %q", err, stdout)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"results"`) {
		t.Fatalf("file:\n%s", b)
	}
}

func TestRunAndSweepHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []func([]string, *bytes.Buffer, *bytes.Buffer) error{runCmd, sweepCmd} {
		// Help is the output asked for: on stdout.
		stdout, stderr, err := layerCLI(t, c, "--help")
		if err != errHelpShown || !strings.Contains(stdout, "Usage: moebench") || !strings.Contains(stdout, "Examples:") || stderr != "" {
			t.Errorf("--help: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
	}
}

// The header says which group limit the synthetic routing used.
func TestRunStatesTheGroupLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "# routing uniform, top-4 of 8 expert groups (the workload's); background none"},
		{[]string{"--topk-groups", "0"}, "# routing uniform, no group limit; background none"},
		{[]string{"--workload", "kimi-k2"}, "# routing uniform, no group limit; background none"},
		{[]string{"--workload", "qwen3-235b", "--topk-groups", "1"}, "# routing uniform, top-1 of one expert group per node (--topk-groups)"},
	} {
		out, _, err := layerCLI(t, runCmd, append([]string{"--tokens", "4", "--transport", "mini-gda"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v: header lacks %q:\n%s", tc.args, tc.want, out)
		}
	}
}
