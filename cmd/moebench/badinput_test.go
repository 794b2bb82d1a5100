package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds every bad input must stay within: it is refused, not worked on.
const (
	badInputTime = 10 * time.Second
	badInputRSS  = 1 << 30 // bytes
)

// binary builds moebench once for the tests that run the real program.
var built struct {
	once sync.Once
	path string
	err  error
}

func moebenchBinary(t *testing.T) string {
	t.Helper()
	if raceOn {
		t.Skip("builds and runs the plain binary; nothing for the race detector")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "moebench-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "moebench")
		out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// TestMain removes the binary the bad-input tests built; run as a
// launcher (see runBinary), it only launches.
func TestMain(m *testing.M) {
	if bin := os.Getenv(launchBin); bin != "" {
		os.Exit(launch(bin, os.Args[1:]))
	}
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// ran is one run of the real binary.
type ran struct {
	code           int
	stdout, stderr string
	wall           time.Duration
	maxRSS         int64 // bytes
}

// Environment of a launcher: the binary it runs and the file it writes
// that binary's peak RSS to, in KiB.
const (
	launchBin = "MOEBENCH_TEST_LAUNCH"
	launchRSS = "MOEBENCH_TEST_LAUNCH_RSS"
)

// launch runs bin with args and this process's standard files, writes its
// peak RSS where launchRSS says, and returns its exit status.
func launch(bin string, args []string) int {
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, launchBin+"=") && !strings.HasPrefix(kv, launchRSS+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return 125
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		os.WriteFile(os.Getenv(launchRSS), fmt.Appendf(nil, "%d", ru.Maxrss), 0o644)
	}
	return cmd.ProcessState.ExitCode()
}

// runBinary runs moebench with args in dir, killing it at limit. A small
// launcher (this test binary again) starts it: a child started from the
// test process itself inherits that process's peak RSS as its own (Linux
// keeps the peak of the memory it replaced at exec, and Go starts children
// sharing its memory), which is this process's, often gigabytes, not the
// program's.
func runBinary(t *testing.T, dir string, limit time.Duration, args ...string) ran {
	t.Helper()
	bin := moebenchBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rssFile := filepath.Join(t.TempDir(), "rss")
	cmd := exec.CommandContext(ctx, self, args...)
	// The launcher and moebench are one process group, killed together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MOEBENCH_NATIVE_LIB="+filepath.Join(dir, "no-such-lib.so"),
		launchBin+"="+bin, launchRSS+"="+rssFile)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	r := ran{stdout: out.String(), stderr: errb.String(), wall: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("moebench %q: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("moebench %q: still running after %v (stderr: %.300s)", args, limit, r.stderr)
	}
	kib, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatalf("moebench %q: its launcher left no peak RSS: %v (stderr: %.300s)", args, err, r.stderr)
	}
	if _, err := fmt.Sscan(string(kib), &r.maxRSS); err != nil {
		t.Fatalf("moebench %q: peak RSS %q: %v", args, kib, err)
	}
	r.maxRSS *= 1024
	return r
}

// listDir names every file under dir, relative to it, with its mode and
// what tells its content apart or, for a link, its target: a run that changes a
// file, its permissions or a link shows as a changed entry.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		entry := fmt.Sprintf("%s %v", rel, info.Mode())
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			entry += " -> " + target
		case info.Mode().IsRegular():
			// Size, time and the first MiB: a file being written (a
			// run's temporary output) can grow faster than it is read.
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.CopyN(h, f, 1<<20)
			f.Close()
			if err != nil && err != io.EOF {
				return err
			}
			entry += fmt.Sprintf(" %d %d %x", info.Size(), info.ModTime().UnixNano(), h.Sum(nil))
		}
		names = append(names, entry)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// badInput is one hostile or mistaken invocation.
type badInput struct {
	name  string
	args  []string
	files map[string][]byte // written to the run's directory first
	// setup, when set, prepares the directory further after files:
	// modes, links, what a killed run left.
	setup func(dir string) error
	code  int    // 2: usage, 1: data or run error
	msg   string // the culprit the message must name
}

// TestBadInputs runs the real binary on inputs it must refuse: each is
// refused with the documented exit code and a message naming the culprit,
// without a Go stack trace, without leaving a file behind, within
// badInputTime and badInputRSS.
func TestBadInputs(t *testing.T) {
	t.Parallel()
	moebenchBinary(t)
	cases := badInputs()
	if len(cases) < 100 {
		t.Errorf("%d bad inputs, want at least 100", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("case %q twice", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				if err := tc.setup(dir); err != nil {
					t.Fatal(err)
				}
			}
			before := listDir(t, dir)
			r := runBinary(t, dir, badInputTime, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			for _, trace := range []string{"goroutine ", "panic:", "runtime error", ".go:"} {
				if strings.Contains(r.stderr, trace) {
					t.Errorf("stderr has a stack trace (%q):\n%.2000s", trace, r.stderr)
				}
			}
			if !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("stderr does not name %q:\n%s", tc.msg, r.stderr)
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 0 && !strings.HasPrefix(r.stderr, "Usage") {
				// One line of error; warnings may precede it.
				last := r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:]
				if !strings.HasPrefix(last, "moebench:") {
					t.Errorf("last stderr line %q is not moebench's error", last)
				}
			}
			if after := listDir(t, dir); !slices.Equal(before, after) {
				t.Errorf("files left behind: before %v, after %v", before, after)
			}
			if r.maxRSS > badInputRSS {
				t.Errorf("peak RSS %d MiB, over %d MiB", r.maxRSS>>20, badInputRSS>>20)
			}
		})
	}
}

