package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/native"
	nativelayer "moebench/native/layer"
)

// fakeLib stands in for the native library: it checks the configuration
// as the library would and answers with timings that follow the shape, so
// the CLI's planning, model beside it and rendering run without a GPU.
type fakeLib struct {
	gpus   int  // GPUs on the host (0: one)
	noNCCL bool // NCCL cannot be loaded
	a2a    []native.A2AConfig
	calls  []native.LayerConfig
	fail   error // returned by Layer when set
	bad    bool  // report verification problems
}

func (f *fakeLib) Device() native.DeviceInfo {
	return native.DeviceInfo{Name: "NVIDIA H200", Driver: "580.159.04", CUDADriver: 13000, CUDARuntime: 13000, SMs: 132, CCMajor: 9}
}

func (f *fakeLib) DeviceCount() (int, error) { return max(1, f.gpus), nil }

// NCCLAllToAll answers with the bytes' time at 400 GB/s per GPU.
func (f *fakeLib) NCCLAllToAll(c native.A2AConfig) (native.A2AResult, error) {
	if f.noNCCL {
		return native.A2AResult{}, fmt.Errorf("native: NCCL: cannot load libnccl.so.2")
	}
	f.a2a = append(f.a2a, c)
	var most int64
	for s, row := range c.Bytes {
		var in int64
		for d := range row {
			in += c.Bytes[d][s]
		}
		most = max(most, in)
	}
	us := 5 + float64(most)/400e3
	return native.A2AResult{MeanUs: us, MinUs: us * 0.98, MaxUs: us * 1.03, Version: 22803, Lib: "libnccl.so.2"}, nil
}

func (f *fakeLib) Layer(c native.LayerConfig, rt native.LayerRouting) (native.LayerResult, error) {
	f.calls = append(f.calls, c)
	if f.fail != nil {
		return native.LayerResult{}, f.fail
	}
	if len(rt.TopK) != c.Ranks*c.Tokens*c.TopK {
		return native.LayerResult{}, fmt.Errorf("fake: %d ids for %d×%d×%d", len(rt.TopK), c.Ranks, c.Tokens, c.TopK)
	}
	res := native.LayerResult{WarpGroups: 18, WarpsPerGroup: 1, Workers: min(c.Workers, 14/c.Ranks+1), NICQueues: c.Ranks * c.Ranks,
		WQEs: int64(c.Reps * c.Ranks * c.Tokens * c.TopK * 2), Doorbells: int64(c.Reps * 100), BufferBytes: 1 << 30, ClockMHz: 1980}
	if c.Verify {
		res.Checked = int64((c.Warmup + c.Reps) * c.Ranks * c.Tokens * (c.TopK + 1))
	}
	res.Times = make([][2][]native.RankPhase, c.Reps)
	base := 10e3 + 400*float64(c.Tokens*c.Ranks)/float64(c.SMsPerRank)
	if c.Path != native.PathDirect {
		base *= 3
	}
	for rep := range res.Times {
		for ph := range 2 {
			row := make([]native.RankPhase, c.Ranks)
			for r := range row {
				ready := base * (1 + 0.3*float64(ph)) * (1 + 0.01*float64(r) + 0.002*float64(rep))
				row[r] = native.RankPhase{IssueDoneNs: ready * 0.3, SendDoneNs: ready * 0.35, WaitDoneNs: ready * 0.8, ReadyNs: ready,
					KernelNs: ready + 5e3, PostNs: 900 * float64(c.Tokens*c.TopK), Posts: int64(c.Tokens * c.TopK), Copies: 4}
			}
			res.Times[rep][ph] = row
		}
	}
	if f.bad {
		res.Problems, res.Problem = 3, "dispatch: rank 1: 5 tokens from rank 0 for local expert 2, want 6"
		return res, fmt.Errorf("native layer: %w: 3 problems", native.ErrCheck)
	}
	return res, nil
}

