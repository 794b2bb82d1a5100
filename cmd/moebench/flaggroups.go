package main

import (
	"strings"

	"github.com/spf13/pflag"

	"moebench/internal/flagvalue"
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
)

// The flag groups every command that takes a concept registers, each with
// one help text: the layer's shape, the mechanisms, and how the layer's
// kernels and links run.

// shapeFlags are the layer's shape over a workload preset: --workload,
// --mode, --tokens, --ranks, --gpus-per-node, --experts, --topk and
// --hidden. Commands that sweep take lists of the mode and the four
// counts; the others take one value each, held as a list of one.
type shapeFlags struct {
	workload                        string
	modes                           []string
	tokens, ranks, perNode, experts []int
	topk, hidden                    int
}

// register adds the shape's flags, as lists where lists is set.
func (s *shapeFlags) register(fs *pflag.FlagSet, lists bool) {
	fs.StringVar(&s.workload, "workload", "deepseek-v3", "layer shape preset: "+strings.Join(workloads.Names(), ", "))
	s.modes = []string{"ll"}
	const modeHelp = "DeepEP mode: ll (low latency) or normal (high throughput)"
	if lists {
		fs.StringSliceVar(&s.modes, "mode", s.modes, modeHelp)
	} else {
		fs.Var(&flagvalue.String{V: &s.modes}, "mode", modeHelp)
	}
	for _, c := range []struct {
		name, help string
		dst        *[]int
	}{
		{"tokens", "tokens per rank, DeepEP's max tokens per rank (default the workload's, 128)", &s.tokens},
		{"ranks", "expert-parallel ranks (GPUs; default the workload's, 16)", &s.ranks},
		{"gpus-per-node", "GPUs per node (default the workload's, 8)", &s.perNode},
		{"experts", "experts, placed evenly on the ranks (default the workload's)", &s.experts},
	} {
		if lists {
			fs.IntSliceVar(c.dst, c.name, nil, c.help)
		} else {
			fs.Var(&flagvalue.Int{V: c.dst}, c.name, c.help)
		}
	}
	fs.IntVar(&s.topk, "topk", 0, "experts per token (default the workload's)")
	fs.IntVar(&s.hidden, "hidden", 0, "hidden size (default the workload's)")
}

// one is the value of a flag that takes one, 0 or "" when not given.
func one[T any](v []T) T { return flagvalue.First(v) }

// transportFlags are the mechanisms a command runs or considers:
// --transport and --preset.
type transportFlags struct {
	transports, presets []string
}

func (t *transportFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&t.transports, "transport", []string{"all"}, "mechanisms to compare, each through its own preset: "+strings.Join(transport.Names(), ", ")+", or all (those with a preset)")
	fs.StringSliceVar(&t.presets, "preset", nil, "transport presets instead of --transport (list, or all): "+strings.Join(preset.Names(), ", "))
}

// kernelFlags are how the layer's kernels and links run: --nvlink,
// --num-sms and --chunk.
type kernelFlags struct {
	nvlink        bool
	numSMs, chunk int
}

// register adds the flags; native says the command has --engine native,
// whose kernels read --chunk too.
func (k *kernelFlags) register(fs *pflag.FlagSet, native bool) {
	fs.BoolVar(&k.nvlink, "nvlink", false, "let peers of one NVLink domain (a node, or a rack the profile joins) use NVLink (default on in normal mode, and in ll mode where the domain spans hosts)")
	fs.IntVar(&k.numSMs, "num-sms", 0, "SMs the kernels use (0 = DeepEP's choice; normal mode: 24, two per channel)")
	chunk := "normal mode: tokens per RDMA write (0 = 16 on one node, DeepEP's recommended config for the rank count across nodes)"
	if native {
		chunk += "; with --engine native, tokens per published tail (0 = 6, DeepEP's intranode config)"
	}
	fs.IntVar(&k.chunk, "chunk", 0, chunk)
}

// backgroundHelp is --background's help: run, sweep and replay take one
// of these (sweep a list); size adds what it does without a queue choice.
const backgroundHelp = "traffic beside the layer: none, bulk-shared, bulk-reserved or bulk:N[:shared|reserved][:BYTES]"