// npy returns a .npy file of dtype with the given shape in its header and
// data bytes of payload.
func npy(dtype, shape string, data []byte) []byte {
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", dtype, shape)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	b.Write(data)
	return b.Bytes()
}

// npz returns a .npz (zip, stored) of one member.
func npz(name string, member []byte) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
	w.Write(member)
	z.Close()
	return b.Bytes()
}

// badInputs is every case: the first round's below, then each area of the
// second round's, kept in files of their own (badinput_*_test.go).
func badInputs() []badInput {
	var all []badInput
	for _, area := range [][]badInput{badInputsRoundOne(), badInputsSizes(), badInputsRefusals(), badInputsReads(), badInputsOutputs(), badInputsMechanisms(), badInputsDocs(), badInputsPlots(), badInputsMeasured(), badInputsNVFP4(), badInputsNICs(), badInputsDomains(), badInputsEFA(), badInputsLimits(), badInputsFaults(), badInputsCompute()} {
		all = append(all, area...)
	}
	return all
}

// fileOf is the files map of one file.
func fileOf(name, content string) map[string][]byte { return map[string][]byte{name: []byte(content)} }

func badInputsRoundOne() []badInput {
	f := fileOf
	const (
		jsonlHead = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n"
		profHead  = `{"name": "x", "base": "p-ib", "constants": [` + "\n"
	)
	return []badInput{
		// The command line itself.
		{name: "no command", args: nil, code: 2, msg: "no command given"},
		{name: "unknown command", args: []string{"runn"}, code: 2, msg: `"runn"`},
		{name: "help unknown command", args: []string{"help", "runn"}, code: 2, msg: `"runn"`},
		{name: "run unknown flag", args: []string{"run", "--tokenz", "8"}, code: 2, msg: "--tokenz"},
		{name: "run stray argument", args: []string{"run", "extra"}, code: 2, msg: "extra"},
		{name: "run tokens not a number", args: []string{"run", "--tokens", "many"}, code: 2, msg: "--tokens"},
		{name: "run tokens zero", args: []string{"run", "--tokens", "0"}, code: 2, msg: "--tokens"},
		{name: "run tokens negative", args: []string{"run", "--tokens", "-4"}, code: 2, msg: "--tokens"},
		{name: "run tokens list", args: []string{"run", "--tokens", "8,16"}, code: 2, msg: "--tokens"},
		{name: "run ranks zero", args: []string{"run", "--ranks", "0"}, code: 2, msg: "--ranks"},
		{name: "run ranks not whole nodes", args: []string{"run", "--ranks", "12", "--gpus-per-node", "8"}, code: 2, msg: "--ranks"},
		{name: "run gpus per node zero", args: []string{"run", "--gpus-per-node", "0"}, code: 2, msg: "--gpus-per-node"},
		{name: "run experts uneven", args: []string{"run", "--experts", "250"}, code: 2, msg: "--experts"},
		{name: "run experts beyond a channel each", args: []string{"run", "--ranks", "2", "--gpus-per-node", "1", "--experts", "140000", "--topk", "1", "--tokens", "1"}, code: 2, msg: "--experts: 70000 per rank"},
		{name: "run experts below topk", args: []string{"run", "--experts", "16", "--topk", "32", "--ranks", "16"}, code: 2, msg: "--topk"},
		{name: "run topk negative", args: []string{"run", "--topk", "-1"}, code: 2, msg: "--topk"},
		{name: "run hidden odd", args: []string{"run", "--hidden", "7"}, code: 2, msg: "--hidden"},
		{name: "run hidden negative", args: []string{"run", "--hidden", "-7168"}, code: 2, msg: "--hidden"},
		{name: "run dtype unknown", args: []string{"run", "--dispatch-dtype", "fp4"}, code: 2, msg: "--dispatch-dtype"},
		{name: "run mode unknown", args: []string{"run", "--mode", "fast"}, code: 2, msg: "--mode"},
		{name: "run workload unknown", args: []string{"run", "--workload", "gpt-5"}, code: 2, msg: "--workload"},
		{name: "run routing unknown", args: []string{"run", "--routing", "zipf:1"}, code: 2, msg: "--routing"},
		{name: "run routing powerlaw zero", args: []string{"run", "--routing", "powerlaw:0"}, code: 2, msg: "--routing"},
		{name: "run routing powerlaw NaN", args: []string{"run", "--routing", "powerlaw:NaN"}, code: 2, msg: "--routing"},
		{name: "run routing ratio below one", args: []string{"run", "--routing", "imbalanced-ranks:0.5"}, code: 2, msg: "--routing"},
		{name: "run routing hot too many", args: []string{"run", "--routing", "hot:1000:0.5"}, code: 2, msg: "hot experts"},
		{name: "run routing hot share", args: []string{"run", "--routing", "hot:8:2"}, code: 2, msg: "--routing"},
		{name: "run transport unknown", args: []string{"run", "--transport", "ucx"}, code: 2, msg: "--transport"},
		{name: "run transport empty", args: []string{"run", "--transport", ","}, code: 2, msg: "--transport"},
		{name: "run preset unknown", args: []string{"run", "--preset", "ibgda"}, code: 2, msg: "--preset"},
		{name: "run transport direct in the model", args: []string{"run", "--transport", "direct"}, code: 2, msg: "--transport direct"},
		{name: "run qps negative", args: []string{"run", "--qps-per-peer", "-1"}, code: 2, msg: "--qps-per-peer"},
		{name: "run dcis zero", args: []string{"run", "--dcis", "0", "--transport", "dc"}, code: 2, msg: "--dcis"},
		{name: "run workers zero", args: []string{"run", "--workers", "0"}, code: 2, msg: "--workers"},
		{name: "run workers more than rings", args: []string{"run", "--workers", "100000", "--transport", "mini-proxy"}, code: 2, msg: "workers"},
		{name: "run batch too deep", args: []string{"run", "--batch", "1000", "--transport", "mini-proxy"}, code: 2, msg: "chain of 1000"},
		{name: "run batch out of range", args: []string{"run", "--batch", "100000", "--transport", "mini-proxy"}, code: 2, msg: "--batch 100000"},
		{name: "run ordering unknown", args: []string{"run", "--ordering", "relaxed"}, code: 2, msg: "--ordering"},
		{name: "run ordering none", args: []string{"run", "--ordering", "none"}, code: 2, msg: "--ordering"},
		{name: "run num-sms negative", args: []string{"run", "--num-sms", "-1"}, code: 2, msg: "--num-sms"},
		{name: "run num-sms above the GPU", args: []string{"run", "--num-sms", "100000"}, code: 2, msg: "--num-sms"},
		{name: "run chunk in ll mode", args: []string{"run", "--chunk", "32"}, code: 2, msg: "--chunk"},
		{name: "run chunk negative", args: []string{"run", "--chunk", "-1"}, code: 2, msg: "--chunk"},
		{name: "run background unknown", args: []string{"run", "--background", "noise"}, code: 2, msg: "--background"},
		{name: "run background too many CTAs", args: []string{"run", "--background", "bulk:100000"}, code: 2, msg: "--background"},
		{name: "run background bad size", args: []string{"run", "--background", "bulk:1:shared:0"}, code: 2, msg: "--background"},
		{name: "run seed negative", args: []string{"run", "--seed", "-1"}, code: 2, msg: "--seed"},
		{name: "run format unknown", args: []string{"run", "--format", "xml"}, code: 2, msg: "xml"},
		{name: "run log level unknown", args: []string{"run", "--log-level", "loud"}, code: 2, msg: "--log-level"},
		{name: "run engine unknown", args: []string{"run", "--engine", "fpga"}, code: 2, msg: "--engine"},
		{name: "run native flag in the model", args: []string{"run", "--reps", "3"}, code: 2, msg: "--reps"},
		{name: "run native without library", args: []string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "mini-gda"}, code: 1, msg: "no-such-lib.so"},
		{name: "run native without GPUs", args: []string{"run", "--engine", "native", "--transport", "mini-gda"}, code: 2, msg: "--gpus"},
		{name: "run groups on the native engine", args: []string{"run", "--engine", "native", "--topk-groups", "2"}, code: 2, msg: "--topk-groups"},
		{name: "run topk-groups above groups", args: []string{"run", "--topk-groups", "9"}, code: 2, msg: "--topk-groups"},
		{name: "run expert-groups uneven", args: []string{"run", "--expert-groups", "7", "--topk-groups", "2"}, code: 2, msg: "7"},
		{name: "run profile unknown", args: []string{"run", "--profile", "p-xyz"}, code: 2, msg: "p-xyz"},
		{name: "run profile empty", args: []string{"run", "--profile", ""}, code: 2, msg: "--profile"},
		{name: "run set without value", args: []string{"run", "--set", "gpu.sm_clock_mhz"}, code: 2, msg: "gpu.sm_clock_mhz"},
		{name: "run set unknown constant", args: []string{"run", "--set", "gpu.sm_clock=1500"}, code: 2, msg: "gpu.sm_clock"},
		{name: "run set out of range", args: []string{"run", "--set", "gpu.sm_clock_mhz=1"}, code: 2, msg: "gpu.sm_clock_mhz"},
		{name: "run set not a number", args: []string{"run", "--set", "gpu.sm_clock_mhz=fast"}, code: 2, msg: "gpu.sm_clock_mhz"},
		{name: "run set twice", args: []string{"run", "--set", "gpu.sm_clock_mhz=1500", "--set", "gpu.sm_clock_mhz=1600"}, code: 2, msg: "already set"},
		{name: "run set unread constant", args: []string{"run", "--tokens", "1", "--transport", "mini-gda", "--set", "proxy.base_publish_ns=1"}, code: 2, msg: "proxy.base_publish_ns"},
		{name: "run topk zero", args: []string{"run", "--topk", "0"}, code: 2, msg: "--topk"},
		{name: "run hidden zero", args: []string{"run", "--hidden", "0"}, code: 2, msg: "--hidden"},
		{name: "run set list", args: []string{"run", "--set", "gpu.sm_clock_mhz=1500,1970"}, code: 2, msg: "gpu.sm_clock_mhz"},
		{name: "run plot bad extension", args: []string{"run", "--plot", "p.gif"}, code: 2, msg: "p.gif"},
		{name: "run shard on run", args: []string{"run", "--shard", "1/2"}, code: 2, msg: "--shard"},
		{name: "run out into a missing directory", args: []string{"run", "--tokens", "1", "--out", "no/such/dir/r.json"}, code: 2, msg: "no/such/dir/r.json"},
		{name: "run out is a directory", args: []string{"run", "--tokens", "1", "--out", "."}, code: 2, msg: "is a directory"},
		{name: "run plot into a missing directory", args: []string{"run", "--plot", "no/p.svg"}, code: 2, msg: "no/p.svg"},
		{name: "sweep out into a missing directory", args: []string{"sweep", "--out", "no/s.json"}, code: 2, msg: "no/s.json"},
		{name: "size out into a missing directory", args: []string{"size", "--out", "no/s.json"}, code: 2, msg: "no/s.json"},
		{name: "validate out into a missing directory", args: []string{"validate", "--out", "no/v.csv"}, code: 2, msg: "no/v.csv"},
		{name: "trace gen out into a missing directory", args: []string{"trace", "gen", "--out", "no/t.bin"}, code: 2, msg: "no/t.bin"},
		{name: "trace convert out into a missing directory", args: []string{"trace", "convert", "a.jsonl", "--out", "no/t.bin"}, files: f("a.jsonl", jsonlHead), code: 2, msg: "no/t.bin"},
		{name: "calibrate raw into a missing directory", args: []string{"calibrate", "--raw", "no/raw.json"}, code: 2, msg: "no/raw.json"},

		// Cost before work: refused from the estimate, in well under a second.
		{name: "run a million ranks", args: []string{"run", "--ranks", "1000000", "--experts", "1000000"}, code: 2, msg: "would need about"},
		{name: "run a hundred thousand rings", args: []string{"run", "--rings", "100000", "--transport", "mini-proxy"}, code: 2, msg: "--rings 100000"},
		{name: "run over max-memory", args: []string{"run", "--max-memory", "10MB"}, code: 2, msg: "--max-memory 10MB"},
		{name: "run max-memory not a size", args: []string{"run", "--max-memory", "lots"}, code: 2, msg: "--max-memory"},
		{name: "run max-memory unknown unit", args: []string{"run", "--max-memory", "3parsecs"}, code: 2, msg: "parsecs"},
		{name: "sweep one point too big", args: []string{"sweep", "--ranks", "16,1048576", "--experts", "1048576", "--gpus-per-node", "8"}, code: 2, msg: "EP1048576"},
		{name: "size a million ranks", args: []string{"size", "--ranks", "1000000", "--experts", "1000000"}, code: 2, msg: "would need about"},
		{name: "size over max-memory", args: []string{"size", "--max-memory", "1KiB"}, code: 2, msg: "--max-memory 1KiB"},
		{name: "trace convert npz declaring 2^28 x 8 ids", args: []string{"trace", "convert", "a.npz", "--out", "t.bin"},
			files: map[string][]byte{"a.npz": npz("topk_ids.npy", npy("<i8", "(268435456, 8)", nil))}, code: 1, msg: "too many elements"},
		{name: "trace convert npz over max-memory", args: []string{"trace", "convert", "a.npz", "--max-memory", "100MB", "--out", "t.bin"},
			files: map[string][]byte{"a.npz": npz("topk_ids.npy", npy("<i8", "(16777216, 8)", nil))}, code: 2, msg: "--max-memory"},
		{name: "replay npy over max-memory", args: []string{"replay", "--trace", "a.npy", "--max-memory", "100MB"},
			files: map[string][]byte{"a.npy": npy("<i8", "(4, 4194304, 8)", nil)}, code: 2, msg: "--max-memory"},
		{name: "replay npy declaring more than it holds", args: []string{"replay", "--trace", "a.npy"},
			files: map[string][]byte{"a.npy": npy("<i8", "(4, 4194304, 8)", nil)}, code: 1, msg: "the file holds"},

		// sweep
		{name: "sweep tokens bad item", args: []string{"sweep", "--tokens", "8,x"}, code: 2, msg: "--tokens"},
		{name: "sweep ranks bad item", args: []string{"sweep", "--ranks", "16,12"}, code: 2, msg: "--ranks"},
		{name: "sweep set bad item", args: []string{"sweep", "--set", "gpu.sm_clock_mhz=1500,1"}, code: 2, msg: "gpu.sm_clock_mhz"},
		{name: "sweep shard malformed", args: []string{"sweep", "--shard", "3/2"}, code: 2, msg: "--shard"},
		{name: "sweep shard zero", args: []string{"sweep", "--shard", "0/0"}, code: 2, msg: "--shard"},
		{name: "sweep mode bad item", args: []string{"sweep", "--mode", "ll,fast"}, code: 2, msg: "--mode"},

		// size
		{name: "size tokens zero", args: []string{"size", "--tokens", "0"}, code: 2, msg: "--tokens"},
		{name: "size routing bad", args: []string{"size", "--routing", "powerlaw"}, code: 2, msg: "--routing"},
		{name: "size topk zero", args: []string{"size", "--topk", "0"}, code: 2, msg: "--topk"},
		{name: "size hidden zero", args: []string{"size", "--hidden", "0"}, code: 2, msg: "--hidden"},
		{name: "size set twice", args: []string{"size", "--set", "gpu.sms=100", "--set", "gpu.sms=120"}, code: 2, msg: "already set"},
		{name: "size tolerance negative", args: []string{"size", "--tolerance", "-1"}, code: 2, msg: "--tolerance"},
		{name: "size jobs negative", args: []string{"size", "--jobs", "-2"}, code: 2, msg: "--jobs"},
		{name: "size mode list", args: []string{"size", "--mode", "ll,normal"}, code: 2, msg: "--mode"},
		{name: "size unknown preset", args: []string{"size", "--preset", "nope"}, code: 2, msg: "nope"},

		// merge and report
		{name: "merge no shards", args: []string{"merge"}, code: 2, msg: "merge"},
		{name: "merge missing shard", args: []string{"merge", "nope.json"}, code: 1, msg: "nope.json"},
		{name: "merge not JSON", args: []string{"merge", "a.json"}, files: f("a.json", "not json"), code: 1, msg: "a.json"},
		{name: "merge empty shard", args: []string{"merge", "a.json"}, files: f("a.json", ""), code: 1, msg: "a.json"},
		{name: "merge format unknown", args: []string{"merge", "--format", "xml", "a.json"}, files: f("a.json", "{}"), code: 2, msg: "xml"},
		{name: "report no inputs", args: []string{"report"}, code: 2, msg: "report"},
		{name: "report missing input", args: []string{"report", "nope.json"}, code: 1, msg: "nope.json"},
		{name: "report not JSON", args: []string{"report", "r.json"}, files: f("r.json", "[1,2"), code: 1, msg: "r.json"},

		// replay
		{name: "replay without trace", args: []string{"replay"}, code: 2, msg: "--trace"},
		{name: "replay missing trace", args: []string{"replay", "--trace", "nope.bin"}, code: 1, msg: "nope.bin"},
		{name: "replay empty trace", args: []string{"replay", "--trace", "t.jsonl"}, files: f("t.jsonl", ""), code: 1, msg: "t.jsonl"},
		{name: "replay garbage trace", args: []string{"replay", "--trace", "t.bin"}, files: f("t.bin", "\x89MOETRC\nxx"), code: 1, msg: "t.bin"},
		{name: "replay duplicate expert", args: []string{"replay", "--trace", "t.jsonl"},
			files: f("t.jsonl", jsonlHead+`{"step":0,"layer":0,"rank":0,"topk_idx":[[1,1]]}`+"\n"), code: 1, msg: "t.jsonl:2"},
		{name: "replay expert out of range", args: []string{"replay", "--trace", "t.jsonl"},
			files: f("t.jsonl", jsonlHead+`{"step":0,"layer":0,"rank":0,"topk_idx":[[1,9]]}`+"\n"), code: 1, msg: "t.jsonl:2"},
		{name: "replay ranks not whole nodes", args: []string{"replay", "--trace", "t.jsonl"},
			files: f("t.jsonl", `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":4,"gpus_per_node":3}`+"\n"), code: 1, msg: "gpus_per_node"},
		{name: "replay qps negative", args: []string{"replay", "--trace", "t.jsonl", "--qps-per-peer", "-1"},
			files: f("t.jsonl", jsonlHead+`{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2]]}`+"\n"), code: 2, msg: "--qps-per-peer"},
		{name: "replay steps negative", args: []string{"replay", "--trace", "t.jsonl", "--steps", "-1"},
			files: f("t.jsonl", jsonlHead), code: 2, msg: "--steps"},
		{name: "replay layout unknown", args: []string{"replay", "--trace", "t.npy", "--layout", "sideways"},
			files: map[string][]byte{"t.npy": npy("<i8", "(2, 2)", make([]byte, 32))}, code: 2, msg: "--layout"},
		{name: "replay npy bad magic", args: []string{"replay", "--trace", "t.npy"}, files: f("t.npy", "NUMPY"), code: 1, msg: "t.npy"},

		// trace gen, convert, inspect
		{name: "trace no subcommand", args: []string{"trace"}, code: 2, msg: "subcommand"},
		{name: "trace unknown subcommand", args: []string{"trace", "make"}, code: 2, msg: `"make"`},
		{name: "trace gen without out", args: []string{"trace", "gen"}, code: 2, msg: "--out"},
		{name: "trace gen routing powerlaw zero", args: []string{"trace", "gen", "--routing", "powerlaw:0", "--out", "t.bin"}, code: 2, msg: "--routing"},
		{name: "trace gen routing unknown", args: []string{"trace", "gen", "--routing", "zipf", "--out", "t.bin"}, code: 2, msg: "--routing"},
		{name: "trace gen hot too many", args: []string{"trace", "gen", "--routing", "hot:300:0.5", "--out", "t.bin"}, code: 2, msg: "hot experts"},
		{name: "trace gen tokens zero", args: []string{"trace", "gen", "--tokens", "0", "--out", "t.bin"}, code: 2, msg: "--tokens"},
		{name: "trace gen ranks not whole nodes", args: []string{"trace", "gen", "--ranks", "12", "--gpus-per-node", "8", "--out", "t.bin"}, code: 2, msg: "--ranks"},
		{name: "trace gen topk above experts", args: []string{"trace", "gen", "--topk", "300", "--out", "t.bin"}, code: 2, msg: "--topk"},
		{name: "trace gen drift above one", args: []string{"trace", "gen", "--drift", "2", "--out", "t.bin"}, code: 2, msg: "drift"},
		{name: "trace gen larger than the disk", args: []string{"trace", "gen", "--steps", "100000000", "--layers", "61", "--ranks", "256", "--out", "t.bin"}, code: 2, msg: "would write about"},
		{name: "trace gen binary to stdout", args: []string{"trace", "gen", "--format", "bin", "--out", "-"}, code: 2, msg: "--out"},
		{name: "trace gen format unknown", args: []string{"trace", "gen", "--format", "csv", "--out", "t.bin"}, code: 2, msg: "--format"},
		{name: "trace convert no input", args: []string{"trace", "convert", "--out", "t.bin"}, code: 2, msg: "input"},
		{name: "trace convert no out", args: []string{"trace", "convert", "a.jsonl"}, code: 2, msg: "--out"},
		{name: "trace convert from unknown", args: []string{"trace", "convert", "--from", "parquet", "a", "--out", "t.bin"}, code: 2, msg: "--from"},
		{name: "trace convert missing input", args: []string{"trace", "convert", "nope.npz", "--out", "t.bin"}, code: 1, msg: "nope.npz"},
		{name: "trace convert duplicate expert", args: []string{"trace", "convert", "a.jsonl", "--out", "t.bin"},
			files: f("a.jsonl", jsonlHead+`{"step":0,"layer":0,"rank":0,"topk_idx":[[3,3]]}`+"\n"), code: 1, msg: "a.jsonl:2"},
		{name: "trace convert npy truncated", args: []string{"trace", "convert", "a.npy", "--out", "t.bin"},
			files: map[string][]byte{"a.npy": npy("<i8", "(4, 2)", make([]byte, 16))}, code: 1, msg: "a.npy"},
		{name: "trace convert npy float ids", args: []string{"trace", "convert", "a.npy", "--out", "t.bin"},
			files: map[string][]byte{"a.npy": npy("<f4", "(2, 2)", make([]byte, 16))}, code: 1, msg: "a.npy"},
		{name: "trace convert npy huge shape", args: []string{"trace", "convert", "a.npy", "--out", "t.bin"},
			files: map[string][]byte{"a.npy": npy("<i8", "(268435456, 8)", nil)}, code: 1, msg: "a.npy"},
		{name: "trace convert counts without topk", args: []string{"trace", "convert", "--from", "eplb", "w.csv", "--out", "t.bin"},
			files: f("w.csv", "1,2\n3,4\n"), code: 2, msg: "--topk"},
		{name: "trace inspect two files", args: []string{"trace", "inspect", "a", "b"}, code: 2, msg: "one file"},
		{name: "trace inspect missing", args: []string{"trace", "inspect", "nope.bin"}, code: 1, msg: "nope.bin"},
		{name: "trace inspect bad header", args: []string{"trace", "inspect", "a.jsonl"},
			files: f("a.jsonl", `{"format":"moebench-trace","version":2,"id_space":"logical","experts":8,"top_k":2,"layers":1}`+"\n"), code: 1, msg: "a.jsonl"},
		{name: "trace inspect duplicate expert", args: []string{"trace", "inspect", "a.jsonl"},
			files: f("a.jsonl", jsonlHead+`{"step":0,"layer":0,"rank":0,"topk_idx":[[5,5]]}`+"\n"), code: 1, msg: "a.jsonl:2"},
		{name: "trace inspect format unknown", args: []string{"trace", "inspect", "--format", "csv", "a"}, code: 2, msg: "--format"},

		// mech, validate, profile, calibrate
		{name: "mech set unread constant", args: []string{"mech", "single-op", "--set", "proxy.base_publish_ns=1"}, code: 2, msg: "proxy.base_publish_ns"},
		{name: "mech unknown experiment", args: []string{"mech", "warp-speed"}, code: 2, msg: "warp-speed"},
		{name: "mech threads zero", args: []string{"mech", "rate", "--threads", "0"}, code: 2, msg: "threads"},
		{name: "mech threads beyond the model", args: []string{"mech", "rate", "--threads", "2000000"}, code: 2, msg: "more than the 1048576"},
		{name: "mech style unknown", args: []string{"mech", "rate", "--style", "magic"}, code: 2, msg: "magic"},
		{name: "mech ordering unknown", args: []string{"mech", "single", "--ordering", "relaxed"}, code: 2, msg: "relaxed"},
		{name: "mech payload negative", args: []string{"mech", "single", "--payload", "-8"}, code: 2, msg: "--payload"},
		{name: "mech inline payload beyond a WQE", args: []string{"mech", "single", "--payload", "5000000"}, code: 2, msg: "--payload: 5000000 B inline"},
		{name: "mech rate inline payload beyond a WQE", args: []string{"mech", "rate", "--payload", "5000000"}, code: 2, msg: "5000000 B inline"},
		{name: "validate unknown experiment", args: []string{"validate", "--only", "fig99"}, code: 2, msg: "fig99"},
		{name: "validate measured missing", args: []string{"validate", "--measured", "nope.json"}, code: 1, msg: "nope.json"},
		{name: "validate measured not JSON", args: []string{"validate", "--measured", "m.json"}, files: f("m.json", "{"), code: 1, msg: "m.json"},
		{name: "validate measured empty", args: []string{"validate", "--measured", "m.json"}, files: f("m.json", ""), code: 1, msg: "m.json"},
		{name: "validate fail-above NaN", args: []string{"validate", "--fail-above", "NaN"}, code: 2, msg: "--fail-above"},
		{name: "validate fail-above negative", args: []string{"validate", "--fail-above", "-0.1"}, code: 2, msg: "--fail-above"},
		{name: "validate fail-above infinite", args: []string{"validate", "--fail-above", "inf"}, code: 2, msg: "--fail-above"},
		{name: "validate against unknown", args: []string{"validate", "--against", "folklore"}, code: 2, msg: "--against"},
		{name: "profile unknown", args: []string{"profile", "p-xyz"}, code: 2, msg: "p-xyz"},
		{name: "profile two profiles", args: []string{"profile", "p-ib", "p-roce"}, code: 2, msg: "at most one"},
		{name: "profile set unknown constant", args: []string{"profile", "p-ib", "--set", "foo=1"}, code: 2, msg: "foo"},
		{name: "profile set without a profile", args: []string{"profile", "--set", "gpu.sms=100"}, code: 2, msg: "--set"},
		{name: "profile set with list", args: []string{"profile", "--list", "--set", "gpu.sms=100"}, code: 2, msg: "--set"},
		{name: "profile file without value", args: []string{"run", "--profile", "p.json"}, files: f("p.json", profHead+`{"name": "gpu.sm_clock_mhz", "source": "s"}`+"\n]}"), code: 1, msg: "p.json:2: constant gpu.sm_clock_mhz has no value"},
		{name: "profile file syntax error", args: []string{"run", "--profile", "p.json"}, files: f("p.json", profHead+`{"name": "gpu.sm_clock_mhz", "value": 1500,}`+"\n]}"), code: 1, msg: "p.json:2"},
		{name: "profile file unknown constant", args: []string{"run", "--profile", "p.json"}, files: f("p.json", profHead+`{"name": "gpu.clock", "value": 1500, "source": "s"}`+"\n]}"), code: 1, msg: "gpu.clock"},
		{name: "profile file without source", args: []string{"run", "--profile", "p.json"}, files: f("p.json", profHead+`{"name": "gpu.sm_clock_mhz", "value": 1500}`+"\n]}"), code: 1, msg: "source"},
		{name: "profile file constant twice", args: []string{"run", "--profile", "p.json"},
			files: f("p.json", profHead+`{"name": "gpu.sm_clock_mhz", "value": 1500, "source": "s"},`+"\n"+`{"name": "gpu.sm_clock_mhz", "value": 1600, "source": "s"}`+"\n]}"), code: 1, msg: "set twice"},
		{name: "profile file unknown field", args: []string{"run", "--profile", "p.json"}, files: f("p.json", `{"name": "x", "colour": "red"}`), code: 1, msg: "colour"},
		{name: "profile file base loop", args: []string{"run", "--profile", "p.json"}, files: f("p.json", `{"name": "x", "base": "p.json"}`), code: 1, msg: "p.json"},
		{name: "profile file incomplete", args: []string{"run", "--profile", "p.json"}, files: f("p.json", `{"name": "x", "constants": []}`), code: 1, msg: "missing constants"},
		{name: "calibrate raw missing", args: []string{"calibrate", "--from-raw", "nope.json"}, code: 1, msg: "nope.json"},
		{name: "calibrate raw not JSON", args: []string{"calibrate", "--from-raw", "r.json"}, files: f("r.json", "{"), code: 1, msg: "r.json"},
		{name: "calibrate base unknown", args: []string{"calibrate", "--base", "p-xyz", "--from-raw", "r.json"}, files: f("r.json", "{}"), code: 2, msg: "--base"},
		{name: "calibrate grid unknown", args: []string{"calibrate", "--layer", "--grid", "most"}, code: 2, msg: "--grid"},
		{name: "calibrate grid without layer", args: []string{"calibrate", "--grid", "ll"}, code: 2, msg: "--grid"},
		{name: "calibrate layer raw list with a missing file", args: []string{"calibrate", "--layer", "--from-raw", "r.json,nope.json"}, files: f("r.json", "{}"), code: 1, msg: "r.json"},
		{name: "run nccl in the model", args: []string{"run", "--transport", "nccl-a2a"}, code: 2, msg: "nccl-a2a"},
		{name: "run nccl without a layer path", args: []string{"run", "--engine", "native", "--gpus", "2", "--transport", "nccl-a2a"}, code: 2, msg: "nccl-a2a"},
		{name: "run nccl on virtual ranks", args: []string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "direct,nccl-a2a"}, code: 2, msg: "one rank per GPU, not 2 on each"},
		{name: "run nccl-lib in the model", args: []string{"run", "--nccl-lib", "x.so"}, code: 2, msg: "--nccl-lib"},
		{name: "calibrate iters out of range", args: []string{"calibrate", "--iters", "5"}, code: 2, msg: "--iters"},
		{name: "calibrate without library", args: []string{"calibrate", "--quick"}, code: 1, msg: "no-such-lib.so"},
		{name: "version with argument", args: []string{"version", "--json"}, code: 2, msg: "version"},
		{name: "help of two commands", args: []string{"help", "run", "sweep"}, code: 2, msg: "help takes one command"},
		{name: "help with a flag", args: []string{"--help", "run"}, code: 2, msg: "--help"},
	}
}

