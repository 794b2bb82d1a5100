package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"moebench/moe"
	"moebench/workloads"
)

// readmeScale is where TestREADMEExamples runs a README command other than
// as printed. The row with the longest prefix of the command (as printed,
// continuations joined, comment cut) applies: its flags replace the
// command's values of those flags (or are added), its tasks replace a job
// array's or Indexed Job's (the count the shards are told included), its
// paths replace path prefixes the test has no volume for. Every row must
// match a README command. A scaled command of run, sweep, size or replay
// is also run as printed with --max-memory 1MiB, which must refuse it for
// memory alone: every other check of its configuration passed.
var readmeScale = []struct {
	prefix string
	flags  []string // --flag value pairs
	tasks  int
	paths  [][2]string // [from, to] prefixes of arguments
	why    string
}{
	{prefix: "moebench run --preset deepep-v1,nvshmem-ibgda,gdaki,uccl-ep --routing powerlaw:1.2",
		flags: []string{"--tokens", "16"}, why: "four presets at 128 tokens take seconds; 16 tokens per rank"},
	{prefix: "moebench run --tokens 4 --transport mini-proxy --background bulk:64:shared",
		flags: []string{"--background", "bulk:8:shared"}, why: "64 background CTAs a rank stream for seconds; 8"},
	{prefix: "moebench sweep --mode normal --ranks 16,32,64 --tokens 4096 --profile p-roce",
		flags: []string{"--ranks", "16", "--tokens", "256"}, why: "100 s as printed; EP16 at 256 tokens"},
	{prefix: "moebench sweep --ranks 8,16,32,64 --qps-per-peer 1,4 --transport mini-gda",
		flags: []string{"--ranks", "8,16", "--tokens", "32"}, why: "EP32 and EP64 add seconds; EP8 and EP16 at 32 tokens"},
	{prefix: "moebench sweep --transport mini-proxy --workers 1,4,8 --batch 1,16",
		flags: []string{"--tokens", "16"}, why: "six points at 128 tokens; 16"},
	{prefix: "moebench size --ranks 256 --tokens 128",
		flags: []string{"--ranks", "16", "--tokens", "16"}, why: "a minute as printed; EP16 at 16 tokens"},
	{prefix: "moebench trace gen --routing powerlaw:1.2 --layers 4 --out skew.moetrace",
		flags: []string{"--layers", "1", "--tokens", "32"}, why: "replay runs every layer of it; one layer of 32 tokens"},
	{prefix: "moebench validate",
		flags: []string{"--only", "single-op,ordering,inline,completion-scope,proxy-capacity"},
		why:   "every experiment takes seconds; TestREADMEValidateSummaries runs them all, here five"},
	{prefix: "moebench sweep --mode normal --ranks 16,32,64 --tokens 1024 --profile p-roce --transport mini-gda",
		flags: []string{"--ranks", "16", "--tokens", "256"}, why: "9 s as printed; EP16 at 256 tokens"},
	{prefix: "moebench run --ranks 256 --experts 256 --topology leaf-spine:ecmp",
		flags: []string{"--ranks", "32", "--experts", "32", "--tokens", "32"}, why: "EP256 takes seconds; EP32, two leaves of 16, 32 tokens"},
	{prefix: "moebench sweep --ranks 256 --experts 256 --topology leaf-spine:adaptive",
		flags: []string{"--ranks", "32", "--experts", "32", "--tokens", "32"}, why: "two EP256 layers take half a minute; EP32 at 32 tokens"},
	{prefix: "moebench size --ranks 32 --tokens 32 --proxy-cores 2 --max-buffer-gib 0.46",
		flags: []string{"--tokens", "8"}, why: "TestSizeREADME runs it as printed against its golden output; here 8 tokens"},
	{prefix: "moebench size --workload deepseek-v3 --ranks 1024",
		flags: []string{"--ranks", "16", "--experts", "16", "--tokens", "16"}, tasks: 2,
		why: "16 shards of minutes each at EP1024; 2 shards of an EP16 study at 16 tokens"},
	{prefix: "moebench size --workload deepseek-v3 --ranks 1024 --experts 1024 --tokens 128 --preset deepep-v1,nvshmem-ibgda,dc,mini-proxy,uccl-ep --max-buffer-gib 8 --proxy-cores 4 --shard auto/16",
		flags: []string{"--ranks", "16", "--experts", "16", "--tokens", "16", "--shard", "auto/2"}, tasks: 2,
		paths: [][2]string{{"/results/", "results/"}},
		why:   "as the Slurm array, and the shared volume /results is the run's results/"},
	{prefix: "moebench sweep --ranks 64 --transport mini-gda,mini-proxy --loss 0,1e-5,1e-4 --seeds 20",
		flags: []string{"--ranks", "16", "--tokens", "8", "--seeds", "2"}, why: "120 layers at EP64; EP16 at 8 tokens, 2 seeds (TestREADMEFaults runs the README's tails)"},
	{prefix: "moebench sweep --ranks 32,64,128,256 --tokens 8,32,128",
		flags: []string{"--ranks", "16,32", "--tokens", "8"}, why: "twelve points up to EP256; four small ones"},
	{prefix: "moebench validate --against deepep --measured", why: "as printed, a few runs of the model: the longer prefix keeps the row above's --only, which the suite refuses, off it"},
	{prefix: "bin/moebench validate --profile p-ib,native/testdata/h200-calibration.json,native/testdata/h200-layer.json",
		flags: []string{"--only", "single-op,ordering"}, why: "the measured rows take seconds; two experiments"},
}

