package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --set of a constant the command's models read runs; one they never
// read is refused, and in run, sweep, size and replay before any layer is
// modelled (replay once refused every --set: it checked before its
// streaming writer had modelled anything).
func TestSetReadOrRefused(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	head := `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n"
	recs := `{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2]]}` + "\n" + `{"step":0,"layer":0,"rank":1,"topk_idx":[[3,4]]}` + "\n"
	if err := os.WriteFile(trace, []byte(head+recs), 0o644); err != nil {
		t.Fatal(err)
	}
	const used, unused = "gpu.sm_clock_mhz=1500", "proxy.base_publish_ns=1"
	for _, tc := range []struct {
		name string
		args []string
		set  string
		want string // "" runs; else the refusal names it
	}{
		{"run used", []string{"run", "--tokens", "4", "--transport", "mini-gda"}, used, ""},
		{"run a proxy's constant on a proxy", []string{"run", "--tokens", "4", "--transport", "mini-proxy"}, unused, ""},
		{"run unused", []string{"run", "--tokens", "4", "--transport", "mini-gda"}, unused, "proxy.base_publish_ns"},
		{"sweep used", []string{"sweep", "--tokens", "4,8", "--transport", "mini-gda"}, "gpu.sm_clock_mhz=1500,1970", ""},
		{"sweep unused", []string{"sweep", "--tokens", "4,8", "--transport", "mini-gda"}, unused, "proxy.base_publish_ns"},
		{"size used", []string{"size", "--tokens", "4", "--transport", "mini-gda", "--qps-per-peer", "1"}, used, ""},
		{"size unused", []string{"size", "--tokens", "4", "--transport", "mini-gda", "--qps-per-peer", "1"}, unused, "proxy.base_publish_ns"},
		{"replay used", []string{"replay", "--trace", trace, "--transport", "mini-gda"}, used, ""},
		{"replay unused", []string{"replay", "--trace", trace, "--transport", "mini-gda"}, unused, "proxy.base_publish_ns"},
		{"mech used", []string{"mech", "single-op"}, used, ""},
		{"mech unused", []string{"mech", "single-op"}, unused, "proxy.base_publish_ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			err := run(append(tc.args, "--set", tc.set), &out, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && out.Len() == 0:
				t.Fatal("ran without output")
			case tc.want != "" && err == nil:
				t.Fatalf("ran, want a refusal naming %s", tc.want)
			case tc.want != "" && (!errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v: want a usage error naming %s", err, tc.want)
			case tc.want != "" && out.Len() > 0:
				t.Errorf("refused after writing %d bytes", out.Len())
			}
		})
	}
}
