package workloads_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/workloads"
)

func TestPresets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                                 string
		experts, topk, hidden, tokens, ranks int
		dispatchBytes                        int
	}{
		{"deepseek-v3", 256, 8, 7168, 128, 16, 7408},
		{"deepep-ll", 288, 8, 7168, 128, 16, 7408},
		{"kimi-k2", 384, 8, 7168, 128, 16, 7408},
		{"qwen3-235b", 128, 8, 4096, 128, 16, 16 + 4096 + 32*4},
		{"mixtral-8x7b", 8, 2, 4096, 128, 8, 16 + 4096 + 32*4},
		{"gpt-oss-120b", 128, 4, 2880, 128, 16, 16 + 2880 + 23*4},
	}
	var names []string
	for _, tt := range tests {
		names = append(names, tt.name)
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := workloads.Get(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			s := w.Shape
			if err := s.Validate(); err != nil {
				t.Fatalf("preset does not validate: %v", err)
			}
			if w.Name != tt.name || w.Source == "" || w.Description == "" {
				t.Errorf("preset %+v lacks a name, source or description", w)
			}
			if s.Experts != tt.experts || s.TopK != tt.topk || s.Hidden != tt.hidden || s.Tokens != tt.tokens || s.Ranks != tt.ranks {
				t.Errorf("shape %+v, want experts %d top-%d hidden %d tokens %d ranks %d", s, tt.experts, tt.topk, tt.hidden, tt.tokens, tt.ranks)
			}
			if s.Dispatch != moe.FP8 || s.Combine != moe.BF16 || s.GPUsPerNode != 8 {
				t.Errorf("dtypes %v/%v, %d GPUs per node; want fp8/bf16, 8", s.Dispatch, s.Combine, s.GPUsPerNode)
			}
			if got := s.LLDispatchBytes(); got != tt.dispatchBytes {
				t.Errorf("LLDispatchBytes = %d, want %d", got, tt.dispatchBytes)
			}
		})
	}
	slices.Sort(names)
	if got := workloads.Names(); !slices.Equal(got, names) {
		t.Errorf("Names() = %v, want %v", got, names)
	}
}

func TestGetReturnsCopy(t *testing.T) {
	t.Parallel()
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	w.Shape.Ranks = 1024
	w.Name = "changed"
	again, _ := workloads.Get("deepseek-v3")
	if again.Shape.Ranks != 16 || again.Name != "deepseek-v3" {
		t.Fatalf("changing a returned preset changed the registry: %+v", again)
	}
}

func TestGetUnknown(t *testing.T) {
	t.Parallel()
	_, err := workloads.Get("llama")
	if err == nil {
		t.Fatal("Get(llama) succeeded")
	}
	for _, want := range []string{`"llama"`, "deepseek-v3", "gpt-oss-120b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func ExampleGet() {
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		fmt.Println(err)
		return
	}
	w.Shape.PhysicalExperts = 288 // add DeepSeek's 32 redundant experts
	fmt.Println(w.Shape.Validate(), w.Shape.LocalExperts(), w.Shape.LLDispatchBytes())
	// Output: <nil> 18 7408
}

// Group-limited gating follows each model's config: DeepSeek-V3 n_group 8,
// topk_group 4; Kimi K2 and the rest route over all experts.
func TestPresetGroups(t *testing.T) {
	t.Parallel()
	for _, name := range workloads.Names() {
		w, err := workloads.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		want := moe.GroupLimit{}
		if name == "deepseek-v3" {
			want = moe.GroupLimit{Groups: 8, TopK: 4}
		}
		if w.Groups != want {
			t.Errorf("%s: groups %+v, want %+v", name, w.Groups, want)
		}
		if _, err := w.Groups.Resolve(w.Shape); err != nil {
			t.Errorf("%s: its group limit does not fit its shape: %v", name, err)
		}
		if w.Groups.On() && !strings.Contains(w.Source, "topk_group") {
			t.Errorf("%s: source %q does not cite the group limit", name, w.Source)
		}
	}
}

// Every model's preset has its experts' FFN, read from its config;
// DeepEP's test shape has no model behind it.
func TestPresetsHaveTheirFFN(t *testing.T) {
	want := map[string]moe.FFN{
		"deepseek-v3": {Intermediate: 2048, SharedIntermediate: 2048}, "kimi-k2": {Intermediate: 2048, SharedIntermediate: 2048},
		"qwen3-235b": {Intermediate: 1536}, "mixtral-8x7b": {Intermediate: 14336}, "gpt-oss-120b": {Intermediate: 2880},
		"deepep-ll": {},
	}
	for _, name := range workloads.Names() {
		w, err := workloads.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if w.Compute != want[name] {
			t.Errorf("%s: FFN %+v, want %+v", name, w.Compute, want[name])
		}
		if !w.Compute.Zero() && !strings.Contains(w.ComputeSource, "config.json") {
			t.Errorf("%s: FFN source %q names no config", name, w.ComputeSource)
		}
	}
}
