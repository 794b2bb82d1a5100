package workloads

import (
	"fmt"
	"slices"
	"strings"

	"moebench/internal/report"
	"moebench/moe"
)

// Workload is a named MoE layer shape and where its numbers come from.
type Workload struct {
	Name        string
	Description string
	Source      string // model config or test file the shape is read from
	Shape       moe.Shape
	// Groups is the model's group-limited gating (n_group / topk_group),
	// off when the model routes over all experts at once.
	Groups moe.GroupLimit
	// Compute is the experts' FFN (zero for a shape without a model
	// behind it), and ComputeSource where its sizes are read.
	Compute       moe.FFN
	ComputeSource string
}

// Defaults where a source fixes only the model: 128 tokens per rank (the
// decode batch of DeepEP's low-latency test), EP16 over two 8-GPU nodes.
const (
	defaultTokens      = 128
	defaultRanks       = 16
	defaultGPUsPerNode = 8
)

func shape(experts, topk, hidden int) moe.Shape {
	return moe.Shape{
		Experts:     experts,
		TopK:        topk,
		Hidden:      hidden,
		Tokens:      defaultTokens,
		Ranks:       defaultRanks,
		GPUsPerNode: defaultGPUsPerNode,
		Dispatch:    moe.FP8,
		Combine:     moe.BF16,
	}
}

// presets is never handed out; Get copies. Dispatch is FP8 and combine BF16
// throughout, as DeepEP runs them, since no source says otherwise.
var presets = []Workload{
	{
		Name:        "deepseek-v3",
		Description: "DeepSeek-V3/R1 routed experts: 256 experts, top-8, hidden 7,168",
		Source: "huggingface.co/deepseek-ai/DeepSeek-V3 config.json: n_routed_experts 256, num_experts_per_tok 8, hidden_size 7168; " +
			"group-limited gating n_group 8, topk_group 4 (groups of 32 consecutive experts; on 8 nodes a token reaches at most 4)",
		Shape:         shape(256, 8, 7168),
		Groups:        moe.GroupLimit{Groups: 8, TopK: 4},
		Compute:       moe.FFN{Intermediate: 2048, SharedIntermediate: 2048},
		ComputeSource: "huggingface.co/deepseek-ai/DeepSeek-V3 config.json: moe_intermediate_size 2048, n_shared_experts 1 (one shared expert of moe_intermediate_size)",
	},
	{
		Name:        "deepep-ll",
		Description: "DeepEP's low-latency test: 288 experts, top-8, hidden 7,168, 128 tokens per rank",
		Source:      "github.com/deepseek-ai/DeepEP tests/test_low_latency.py (tests/legacy/ in later versions): num_tokens 128, hidden 7168, num_topk 8, num_experts 288; plain top-k over all experts",
		Shape:       shape(288, 8, 7168),
	},
	{
		Name:        "kimi-k2",
		Description: "Kimi K2: 384 experts, top-8, hidden 7,168",
		// Kimi K2 keeps DeepSeek-V3's gating code but sets n_group 1,
		// topk_group 1: one group, so no limit.
		Source: "huggingface.co/moonshotai/Kimi-K2-Instruct config.json: n_routed_experts 384, num_experts_per_tok 8, hidden_size 7168; " +
			"n_group 1, topk_group 1 (no group limit)",
		Shape:         shape(384, 8, 7168),
		Compute:       moe.FFN{Intermediate: 2048, SharedIntermediate: 2048},
		ComputeSource: "huggingface.co/moonshotai/Kimi-K2-Instruct config.json: moe_intermediate_size 2048, n_shared_experts 1",
	},
	{
		Name:          "qwen3-235b",
		Description:   "Qwen3-235B-A22B: 128 experts, top-8, hidden 4,096",
		Source:        "huggingface.co/Qwen/Qwen3-235B-A22B config.json: num_experts 128, num_experts_per_tok 8, hidden_size 4096",
		Shape:         shape(128, 8, 4096),
		Compute:       moe.FFN{Intermediate: 1536},
		ComputeSource: "huggingface.co/Qwen/Qwen3-235B-A22B config.json: moe_intermediate_size 1536; no shared expert",
	},
	{
		// 8 experts cannot spread over 16 ranks: one expert per GPU on one
		// node is the natural EP for this model.
		Name:        "mixtral-8x7b",
		Description: "Mixtral 8x7B: 8 experts, top-2, hidden 4,096; EP8 on one node",
		Source:      "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json: num_local_experts 8, num_experts_per_tok 2, hidden_size 4096",
		Shape: func() moe.Shape {
			s := shape(8, 2, 4096)
			s.Ranks = 8
			return s
		}(),
		Compute:       moe.FFN{Intermediate: 14336},
		ComputeSource: "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json: intermediate_size 14336; no shared expert",
	},
	{
		// 2,880 is not a multiple of 128: the last FP8 scale group covers
		// 64 channels, ceil(2880/128) = 23 scales.
		Name:          "gpt-oss-120b",
		Description:   "gpt-oss-120b: 128 experts, top-4, hidden 2,880",
		Source:        "huggingface.co/openai/gpt-oss-120b config.json: num_local_experts 128, num_experts_per_tok 4, hidden_size 2880",
		Shape:         shape(128, 4, 2880),
		Compute:       moe.FFN{Intermediate: 2880},
		ComputeSource: "huggingface.co/openai/gpt-oss-120b config.json: intermediate_size 2880; no shared expert",
	},
}

// Names lists the presets in sorted order.
func Names() []string {
	names := make([]string, len(presets))
	for i, w := range presets {
		names[i] = w.Name
	}
	slices.Sort(names)
	return names
}

// Get returns a copy of the named preset.
func Get(name string) (Workload, error) {
	for _, w := range presets {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("unknown workload %s (known: %s)", report.Quote(name), strings.Join(Names(), ", "))
}
