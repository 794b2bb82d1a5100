package main

import (
	"errors"
	"fmt"
	"io"
	"math"

	"moebench/profile"

	"moebench/internal/field"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/microbench"
	"moebench/native/calib"
	"moebench/published"
	"moebench/results"
)

const validateExamples = `  moebench validate
  moebench validate --only single-op,ordering,inline,rate,completion-scope --format json
  moebench validate --set gpu.sm_clock_mhz=1500      # what a throttled SM does to the match
  moebench validate --fail-above 0.35                # exit 1 if any row is off by more than 35%
  moebench validate --against deepep                 # DeepEP V1's published runs on H800, predicted
  moebench validate --against deepep --measured runs.json   # your runs of DeepEP's tests, each with its binding cause
  moebench validate --against deepep --measured runs.csv --profile my.json --fail-above 0.15

--measured FILE is, with --against measured or auto, the raw JSON of moebench calibrate --raw;
with --against deepep, your own runs of DeepEP's tests, each run predicted on --profile
(p-h800 unless given) beside DeepEP's published figure of the same conditions, where there
is one. JSON, an object of "platform" (a note) and "runs":
  {"platform": "2 nodes of 8 H800, ConnectX-7 400G", "runs": [
    {"mode": "ll", "ranks": 16, "gpus_per_node": 8, "experts": 288, "topk": 8, "hidden": 7168,
     "tokens": 128, "nvlink": false, "dispatch_dtype": "fp8", "dispatch_us": 173, "combine_us": 329}]}
or CSV of the same keys, a run a line ('#' comments, an empty cell is absent):
  mode,ranks,gpus_per_node,experts,topk,topk_groups,expert_groups,hidden,tokens,dispatch_dtype,dispatch_rdma_gbs,combine_rdma_gbs
  normal,16,8,256,8,2,2,7168,4096,fp8,43,43
mode is ll or normal; dispatch_dtype fp8 or bf16; nvlink (ll only, required there) true where
same-node peers use NVLink; topk_groups and expert_groups (optional) limit a token to that many
of so many expert groups (test_internode.py: groups are the nodes, min(nodes, 4) of them);
name (optional) labels the run. Figures, as the tests print them: dispatch_us and
combine_us (test_low_latency.py's avg_t), dispatch_rdma_gbs and combine_rdma_gbs
(test_internode.py's "GB/s (RDMA)"), dispatch_nvl_gbs and combine_nvl_gbs ("GB/s (NVL)").
`

func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "validate [flags]", validateExamples, stdout)
	var (
		out       outputFlags
		prof      profileFlags
		only      []string
		failAbove float64
		measured  string
	)
	fs.StringSliceVar(&only, "only", nil, "run only these `experiments` (comma list; default all)")
	fs.Float64Var(&failAbove, "fail-above", 0, "exit with an error when any row's relative error exceeds this `fraction` (0 = never)")
	fs.StringVar(&measured, "measured", "", "compare with this machine's measurements instead of the paper: `FILE` from calibrate --raw, or with --against deepep your runs of DeepEP's tests (see below)")
	against := fs.String("against", "auto", "reference: paper, measured (the calibration in --profile or --measured), auto (measured when the profile carries a calibration), or a published suite: deepep (DeepEP V1's runs on H800, on p-h800 unless --profile is given)")
	plotPath := fs.String("plot", "", "also draw the model against the reference, log-log with y = x and a ±10% band, to `FILE` (.svg or .png)")
	prof.register(fs)
	out.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: validate takes no arguments (got %s); use --only", errUsage, report.QuoteArgs(fs.Args()))
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := checkPlotPath("--plot", *plotPath); err != nil {
		return err
	}
	if err := checkFiles(out.outputs(outfile.Arg{Name: "--plot", Path: *plotPath}), append(profileArgs("--profile", prof.spec), outfile.Arg{Name: "--measured", Path: measured})); err != nil {
		return err
	}
	// The flag parser takes "NaN" and "Inf".
	if err := field.Float("fail-above", failAbove, 0, math.Inf(1)); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	p, err := prof.loadFor("validate", &out)
	if err != nil {
		return err
	}
	ref, err := published.Choose(*against, len(only) > 0, measured, p)
	switch {
	case errors.Is(err, published.ErrAgainst):
		return fmt.Errorf("%w: %w", errUsage, err)
	case errors.Is(err, published.ErrSuiteOnly):
		return fmt.Errorf("%w: --against %s takes no --only: it runs the suite's rows, or those of --measured", errUsage, ref.Suite.Name)
	case errors.Is(err, published.ErrEmpty):
		return fmt.Errorf("%s (want the raw JSON of moebench calibrate --raw)", message(err))
	case errors.Is(err, published.ErrRunsFile):
		return fmt.Errorf("%w: --measured %s holds runs of DeepEP's tests: they go with --against deepep", errUsage, measured)
	case errors.Is(err, published.ErrNoMeasurement):
		return fmt.Errorf("%w: --against measured: the profile carries no calibration and --measured is not given", errUsage)
	case err != nil:
		return err
	case ref.Kind == published.AgainstSuite:
		return validateSuite(ref.Suite, measured, prof, fs.Changed("profile"), out, stdout, failAbove, *plotPath)
	case ref.Kind == published.AgainstMeasured:
		return validateMeasured(p, ref.From, ref.Data, out, stdout, failAbove, *plotPath)
	}
	rows, sum, err := microbench.AgainstPaper(p, only)
	if len(field.Fields(err)) > 0 {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	h := header("validate", p, "modelled vs the paper's measurements")
	return emitValidate(out, stdout, results.NewValidate(h, rows, &sum, "paper"), "paper", *plotPath, failAbove)
}

// emitValidate writes validate's document (and its plot, when asked) and
// fails when the worst row is off by more than failAbove, and then writes
// no file (the rows still go to stdout); ref names its reference in a
// refusal of an empty plot.
func emitValidate(out outputFlags, stdout io.Writer, doc *results.Validate, ref, plotPath string, failAbove float64) error {
	return out.emitPlotted(stdout, func(w io.Writer) error { return results.Render(w, out.format, doc) }, plotPath, doc,
		fmt.Sprintf("no row has a positive %s and model value to place on log axes", ref), func() error {
			if sum := doc.Summary; failAbove > 0 && sum.MaxErr > failAbove {
				return fmt.Errorf("%s is off by %.1f%%, above --fail-above %.1f%%%s", sum.Worst, 100*sum.MaxErr, 100*failAbove, out.NotWritten())
			}
			return nil
		})
}

// validateMeasured compares the model with a GPU's raw measurements.
func validateMeasured(p *profile.Profile, path string, data []byte, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	c, err := calib.CompareFile(p, path, data)
	if errors.Is(err, calib.ErrNoIssue) {
		return fmt.Errorf("%s (want the raw JSON of moebench calibrate --raw)", message(err))
	}
	if err != nil {
		return err
	}
	return emitValidate(out, stdout, results.NewValidateMeasured(header("validate", p, c.Figures), c, path), "measured", plotPath, failAbove)
}