func withFakeLib(t *testing.T, f *fakeLib) {
	t.Helper()
	old := openNativeLib
	openNativeLib = func(string) (nativelayer.Runner, error) { return f, nil }
	t.Cleanup(func() { openNativeLib = old })
}

// The native engine runs every transport with the model beside it and
// renders the same table in every format.
func TestNativeRun(t *testing.T) {
	f := &fakeLib{}
	withFakeLib(t, f)
	var out, errb bytes.Buffer
	err := run([]string{"run", "--engine", "native", "--virtual-ranks", "8", "--transport", "mini-gda,mini-proxy,dc,direct", "--tokens", "16"}, &out, &errb)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if len(f.calls) != 4 {
		t.Fatalf("%d native runs, want 4", len(f.calls))
	}
	want := map[native.LayerPath]bool{native.PathGDA: true, native.PathProxy: true, native.PathDC: true, native.PathDirect: true}
	for _, c := range f.calls {
		if !want[c.Path] {
			t.Errorf("unexpected path %v", c.Path)
		}
		delete(want, c.Path)
		if c.Ranks != 8 || c.GPUs != 1 || c.SMsPerRank != 16 || !c.Verify || c.Reps != nativelayer.DefaultReps {
			t.Errorf("%v: %d ranks on %d GPUs, %d SMs each, verify %v, %d reps", c.Path, c.Ranks, c.GPUs, c.SMsPerRank, c.Verify, c.Reps)
		}
		switch c.Path {
		case native.PathGDA:
			if c.QPsPerPeer != 32 || c.Ordering != "gpu-fence" || c.NICSMs != nativelayer.DefaultNICSMs {
				t.Errorf("mini-gda: %d QPs per peer, ordering %s, %d NIC SMs", c.QPsPerPeer, c.Ordering, c.NICSMs)
			}
		case native.PathDirect:
			if c.NICSMs != 0 {
				t.Errorf("direct: %d NIC SMs, want none", c.NICSMs)
			}
		case native.PathProxy:
			if c.Workers != 4 || c.Rings != 32 || c.Batch != 16 || c.Handoff != "baseline" {
				t.Errorf("mini-proxy: T%d/R%d/B%d %s", c.Workers, c.Rings, c.Batch, c.Handoff)
			}
		}
	}
	s := out.String()
	for _, w := range []string{"measured on NVIDIA H200", "8 virtual ranks on 1 GPU, 16 SMs each", "model/measured", "emulated NIC on 4 SMs per GPU",
		"none (direct stores)", "Measured timeline", "Per rank", "yes (", "the emulated NIC's constants are assumptions"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	golden(t, "run_native_fake.txt", stripHeader(s))

	out.Reset()
	if err := run([]string{"run", "--engine", "native", "--virtual-ranks", "4", "--transport", "mini-gda", "--format", "json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Results[0]
	for _, k := range []string{"engine", "nic", "placement", "measured", "model", "native", "dispatch", "combine", "correct"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON result lacks %q", k)
		}
	}
	if r["engine"] != "native" {
		t.Errorf("engine = %v", r["engine"])
	}
	disp := r["dispatch"].(map[string]any)
	if _, ok := disp["ranks"]; !ok {
		t.Error("dispatch lacks per-rank timings")
	}
	out.Reset()
	if err := run([]string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "dc", "--format", "csv",
		"--profile", "p-ib,../../native/testdata/h200-calibration.json,../../native/testdata/h200-layer.json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "assumptions") {
		t.Errorf("a calibrated profile still called the emulated NIC's constants assumptions:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "model_over_measured") || strings.Count(out.String(), "\nnative,") != 2 {
		t.Errorf("CSV:\n%s", out.String())
	}
}

// Usage errors name the flag and exit 2; a failed check prints the run
// and exits 1; a missing library says how to build it.
// Normal mode reaches the library as DeepEP's intranode kernels with the
// model's normal mode beside it.
func TestNativeNormal(t *testing.T) {
	f := &fakeLib{}
	withFakeLib(t, f)
	var out, errb bytes.Buffer
	err := run([]string{"run", "--engine", "native", "--virtual-ranks", "8", "--mode", "normal", "--transport", "direct", "--tokens", "256", "--chunk", "8"}, &out, &errb)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if len(f.calls) != 1 {
		t.Fatalf("%d native runs, want 1", len(f.calls))
	}
	c := f.calls[0]
	if !c.Normal || c.Path != native.PathDirect || c.SMsPerRank != 16 || c.Chunk != 8 || c.BufTokens != nativelayer.DefaultBufTokens {
		t.Fatalf("config %+v", c)
	}
	for _, want := range []string{"normal mode", "8 channels", "a tail every 8 tokens", "direct"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// NCCL's all-to-all runs beside the layer at the layer's per-peer bytes
// and lands in every format.
func TestNativeNCCL(t *testing.T) {
	f := &fakeLib{gpus: 2}
	withFakeLib(t, f)
	var out, errb bytes.Buffer
	if err := run([]string{"run", "--engine", "native", "--gpus", "2", "--transport", "direct,nccl-a2a", "--tokens", "64"}, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if len(f.calls) != 1 || len(f.a2a) != 2 {
		t.Fatalf("%d layer runs and %d all-to-alls, want 1 and 2 (dispatch, combine)", len(f.calls), len(f.a2a))
	}
	if b := f.a2a[0].Bytes; len(b) != 2 || b[0][1] == 0 || b[1][0] == 0 {
		t.Fatalf("dispatch bytes %v", b)
	}
	for _, want := range []string{"NCCL all-to-all at the same per-peer bytes (NCCL 2.28.3", "direct / NCCL"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run([]string{"run", "--engine", "native", "--gpus", "2", "--transport", "direct,nccl-a2a", "--tokens", "64", "--format", "json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		NCCL []struct {
			GPUs int `json:"gpus"`
			NCCL struct {
				Dispatch struct {
					MeanUs float64 `json:"mean_us"`
				} `json:"dispatch"`
			} `json:"nccl"`
		} `json:"nccl_all_to_all"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.NCCL) != 1 || doc.NCCL[0].GPUs != 2 || !(doc.NCCL[0].NCCL.Dispatch.MeanUs > 0) {
		t.Fatalf("json %+v, %v", doc, err)
	}
	out.Reset()
	if err := run([]string{"run", "--engine", "native", "--gpus", "2", "--transport", "direct,nccl-a2a", "--tokens", "64", "--format", "csv"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nccl,ll,nccl-a2a,nccl,2,2") {
		t.Errorf("csv lacks the NCCL rows:\n%s", out.String())
	}
	withFakeLib(t, &fakeLib{gpus: 2, noNCCL: true})
	err := run([]string{"run", "--engine", "native", "--gpus", "2", "--transport", "direct,nccl-a2a"}, &out, &errb)
	if err == nil || exitCode(err) != 1 || !strings.Contains(message(err), "libnccl") {
		t.Fatalf("without NCCL: %v (exit %d)", err, exitCode(err))
	}
}

func TestNativeErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "--engine", "native"}, 2, "--virtual-ranks"},
		{[]string{"run", "--engine", "gpu"}, 2, "--engine"},
		{[]string{"run", "--gpus", "2"}, 2, "only with --engine native"},
		{[]string{"run", "--transport", "direct"}, 2, "direct"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--ranks", "16"}, 2, "--ranks 16"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--gpus-per-node", "4"}, 2, "--gpus-per-node"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--mode", "normal"}, 2, ": the native engine runs normal mode on the direct path only"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "16", "--mode", "normal", "--transport", "direct"}, 2, "at most 8"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--mode", "normal", "--transport", "direct", "--num-sms", "7"}, 2, "even"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--chunk", "4", "--transport", "direct"}, 2, "--chunk"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "direct,nccl-a2a"}, 2, "one rank per GPU, not 2 on each"},
		{[]string{"run", "--engine", "native", "--gpus", "1", "--transport", "nccl-a2a"}, 2, "name a layer path too"},
		{[]string{"run", "--transport", "nccl-a2a"}, 2, "--engine native"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--num-sms", "40"}, 2, "--num-sms 40"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "7"}, 2, "--experts"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--reps", "0"}, 2, "--reps"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "8", "--gpus", "1,2"}, 2, "one value"},
		{[]string{"run", "--engine", "native", "--virtual-ranks", "2", "--preset", "nvshmem-ibrc", "--hidden", "1000"}, 2, "16 B"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			withFakeLib(t, &fakeLib{})
			var out, errb bytes.Buffer
			err := run(tc.args, &out, &errb)
			if err == nil || exitCode(err) != tc.code || !strings.Contains(message(err), tc.msg) {
				t.Fatalf("err = %v (exit %d), want exit %d naming %q", err, exitCode(err), tc.code, tc.msg)
			}
		})
	}
	t.Run("check failure", func(t *testing.T) {
		withFakeLib(t, &fakeLib{bad: true})
		var out, errb bytes.Buffer
		err := run([]string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "mini-gda"}, &out, &errb)
		if err == nil || exitCode(err) != 1 || !strings.Contains(out.String(), "NO (3 problems)") || !strings.Contains(out.String(), "want 6") {
			t.Fatalf("err = %v, out:\n%s", err, out.String())
		}
	})
	t.Run("no library", func(t *testing.T) {
		old := openNativeLib
		defer func() { openNativeLib = old }()
		openNativeLib = func(path string) (nativelayer.Runner, error) { return native.Open(path) }
		dir := t.TempDir()
		out := filepath.Join(dir, "run.json")
		err := run([]string{"run", "--engine", "native", "--virtual-ranks", "2", "--lib", filepath.Join(dir, "none.so"), "--out", out}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || exitCode(err) != 1 || !errors.Is(err, native.ErrLibraryNotLoaded) {
			t.Fatalf("err = %v", err)
		}
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Fatalf("--out written on failure: %v", statErr)
		}
	})
}

// --preset alone runs just those presets; with --transport direct the
// direct path too. "all" is every mechanism the emulated NIC runs, SRD
// among them whatever the profile's adapters.
func TestNativePresets(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		paths []native.LayerPath
	}{
		{[]string{"--preset", "deepep-v1"}, []native.LayerPath{native.PathGDA}},
		{[]string{"--preset", "deepep-v1", "--transport", "direct"}, []native.LayerPath{native.PathGDA, native.PathDirect}},
		{[]string{"--transport", "all"}, []native.LayerPath{native.PathDC, native.PathGDA, native.PathProxy, native.PathEFA, native.PathDirect}},
		{[]string{"--preset", "deepep-v2-efa"}, []native.LayerPath{native.PathEFA}},
	} {
		f := &fakeLib{}
		withFakeLib(t, f)
		args := append([]string{"run", "--engine", "native", "--virtual-ranks", "2"}, tc.args...)
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var got []native.LayerPath
		for _, c := range f.calls {
			got = append(got, c.Path)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.paths) {
			t.Errorf("%v: paths %v, want %v", tc.args, got, tc.paths)
		}
	}
}

// A sweep over virtual ranks and tokens shows them as columns.
func TestNativeSweep(t *testing.T) {
	f := &fakeLib{}
	withFakeLib(t, f)
	var out, errb bytes.Buffer
	if err := run([]string{"sweep", "--engine", "native", "--virtual-ranks", "2,4", "--tokens", "16,128", "--transport", "mini-gda"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if len(f.calls) != 4 {
		t.Fatalf("%d runs, want 4", len(f.calls))
	}
	if !strings.Contains(out.String(), "GPUs") || !strings.Contains(out.String(), "tokens") {
		t.Errorf("sweep table lacks its knob columns:\n%s", out.String())
	}
}