// readmeFiles are the files a README command reads that no command before
// it writes: the test writes them first, running moebench or copying.
var readmeFiles = []struct {
	prefix string
	run    [][]string  // moebench commands run first
	copy   [][2]string // [from the repository root, to] copied first
	why    string
}{
	{prefix: "moebench report run.json size.json", run: [][]string{
		{"run", "--format", "json", "--out", "run.json"},
		{"size", "--ranks", "16", "--tokens", "16", "--transport", "mini-gda", "--format", "json", "--out", "size.json"},
	}, why: "the Use block's commands print tables; report reads their JSON"},
	{prefix: "moebench validate --against deepep --measured my-runs.json",
		copy: [][2]string{{"published/testdata/deepep-h800.json", "my-runs.json"}},
		why:  "a user's runs of DeepEP's tests: the committed example, DeepEP's own figures, stands in"},
	{prefix: "bin/moebench validate --profile p-ib,h200.json",
		copy: [][2]string{{"native/testdata/h200-calibration.json", "h200.json"}},
		why:  "calibrate writes h200.json on a GPU; an H200's calibration stands in"},
}

// readmeShell says what the test does with a README line that is not a
// moebench command: "" skips it, for the reason given; mkdir -p is done.
var readmeShell = map[string]string{
	"make run":    "builds bin/moebench and runs moebench run, which the Use block runs",
	"make test":   "the suite this test is part of",
	"make native": "needs nvcc; the native commands after it are checked to refuse without the library",
}

// readmeRunLimit bounds each run; the log gives each one's wall time.
const readmeRunLimit = 30 * time.Second

// readmeCmd is one README command.
type readmeCmd struct {
	line  int    // in README.md
	text  string // continuations joined, comment cut
	shell bool   // not moebench: see readmeShell
	// tasks is the job array's or Indexed Job's size (0: one plain run);
	// taskEnv is task i's environment in an array of n.
	tasks   int
	taskEnv func(i, n int) map[string]string
}

