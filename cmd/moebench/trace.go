package main

import (
	"errors"
	"fmt"
	"io"

	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/routing"
	"moebench/traces"
)

const traceUsage = `Usage: moebench trace gen|convert|inspect [flags]

Routing traces: the top-k experts every token picked, per step, layer and rank.

  gen      write a synthetic trace (uniform, power-law or hot-expert routing)
  convert  import NumPy, SGLang or EPLB routing data, or re-encode a trace
  inspect  summarise a trace: shape, provenance, per-layer load and skew

Run moebench trace COMMAND --help for a command's flags and examples.
`

// runTrace implements "moebench trace".
func runTrace(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		io.WriteString(stderr, traceUsage)
		return fmt.Errorf("%w: trace needs a subcommand (gen, convert or inspect)", errUsage)
	}
	switch args[0] {
	case "-h", "--help":
		if len(args) > 1 {
			return fmt.Errorf("%w: trace %s takes no arguments (moebench trace COMMAND --help shows a command's help)", errUsage, args[0])
		}
		_, err := io.WriteString(stdout, traceUsage)
		return err
	case "help": // trace help [COMMAND], as moebench help trace [COMMAND]
		switch len(args) {
		case 1:
			_, err := io.WriteString(stdout, traceUsage)
			return err
		case 2:
			return runTrace([]string{args[1], "--help"}, stdout, stderr)
		}
		return fmt.Errorf("%w: trace help takes one command (got %s)", errUsage, report.QuoteArgs(args[1:]))
	case "gen":
		return runTraceGen(args[1:], stdout, stderr)
	case "convert":
		return runTraceConvert(args[1:], stdout, stderr)
	case "inspect":
		return runTraceInspect(args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown trace subcommand %s (want gen, convert or inspect)", errUsage, report.Quote(args[0]))
}

// importFormat sets the import's format and layout from --from and
// --layout (traces.ImportFormat).
func importFormat(from, layout string, opt *traces.ImportOptions) error {
	var err error
	opt.From, opt.Layout, err = traces.ImportFormat(from, layout)
	return traceErr(err)
}

// traceErr is traces' refusal of a flag's value as the command line's
// (each a usage error).
func traceErr(err error) error {
	var choice *traces.ChoiceError
	var space *traces.SpaceError
	switch {
	case errors.As(err, &choice):
		return fmt.Errorf("%w: --%s %s is not %s", errUsage, choice.Field, report.Quote(choice.Value), choice.Want)
	case errors.Is(err, traces.ErrStdoutBinary):
		return fmt.Errorf("%w: --out - writes only jsonl (binary goes to a file)", errUsage)
	case errors.As(err, &space):
		return fmt.Errorf("%w: trace gen would write about %s (%.0f records), more than the %s free where --out %s goes; ask for fewer --steps, --layers, --ranks or --tokens",
			errUsage, report.Bytes(space.Bytes), space.Records, report.Bytes(space.Free), space.Path)
	case err != nil:
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

func runTraceGen(args []string, stdout, _ io.Writer) error {
	d := traces.DefaultGenOptions()
	fs := newFlags("moebench trace gen", "trace gen --out FILE [flags]", `  moebench trace gen --out uniform.bin
  moebench trace gen --routing powerlaw:1.2 --drift 0.05 --layers 61 --ranks 32 --out r1.bin
  moebench trace gen --routing hot:8:0.5 --tokens 16 --weights --format jsonl --out -
  moebench trace gen --routing imbalanced-ranks:4 --ranks 16 --gpus-per-node 8 --out hot-rank.bin
`, stdout)
	out := fs.String("out", "", "output file, or - for stdout (jsonl only); required")
	format := fs.String("format", "", "output format: bin or jsonl (default: from --out's extension, else bin)")
	spec := fs.String("routing", "uniform", "synthetic routing, as run's: "+routing.Syntax+" (hottest experts lowest ids)")
	fs.IntVar(&d.Experts, "experts", d.Experts, "logical experts")
	fs.IntVar(&d.TopK, "topk", d.TopK, "experts per token")
	fs.IntVar(&d.Layers, "layers", d.Layers, "MoE layers")
	fs.IntVar(&d.Steps, "steps", d.Steps, "steps (forward passes)")
	fs.IntVar(&d.Ranks, "ranks", d.Ranks, "EP ranks")
	fs.IntVar(&d.TokensPerRank, "tokens", d.TokensPerRank, "tokens per rank per step")
	fs.IntVar(&d.GPUsPerNode, "gpus-per-node", 0, "GPUs per node, recorded in the header (0 = unknown)")
	fs.Float64Var(&d.Drift, "drift", 0, "per-layer perturbation of the popularity ranking, 0..1")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "random seed; the same seed gives a byte-identical file")
	fs.BoolVar(&d.Weights, "weights", false, "also write top-k weights")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: trace gen takes no arguments, got %s", errUsage, report.QuoteArgs(fs.Args()))
	}
	if *out == "" {
		return fmt.Errorf("%w: trace gen: --out is required", errUsage)
	}
	if err := checkOut("--out", *out); err != nil {
		return err
	}
	// The layer shape as run and replay check it: a trace they would
	// refuse is refused here.
	f, err := d.Resolve(*spec, *format, *out)
	if err != nil {
		return traceErr(err)
	}
	src, err := traces.Generate(d)
	if err != nil {
		return fmt.Errorf("%w: trace gen: %v", errUsage, err)
	}
	return traces.EncodePath(*out, f, src, stdout)
}

func runTraceConvert(args []string, stdout, _ io.Writer) error {
	fs := newFlags("moebench trace convert", "trace convert IN... --out OUT [flags]", `  moebench trace convert routing.npz --out routing.bin
  moebench trace convert routed_experts.npy --layout tokens-first --experts 256 --out r.bin
  moebench trace convert rank0.csv rank1.csv --from sglang-stat-csv --topk 8 --out stat.bin
  moebench trace convert eplb_weight.csv --from eplb --topk 8 --tokens 4096 --out eplb.bin
  moebench trace convert trace.bin --out trace.jsonl
`, stdout)
	out := fs.String("out", "", "output trace; required")
	from := fs.String("from", "", "input format: npy, npz, sglang-stat-csv, eplb, jsonl or bin (default: detect)")
	format := fs.String("format", "", "output format: bin or jsonl (default: from --out's extension, else bin)")
	layout := fs.String("layout", "", "axis order of 3-D id arrays: layers-first or tokens-first (default: from the array name or the physical map)")
	var opt traces.ImportOptions
	fs.IntVar(&opt.TopK, "topk", 0, "top-k of tokens synthesized from counts (required for count inputs)")
	fs.IntVar(&opt.Experts, "experts", 0, "logical experts (0 = infer from the data)")
	fs.IntVar(&opt.Tokens, "tokens", 0, "count inputs: rescale each step and layer to this many tokens (0 = keep integral counts)")
	fs.IntVar(&opt.EPSize, "ep-size", 0, "EP ranks, recorded in the header (0 = unknown, or the number of rank files)")
	fs.IntVar(&opt.GPUsPerNode, "gpus-per-node", 0, "GPUs per node, recorded in the header (0 = unknown)")
	fs.Uint64Var(&opt.Seed, "seed", 1, "seed for tokens synthesized from counts")
	fs.StringVar(&opt.Provenance, "provenance", "", "free text appended to the provenance (model, command, date)")
	var budget budgetFlags
	budget.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := budget.check(); err != nil {
		return err
	}
	// An imported array is held whole: its header must fit the budget.
	opt.MaxBytes = budget.limit.Bytes
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: trace convert needs an input file", errUsage)
	}
	if *out == "" || *out == "-" {
		return fmt.Errorf("%w: trace convert: --out FILE is required", errUsage)
	}
	if err := checkOut("--out", *out); err != nil {
		return err
	}
	if err := checkFiles([]outfile.Arg{{Name: "--out", Path: *out}}, outfile.Positional(fs.Args())); err != nil {
		return err
	}
	if err := importFormat(*from, *layout, &opt); err != nil {
		return err
	}
	f, err := traces.OutputFormat(*format, *out)
	if err != nil {
		return traceErr(err)
	}
	src, err := traces.Import(fs.Args(), opt)
	if errors.Is(err, traces.ErrOption) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	return traces.EncodePath(*out, f, src, stdout)
}

func runTraceInspect(args []string, stdout, _ io.Writer) error {
	fs := newFlags("moebench trace inspect", "trace inspect FILE [flags]", `  moebench trace inspect routing.bin
  moebench trace inspect routing.jsonl --format json
`, stdout)
	format := fs.String("format", "table", "output: table or json")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: trace inspect takes one file", errUsage)
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("%w: --format %s is not table or json", errUsage, report.Quote(*format))
	}
	in, err := traces.InspectFile(fs.Arg(0), report.LocalHost())
	if err != nil {
		return err
	}
	if *format == "json" {
		return in.WriteJSON(stdout)
	}
	return in.WriteTable(stdout)
}
