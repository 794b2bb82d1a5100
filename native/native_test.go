package native

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"moebench/profile"
)

var (
	gpuOnce sync.Once
	gpuLib  *Lib
	gpuErr  error
)

// openGPU opens the built library once per test binary, or skips with the
// reason when it is not built or no GPU is present.
func openGPU(t *testing.T) *Lib {
	t.Helper()
	gpuOnce.Do(func() {
		path := DefaultPath()
		if !filepath.IsAbs(path) {
			// Tests run in native/; the default is relative to the repo root.
			path = filepath.Join("build", "libmoebench_native.so")
		}
		gpuLib, gpuErr = Open(path)
	})
	switch {
	case errors.Is(gpuErr, ErrLibraryNotLoaded):
		t.Skipf("native library not built (make native): skipping GPU measurements: %v", gpuErr)
	case errors.Is(gpuErr, ErrNoGPU):
		t.Skipf("no CUDA GPU: skipping GPU measurements: %v", gpuErr)
	case gpuErr != nil:
		t.Fatal(gpuErr)
	}
	return gpuLib
}

func TestOpenMissingLibrary(t *testing.T) {
	t.Parallel()
	_, err := Open(filepath.Join(t.TempDir(), "libmoebench_native.so"))
	if !errors.Is(err, ErrLibraryNotLoaded) {
		t.Fatalf("err = %v, want ErrLibraryNotLoaded", err)
	}
	if runtime.GOOS == "linux" && !strings.Contains(err.Error(), "make native") && !strings.Contains(err.Error(), "cgo") {
		t.Fatalf("error does not say how to fix it: %v", err)
	}
}

func TestOpenNotALibrary(t *testing.T) {
	t.Parallel()
	// A file that exists but is no shared object: ErrLibraryNotLoaded.
	_, err := Open("wqe.go")
	if !errors.Is(err, ErrLibraryNotLoaded) {
		t.Fatalf("err = %v, want ErrLibraryNotLoaded", err)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	for i, m := range OrderingModes {
		if c, err := orderingCode(m); err != nil || c != i {
			t.Errorf("orderingCode(%q) = %d, %v", m, c, err)
		}
	}
	if _, err := orderingCode("bogus"); err == nil {
		t.Error("unknown mode accepted")
	}
	for _, s := range []string{"host-mapped", "device"} {
		d, err := ParseDoorbellTarget(s)
		if err != nil || d.String() != s {
			t.Errorf("ParseDoorbellTarget(%q) = %v, %v", s, d, err)
		}
	}
	if CUDAVersion(13000) != "13.0" || CUDAVersion(12040) != "12.4" {
		t.Error("CUDAVersion")
	}
}

func TestGPUWQELayout(t *testing.T) {
	l := openGPU(t)
	n, err := l.VerifyWQEs()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d GPU-built WQEs decoded and matched field by field", n)
}

// The GPU builds EFA WQEs as DP Direct posts them, byte for byte as the
// host encoder does, and issues them under every ordering EFA can take.
func TestGPUEFAPosting(t *testing.T) {
	l := openGPU(t)
	n, err := l.VerifyEFAWQEs()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d GPU-built EFA WQEs matched byte for byte", n)
	for _, target := range []DoorbellTarget{HostMapped, DeviceMemory} {
		for _, mode := range append(EFAOrderingModes, NoDoorbell) {
			s, err := l.IssueWith(IssueConfig{Mode: mode, Target: target, Iters: 200, Warmup: 100, GapNs: 3000, Format: EFA})
			if err != nil {
				t.Fatalf("EFA %s %s: %v", mode, target, err)
			}
			if s.N != 200 || s.MedianNs <= 0 {
				t.Fatalf("EFA %s %s: implausible %+v", mode, target, s)
			}
			t.Logf("EFA %-12s %-11s %7.1f ns (%4.0f cycles)", mode, target, s.MedianNs, s.MedianCycles)
		}
	}
	if _, err := l.IssueWith(IssueConfig{Mode: "fenced-dbrec", Iters: 10, Format: EFA}); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("EFA fenced-dbrec: %v, want ErrBadArgument", err)
	}
}

func TestGPUIssue(t *testing.T) {
	l := openGPU(t)
	for _, target := range []DoorbellTarget{HostMapped, DeviceMemory} {
		for _, mode := range append(OrderingModes, NoDoorbell) {
			s, err := l.Issue(mode, target, 8, 200)
			if err != nil {
				t.Fatalf("%s %s: %v", mode, target, err)
			}
			if s.N != 200 || s.MedianNs <= 0 || s.ClockMHz < 100 {
				t.Fatalf("%s %s: implausible %+v", mode, target, s)
			}
			t.Logf("%-12s %-11s %7.1f ns (%4.0f cycles at %4.0f MHz; globaltimer %5.0f ns)", mode, target, s.MedianNs, s.MedianCycles, s.ClockMHz, s.MedianGTNs)
		}
	}
	if _, err := l.Issue("none", HostMapped, 7, 10); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("inline 7 B: %v, want ErrBadArgument", err)
	}
}

func TestGPURateProxyKernel(t *testing.T) {
	l := openGPU(t)
	if mhz, err := l.ClockMHz(20 * time.Millisecond); err != nil || mhz < 100 {
		t.Fatalf("clock %v %v", mhz, err)
	}
	m, err := l.Micro(1000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("micro %+v", m)
	for _, c := range []RateConfig{
		{Threads: 1, QPs: 1, Blocks: 1, PerDoorbell: 1, Style: "thread"},
		{Threads: 32, QPs: 1, Blocks: 1, PerDoorbell: 32, Style: "coop"},
		{Threads: 64, QPs: 1, Blocks: 1, PerDoorbell: 16, Style: "handoff"},
		{Threads: 32, QPs: 1, Blocks: 1, PerDoorbell: 1, Style: "lock"},
		{Threads: 64, QPs: 64, Blocks: 64, PerDoorbell: 16, Style: "thread", Target: DeviceMemory},
	} {
		c.WQEsPerThread = 64
		r, err := l.RateDetail(c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		t.Logf("rate %+v: %.2f Mmsg/s", c, r.Mps)
	}
	for _, v := range EnqueueVariants {
		e, err := l.Enqueue(v, 200)
		if err != nil {
			t.Fatalf("enqueue %s: %v", v, err)
		}
		r, err := l.HandoffRTT(v, 200)
		if err != nil {
			t.Fatalf("rtt %s: %v", v, err)
		}
		t.Logf("%s: enqueue %.0f ns, rtt %.0f ns, torn %d", v, e.Stats.MedianNs, r.Stats.MedianNs, e.Torn+r.Torn)
	}
	cp, err := l.WorkerCapacity(CapacityConfig{Workers: 2, Batch: 16, PerRing: 20000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capacity %+v", cp)
	for _, c := range []KernelConfig{
		{Caller: "compute", Path: "absent", Reps: 2},
		{Caller: "compute", Path: "gda", MsgsPerBlock: 4, Reps: 2},
		{Caller: "stream", Path: "proxy", MsgsPerBlock: 4, Wait: true, Reps: 2},
	} {
		k, err := l.KernelCost(c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		t.Logf("kernel %+v: %+v", c, k)
	}
}

func TestCommittedCalibrationParses(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "h200-calibration.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := profile.Parse("testdata/h200-calibration.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Constants) < 10 {
		t.Fatalf("only %d constants", len(f.Constants))
	}
}
