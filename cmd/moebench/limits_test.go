package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/sizing"
)

// DeepEP V1's normal-mode kernels refuse more than 160 ranks (20 RDMA
// peers of 8 NVLink peers): run refuses EP256 in normal mode naming that
// cap and where DeepEP states it, runs the same in LL mode, and runs it
// with --over-limit, marking the header, the headroom table and the JSON.
func TestRunDeepEPV1RankCap(t *testing.T) {
	t.Parallel()
	base := []string{"run", "--preset", "deepep-v1", "--ranks", "256", "--tokens", "16"}
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the error; none: runs
		out  []string // in the output of a run
	}{
		{name: "normal refused", args: []string{"--mode", "normal"},
			want: []string{"deepep-v1.normal_ranks", "256 ranks, more than 160", "csrc/kernels/configs.cuh", "NUM_MAX_NVL_PEERS 8 × NUM_MAX_RDMA_PEERS 20", "csrc/deep_ep.cpp", "567632dd", "--over-limit deepep-v1.normal_ranks"}},
		{name: "LL runs", args: []string{"--mode", "ll"},
			out: []string{"Headroom against each limit", "deepep-v1.ll_topk", "deepep-v1.ll_rdma_bytes"}},
		{name: "normal overridden", args: []string{"--mode", "normal", "--over-limit", "deepep-v1.normal_ranks"},
			out: []string{"# RUN OVER A LIMIT: deepep-v1 over deepep-v1.normal_ranks: 256 ranks, more than 160 (DeepEP 567632dd", "160% OVER"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			err := run(append(append([]string{}, base...), tc.args...), &out, io.Discard)
			if len(tc.want) > 0 {
				if err == nil {
					t.Fatal("ran, want a refusal")
				}
				if exitCode(err) != 2 || out.Len() > 0 {
					t.Errorf("exit %d after %d bytes, want 2 before any output", exitCode(err), out.Len())
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.out {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output does not say %q:\n%s", w, out.String())
				}
			}
			if over := strings.Contains(out.String(), "OVER"); over != (len(tc.args) > 2) {
				t.Errorf("marked over a limit: %v, want %v", over, !over)
			}
		})
	}
}