// readmeCommands reads the README's sh and yaml blocks into commands in
// the order a reader runs them; a job script (a sh block opening #!) runs
// where an sbatch line submits it. Another block language, or a line that
// is neither moebench nor in readmeShell nor mkdir -p, is an error.
func readmeCommands(text string) ([]readmeCmd, error) {
	var cmds, script []readmeCmd
	var errs []error
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		lang, first := strings.TrimSpace(lines[i][3:]), i+2
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		body := lines[i+1 : j]
		i = j
		switch lang {
		case "", "text": // output, not commands
		case "sh":
			got, isScript, err := shBlock(body, first)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if isScript {
				if script != nil {
					errs = append(errs, fmt.Errorf("README.md:%d: the job script before this one is never submitted (sbatch)", first))
				}
				script = got
				continue
			}
			for _, c := range got {
				if _, known := readmeShell[c.text]; c.shell && !known && !strings.HasPrefix(c.text, "mkdir -p ") && !strings.HasPrefix(c.text, "sbatch ") {
					errs = append(errs, fmt.Errorf("README.md:%d: %q: the test does not know how to run it (readmeShell)", c.line, c.text))
					continue
				}
				if c.shell && strings.HasPrefix(c.text, "sbatch ") {
					if script == nil {
						errs = append(errs, fmt.Errorf("README.md:%d: %q submits no job script shown before it", c.line, c.text))
					}
					cmds, script = append(cmds, script...), nil
					continue
				}
				cmds = append(cmds, c)
			}
		case "yaml":
			got, err := yamlBlock(body, first)
			if err != nil {
				errs = append(errs, err)
			}
			for _, c := range got {
				if c.shell {
					errs = append(errs, fmt.Errorf("README.md:%d: %q: the test runs moebench commands of yaml blocks only", c.line, c.text))
				}
			}
			cmds = append(cmds, got...)
		default:
			errs = append(errs, fmt.Errorf("README.md:%d: a ```%s block: the test reads sh and yaml blocks only", first-1, lang))
		}
	}
	if script != nil {
		errs = append(errs, fmt.Errorf("README.md:%d: the job script is never submitted (sbatch)", script[0].line))
	}
	return cmds, errors.Join(errs...)
}