// Every command's --help is on stdout, once, exits 0, and -h and
// moebench help CMD print the same.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	cmds := [][]string{{"trace", "gen"}, {"trace", "convert"}, {"trace", "inspect"}}
	for _, c := range commands() {
		cmds = append(cmds, []string{c.name})
	}
	for _, c := range cmds {
		t.Run(strings.Join(c, " "), func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if err := run(append(slices.Clone(c), "--help"), &out, &errb); err != nil {
				t.Fatalf("--help: %v", err)
			}
			if out.Len() == 0 || errb.Len() != 0 || !strings.HasPrefix(out.String(), "Usage") {
				t.Fatalf("--help: stdout %.200q, stderr %.200q", out.String(), errb.String())
			}
			if n := strings.Count(out.String(), "Usage: moebench"); n != 1 {
				t.Errorf("--help prints its usage %d times, want once", n)
			}
			var short bytes.Buffer
			if err := run(append(slices.Clone(c), "-h"), &short, io.Discard); err != nil || short.String() != out.String() {
				t.Errorf("-h differs from --help (error %v)", err)
			}
			var viaHelp bytes.Buffer
			if err := run(append([]string{"help"}, c...), &viaHelp, io.Discard); err != nil {
				t.Fatalf("help %v: %v", c, err)
			}
			if viaHelp.String() != out.String() {
				t.Errorf("moebench help %s differs from --help", strings.Join(c, " "))
			}
		})
	}
}