// The JSON of a run over a limit carries every limit's headroom, the
// overridden one marked over with its figures; within the limits nothing
// is marked.
func TestRunOverLimitJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ranks string
		over  bool
	}{{"EP256 overridden", "256", true}, {"EP160 within", "160", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			args := []string{"run", "--preset", "deepep-v1", "--mode", "normal", "--ranks", tc.ranks, "--experts", tc.ranks, "--tokens", "16", "--format", "json", "--over-limit", "deepep-v1.normal_ranks"}
			if err := run(args, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Header struct {
					Notes []string `json:"notes"`
				} `json:"header"`
				Results []struct {
					Limits []moe.Usage `json:"limits"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Results) != 1 {
				t.Fatalf("%d results, want 1", len(doc.Results))
			}
			var got *moe.Usage
			for i, u := range doc.Results[0].Limits {
				if u.Name == "deepep-v1.normal_ranks" {
					got = &doc.Results[0].Limits[i]
				}
				if u.Over && u.Name != "deepep-v1.normal_ranks" {
					t.Errorf("%s marked over", u.Name)
				}
			}
			ranks := 160
			if tc.over {
				ranks = 256
			}
			if got == nil || got.Used != int64(ranks) || got.Limit != 160 || got.Over != tc.over || !strings.Contains(got.Source, "NUM_MAX_RDMA_PEERS") {
				t.Errorf("deepep-v1.normal_ranks: %+v, want %d of 160, over %v, with its source", got, ranks, tc.over)
			}
			marked := strings.Contains(strings.Join(doc.Header.Notes, "\n"), "RUN OVER A LIMIT")
			if marked != tc.over {
				t.Errorf("header marked %v, want %v: %q", marked, tc.over, doc.Header.Notes)
			}
		})
	}
}

// A sweep refuses, before running anything, a point over a limit, naming
// the point as for any refused point; overridden, it marks that point
// alone.
func TestSweepOverLimit(t *testing.T) {
	t.Parallel()
	args := []string{"sweep", "--preset", "deepep-v1", "--mode", "normal", "--ranks", "64,256", "--tokens", "8"}
	var out strings.Builder
	err := run(args, &out, io.Discard)
	if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "point EP256") || !strings.Contains(err.Error(), "deepep-v1.normal_ranks") {
		t.Fatalf("error %v: want a usage error naming point EP256 and deepep-v1.normal_ranks", err)
	}
	if out.Len() > 0 {
		t.Errorf("refused after %d bytes", out.Len())
	}
	out.Reset()
	if err := run(append(args, "--over-limit", "deepep-v1.normal_ranks"), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "# RUN OVER A LIMIT: deepep-v1 at ranks 256 over deepep-v1.normal_ranks"); n != 1 {
		t.Errorf("%d marks of EP256 over the rank cap, want 1:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "at ranks 64 over") {
		t.Error("EP64 marked over a limit")
	}
}

// size rejects, with the limit named, candidates over a NIC's QPs, over
// what the GPU's memory leaves the layer once the model keeps its share,
// and over their library's rank cap, and recommends none of them.
func TestSizeRejectsOverLimits(t *testing.T) {
	t.Parallel()
	// LL at EP256, 8 tokens: DeepEP's LL buffer plus 256 peers × QPs a
	// peer × 1,024 WQEs of 64 B (16 MiB a QP a peer) of send queues.
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 8, Ranks: 256, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	leave := moe.LLBufferBytes(s) + 24<<20 // room for one QP a peer's queues, not two
	reserved := fmt.Sprintf("gpu.reserved_gb=%.9f", 141-float64(leave)/1e9)
	for _, tc := range []struct {
		name     string
		args     []string
		rejected string // candidate
		by       string // the limit its reason names
		kept     string // a candidate not rejected
	}{
		{name: "QPs", args: []string{"--transport", "mini-gda", "--set", "nic.max_qps=300"}, rejected: "mini-gda qps=2", by: "nic.max_qps = 300", kept: "mini-gda qps=1"},
		{name: "GPU memory", args: []string{"--transport", "mini-gda", "--set", reserved}, rejected: "mini-gda qps=2", by: "gpu.reserved_gb", kept: "mini-gda qps=1"},
		{name: "rank cap", args: []string{"--preset", "deepep-v1,mini-gda", "--mode", "normal", "--qps-per-peer", "1"}, rejected: "deepep-v1 qps=1", by: "deepep-v1.normal_ranks", kept: "mini-gda qps=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			args := append([]string{"size", "--ranks", "256", "--tokens", "8", "--format", "json"}, tc.args...)
			if err := run(args, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				sizing.Result
			}
			if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
				t.Fatal(err)
			}
			found := map[string]sizing.Candidate{}
			for _, c := range doc.Candidates {
				found[c.Name] = c
			}
			r, ok := found[tc.rejected]
			switch {
			case !ok:
				t.Fatalf("no candidate %s among %v", tc.rejected, doc.Candidates)
			case r.Verdict != sizing.Rejected || !strings.Contains(r.Reason, tc.by):
				t.Errorf("%s: %s, %q; want rejected naming %s", r.Name, r.Verdict, r.Reason, tc.by)
			}
			if k, ok := found[tc.kept]; !ok || k.Verdict == sizing.Rejected {
				t.Errorf("%s: %+v, want it kept", tc.kept, k)
			}
			if doc.Recommended < 0 || doc.Candidates[doc.Recommended].Name == tc.rejected {
				t.Errorf("recommended %d, want one within the limits", doc.Recommended)
			}
		})
	}
}