// shBlock reads a sh block's commands: continuations joined, comments cut,
// && split; a job script's commands run once per task of #SBATCH --array.
func shBlock(body []string, first int) (cmds []readmeCmd, script bool, err error) {
	script = len(body) > 0 && strings.HasPrefix(body[0], "#!")
	tasks, lo := 0, 0
	for k := 0; k < len(body); k++ {
		line, text := first+k, strings.TrimSpace(body[k])
		for strings.HasSuffix(text, `\`) && k+1 < len(body) {
			k++
			text = strings.TrimSpace(strings.TrimSuffix(text, `\`)) + " " + strings.TrimSpace(body[k])
		}
		if v, ok := strings.CutPrefix(text, "#SBATCH --array="); ok {
			a, b, ok := strings.Cut(v, "-")
			x, err1 := strconv.Atoi(a)
			y, err2 := strconv.Atoi(b)
			if !ok || err1 != nil || err2 != nil || y < x {
				return nil, false, fmt.Errorf("README.md:%d: --array=%s: the test runs arrays written A-B", line, v)
			}
			tasks, lo = y-x+1, x
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if c := strings.Index(text, " #"); c >= 0 {
			text = strings.TrimSpace(text[:c])
		}
		for part := range strings.SplitSeq(text, "&&") {
			part = strings.TrimSpace(part)
			cmds = append(cmds, readmeCmd{line: line, text: part, shell: !isMoebench(part)})
		}
	}
	if tasks > 0 {
		for i := range cmds {
			cmds[i].tasks = tasks
			cmds[i].taskEnv = func(i, n int) map[string]string {
				return map[string]string{"SLURM_ARRAY_TASK_ID": strconv.Itoa(lo + i),
					"SLURM_ARRAY_TASK_MIN": strconv.Itoa(lo), "SLURM_ARRAY_TASK_COUNT": strconv.Itoa(n)}
			}
		}
	}
	return cmds, script, nil
}

func isMoebench(cmd string) bool {
	return strings.HasPrefix(cmd, "moebench ") || strings.HasPrefix(cmd, "bin/moebench ")
}

// yamlBlock reads the commands in a yaml block's folded (>-) scalars; an
// Indexed Job runs them once per completion, JOB_COMPLETION_INDEX set.
func yamlBlock(body []string, first int) ([]readmeCmd, error) {
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	completions, indexed := 1, false
	var cmds []readmeCmd
	for k := 0; k < len(body); k++ {
		text := strings.TrimSpace(body[k])
		if v, ok := strings.CutPrefix(text, "completions:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("README.md:%d: completions %q", first+k, v)
			}
			completions = n
		}
		indexed = indexed || text == "completionMode: Indexed"
		if strings.Contains(text, "moebench ") {
			return nil, fmt.Errorf("README.md:%d: a moebench command outside a folded (>-) scalar: the test cannot run it", first+k)
		}
		if !strings.HasSuffix(text, ">-") || k+1 >= len(body) {
			continue
		}
		line, in := first+k+1, indent(body[k+1])
		var words []string
		for k+1 < len(body) && strings.TrimSpace(body[k+1]) != "" && indent(body[k+1]) == in {
			k++
			words = append(words, strings.TrimSpace(body[k]))
		}
		c := readmeCmd{line: line, text: strings.Join(words, " ")}
		c.shell = !isMoebench(c.text)
		cmds = append(cmds, c)
	}
	if indexed {
		for i := range cmds {
			cmds[i].tasks = completions
			cmds[i].taskEnv = func(i, _ int) map[string]string {
				return map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
			}
		}
	}
	return cmds, nil
}

// withFlags returns args with each --flag value pair's value in place of
// the one args give (as --flag value or --flag=value), or added.
func withFlags(args, flags []string) []string {
	out := slices.Clone(args)
	for k := 0; k+1 < len(flags); k += 2 {
		f, v := flags[k], flags[k+1]
		switch i := slices.IndexFunc(out, func(a string) bool { return a == f || strings.HasPrefix(a, f+"=") }); {
		case i < 0:
			out = append(out, f, v)
		case out[i] == f && i+1 < len(out):
			out[i+1] = v
		default:
			out[i] = f + "=" + v
		}
	}
	return out
}

// flagValue is the value args give flag, or "".
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// needsNative says whether a command runs on the native library: the
// engine native, or calibrate measuring rather than refitting.
func needsNative(args []string) bool {
	return flagValue(args, "--engine") == "native" ||
		(len(args) > 0 && args[0] == "calibrate" && flagValue(args, "--from-raw") == "")
}

// bufferFits checks a size command as printed: DeepEP's low-latency buffer
// alone must be within its --max-buffer-gib, or no candidate can be (the
// scaled run, with smaller buffers, cannot tell).
func bufferFits(args []string) error {
	limit := flagValue(args, "--max-buffer-gib")
	if args[0] != "size" || limit == "" || flagValue(args, "--mode") == "normal" {
		return nil
	}
	name := cmp(flagValue(args, "--workload"), "deepseek-v3")
	w, err := workloads.Get(name)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		flag string
		to   *int
	}{{"--ranks", &w.Shape.Ranks}, {"--experts", &w.Shape.Experts}, {"--tokens", &w.Shape.Tokens}} {
		if v := flagValue(args, f.flag); v != "" {
			if *f.to, err = strconv.Atoi(v); err != nil {
				return fmt.Errorf("%s %q: %v", f.flag, v, err)
			}
		}
	}
	gib, err := strconv.ParseFloat(limit, 64)
	if err != nil {
		return fmt.Errorf("--max-buffer-gib %q: %v", limit, err)
	}
	if b := float64(moe.LLBufferBytes(w.Shape)) / (1 << 30); b > gib {
		return fmt.Errorf("DeepEP's low-latency buffer alone is %.3g GiB per GPU, over --max-buffer-gib %s: no candidate can meet it", b, limit)
	}
	return nil
}

func cmp(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// readmeEnv is the test's environment without the variables the examples
// set or that would point moebench at a native library.
func readmeEnv(extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLURM_") || k == "JOB_COMPLETION_INDEX" || k == "MOEBENCH_NATIVE_LIB" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// readmeRun runs the built moebench with args in dir.
func readmeRun(t *testing.T, bin, dir string, env map[string]string, args []string) (code int, stderr string, wall, cpu time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readmeRunLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, readmeEnv(env)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &errb
	start := time.Now()
	err := cmd.Run()
	wall = time.Since(start)
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("moebench %s: still running after %v", strings.Join(args, " "), readmeRunLimit)
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("moebench %s: %v", strings.Join(args, " "), err)
	}
	return code, errb.String(), wall, cpu
}

// Every moebench command in the README's sh and yaml blocks runs, in the
// README's order in one folder, and exits 0 having written what it was
// asked to (native ones refuse: no library); readmeScale says where a run
// differs from the README and why.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	bin := moebenchBinary(t)
	cmds, err := readmeCommands(readme(t))
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The repository's folders the examples name: docs/ to write a figure
	// into, native/testdata to read profiles from.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "native"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "native", "testdata"), filepath.Join(dir, "native", "testdata")); err != nil {
		t.Fatal(err)
	}
	scaled, filed := map[int]bool{}, map[int]bool{}
	var wall, cpu time.Duration
	runs := 0
	run := func(c readmeCmd, env map[string]string, args []string) (int, string) {
		code, stderr, w, u := readmeRun(t, bin, dir, env, args)
		wall, cpu = wall+w, cpu+u
		runs++
		t.Logf("README.md:%d: %.2f s (CPU %.2f s): moebench %s", c.line, w.Seconds(), u.Seconds(), strings.Join(args, " "))
		return code, stderr
	}
	for _, c := range cmds {
		if c.shell {
			if dirs, ok := strings.CutPrefix(c.text, "mkdir -p "); ok {
				for _, d := range strings.Fields(dirs) {
					if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				continue
			}
			t.Logf("README.md:%d: not run: %s: %s", c.line, c.text, readmeShell[c.text])
			continue
		}
		for i, f := range readmeFiles {
			if !strings.HasPrefix(c.text, f.prefix) {
				continue
			}
			filed[i] = true
			for _, cp := range f.copy {
				b, err := os.ReadFile(filepath.Join(root, cp[0]))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, cp[1]), b, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range f.run {
				if code, stderr := run(c, nil, args); code != 0 {
					t.Fatalf("README.md:%d: writing its input: moebench %s: exit %d: %s", c.line, strings.Join(args, " "), code, stderr)
				}
			}
		}
		row := -1
		for i, s := range readmeScale {
			if strings.HasPrefix(c.text, s.prefix) && (row < 0 || len(s.prefix) > len(readmeScale[row].prefix)) {
				row = i
			}
		}
		tasks := c.tasks
		var flags []string
		var paths [][2]string
		if row >= 0 {
			scaled[row] = true
			s := readmeScale[row]
			flags, paths = s.flags, s.paths
			if s.tasks > 0 {
				if tasks == 0 {
					t.Errorf("README.md:%d: readmeScale gives tasks to a command of no job array", c.line)
				}
				tasks = s.tasks
			}
		}
		envs := []map[string]string{nil}
		if tasks > 0 {
			envs = nil
			for i := range tasks {
				envs = append(envs, c.taskEnv(i, tasks))
			}
		}
		for k, env := range envs {
			var missing []string
			text := os.Expand(c.text, func(v string) string {
				if x, ok := env[v]; ok {
					return x
				}
				missing = append(missing, v)
				return ""
			})
			if missing != nil {
				t.Errorf("README.md:%d: $%s has no value here", c.line, strings.Join(missing, ", $"))
				continue
			}
			printed := strings.Fields(text)[1:]
			for i, a := range printed {
				for _, p := range paths {
					if rest, ok := strings.CutPrefix(a, p[0]); ok {
						printed[i] = p[1] + rest
					}
				}
			}
			var args []string
			for _, a := range printed {
				if !strings.ContainsAny(a, "*?[") {
					args = append(args, a)
					continue
				}
				m, err := filepath.Glob(filepath.Join(dir, a))
				if err != nil || len(m) == 0 {
					t.Errorf("README.md:%d: %s matches no file (%v)", c.line, a, err)
				}
				for _, f := range m {
					args = append(args, strings.TrimPrefix(f, dir+string(filepath.Separator)))
				}
			}
			if k == 0 {
				if err := bufferFits(args); err != nil {
					t.Errorf("README.md:%d: as printed: %v", c.line, err)
				}
			}
			if k == 0 && flags != nil && slices.Contains([]string{"run", "sweep", "size", "replay"}, args[0]) {
				// As printed, only the memory budget may refuse it.
				probe := append(slices.Clone(args), "--max-memory", "1MiB")
				if code, stderr := run(c, env, probe); code != 2 || !strings.Contains(stderr, "--max-memory 1MiB") {
					t.Errorf("README.md:%d: as printed with --max-memory 1MiB: exit %d, want 2 for memory alone: %s", c.line, code, stderr)
				}
			}
			args = withFlags(args, flags)
			code, stderr := run(c, env, args)
			if needsNative(args) {
				if code != 1 || !strings.Contains(stderr, "native library not found") {
					t.Errorf("README.md:%d: without the native library: exit %d, want 1 saying so: %s", c.line, code, stderr)
				}
				t.Logf("README.md:%d: needs the native library: parsed and refused without it, as it must", c.line)
				continue
			}
			if code != 0 {
				t.Errorf("README.md:%d: moebench %s: exit %d: %s", c.line, strings.Join(args, " "), code, stderr)
				continue
			}
			for _, f := range []string{"--out", "-o", "--plot", "--raw"} {
				if out := flagValue(args, f); out != "" && out != "-" {
					if _, err := os.Stat(filepath.Join(dir, out)); err != nil {
						t.Errorf("README.md:%d: %s %s not written: %v", c.line, f, out, err)
					}
				}
			}
		}
	}
	for i, s := range readmeScale {
		if !scaled[i] {
			t.Errorf("readmeScale row %q matches no README command", s.prefix)
		}
	}
	for i, f := range readmeFiles {
		if !filed[i] {
			t.Errorf("readmeFiles row %q matches no README command", f.prefix)
		}
	}
	t.Logf("%d runs, %.1f s, CPU %.1f s", runs, wall.Seconds(), cpu.Seconds())
}

// readmeCommands finds every command, and refuses what it cannot run.
func TestREADMECommandsRead(t *testing.T) {
	t.Parallel()
	fence := "```"
	for _, tc := range []struct {
		name, text string
		want       []string // line, text, shell, tasks and the second task's environment
		err        string
	}{
		{name: "continuation and comment", text: fence + "sh\nmoebench run --tokens 4 \\\n  --ranks 8   # decode\nmake run\n" + fence + "\n",
			want: []string{`2 "moebench run --tokens 4 --ranks 8" false 0 map[]`, `4 "make run" true 0 map[]`}},
		{name: "output is not run", text: fence + "\nmoebench run\n" + fence + "\n" + fence + "text\nmoebench x\n" + fence + "\n"},
		{name: "and", text: fence + "sh\nmake native && bin/moebench calibrate\n" + fence + "\n",
			want: []string{`2 "make native" true 0 map[]`, `2 "bin/moebench calibrate" false 0 map[]`}},
		{name: "job array", text: fence + "sh\n#!/bin/bash\n#SBATCH --array=2-5\nmoebench size --shard auto\n" + fence + "\n" + fence + "sh\nsbatch a.sbatch\nmoebench merge x\n" + fence + "\n",
			want: []string{`4 "moebench size --shard auto" false 4 map[SLURM_ARRAY_TASK_COUNT:4 SLURM_ARRAY_TASK_ID:3 SLURM_ARRAY_TASK_MIN:2]`, `8 "moebench merge x" false 0 map[]`}},
		{name: "indexed job", text: fence + "yaml\nspec:\n  completionMode: Indexed\n  completions: 3\n  args:\n    - >-\n      moebench size\n      --shard auto/3\n  other: 1\n" + fence + "\n",
			want: []string{`7 "moebench size --shard auto/3" false 3 map[JOB_COMPLETION_INDEX:1]`}},
		{name: "unknown line", text: fence + "sh\ncurl example.com\n" + fence + "\n", err: `"curl example.com": the test does not know how to run it`},
		{name: "unknown language", text: fence + "bash\nmoebench run\n" + fence + "\n", err: "a ```bash block"},
		{name: "script never submitted", text: fence + "sh\n#!/bin/bash\nmoebench run\n" + fence + "\n", err: "never submitted"},
		{name: "sbatch of nothing", text: fence + "sh\nsbatch a.sbatch\n" + fence + "\n", err: "submits no job script"},
		{name: "yaml command outside a scalar", text: fence + "yaml\ncommand: moebench run\n" + fence + "\n", err: "outside a folded"},
		{name: "bad array", text: fence + "sh\n#!/bin/bash\n#SBATCH --array=0-15%4\nmoebench run\n" + fence + "\nsbatch x\n", err: "arrays written A-B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := readmeCommands(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cmds {
				env := map[string]string{}
				if c.tasks > 1 {
					env = c.taskEnv(1, c.tasks)
				}
				got = append(got, fmt.Sprintf("%d %q %v %d %v", c.line, c.text, c.shell, c.tasks, env))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A size command's buffer limit must admit DeepEP's buffer of the shape as
// printed, which its scaled run cannot tell.
func TestREADMEBufferFits(t *testing.T) {
	t.Parallel()
	cluster := "size --workload deepseek-v3 --ranks 1024 --experts 1024 --tokens 128 --proxy-cores 4 --max-buffer-gib "
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{cluster + "4", false}, // 7.07 GiB
		{cluster + "8", true},
		{"size --ranks 32 --tokens 32 --max-buffer-gib 0.46", true}, // 0.438 GiB
		{"size --ranks 32 --tokens 32 --max-buffer-gib 0.4", false},
		{"size --mode normal --max-buffer-gib 0.01", true}, // normal mode's buffer is not DeepEP's LL hint
		{"sweep --max-buffer-gib 0.01", true},
	} {
		if err := bufferFits(strings.Fields(tc.args)); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

// Every example in run's, sweep's and size's --help passes every check of
// its configuration: run as printed with --max-memory 1MiB, only the memory
// budget refuses it (what it would model is not run here).
func TestHelpExamplesValid(t *testing.T) {
	t.Parallel()
	bin := moebenchBinary(t)
	env := map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4"}
	for _, name := range []string{"run", "sweep", "size"} {
		var help bytes.Buffer
		if err := run([]string{name, "--help"}, &help, &help); err != nil {
			t.Fatal(err)
		}
		_, examples, ok := strings.Cut(help.String(), "\nExamples:\n")
		if !ok {
			t.Fatalf("%s --help has no examples", name)
		}
		for l := range strings.Lines(examples) {
			if c := strings.Index(l, " #"); c >= 0 {
				l = l[:c]
			}
			for part := range strings.SplitSeq(l, "&&") {
				args := strings.Fields(os.Expand(part, func(v string) string { return env[v] }))
				if len(args) < 2 || args[0] != "moebench" || args[1] != name || needsNative(args[1:]) {
					continue
				}
				args = append(args[1:], "--max-memory", "1MiB")
				if code, stderr, _, _ := readmeRun(t, bin, t.TempDir(), env, args); code != 2 || !strings.Contains(stderr, "--max-memory 1MiB") {
					t.Errorf("%s --help: %s: exit %d, want 2 for memory alone: %s", name, strings.TrimSpace(part), code, stderr)
				}
			}
		}
	}
}
