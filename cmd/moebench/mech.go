package main

import (
	"errors"
	"fmt"
	"io"

	"moebench/internal/field"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/microbench"
	"moebench/moe"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/results"
	"moebench/transport/gda"
)

const mechExamples = `  moebench mech                                   # every microbenchmark on P-IB
  moebench mech ordering inline                    # two of them
  moebench mech rate --threads 1,32,256 --qps 1,16 --per-doorbell 1,32 --style coop,handoff
  moebench mech single --ordering all --payload 8,92 --pointer
  moebench mech --set gpu.sm_clock_mhz=1200 single-op
`

func runMech(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mech", "mech [EXPERIMENT...] | mech rate|single [sweep flags]", mechExamples, stdout)
	var (
		out         outputFlags
		prof        profileFlags
		budget      budgetFlags
		s           microbench.Sweep // the sweep flags; Inline is not --pointer
		pointer     bool
		engine, lib string
	)
	fs.IntSliceVar(&s.Threads, "threads", []int{1}, "rate: submitting GPU threads (list)")
	fs.IntSliceVar(&s.QPs, "qps", []int{1}, "rate: RC QPs (list)")
	fs.IntSliceVar(&s.SMs, "sms", []int{1}, "rate: SMs the threads spread over (list)")
	fs.IntSliceVar(&s.PerDoorbell, "per-doorbell", []int{1}, "rate: WQEs announced per doorbell (list)")
	fs.StringSliceVar(&s.Styles, "style", []string{"thread"}, "rate: publication: thread, coop, handoff, lock (list)")
	fs.StringSliceVar(&s.Orderings, "ordering", []string{"gpu-fence"}, "ordering before the doorbell (list, or all): "+fmt.Sprint(microbench.OrderingNames()))
	fs.IntSliceVar(&s.Payloads, "payload", []int{8}, "payload bytes (list)")
	fs.BoolVar(&pointer, "pointer", false, "name the payload by pointer instead of inlining it")
	fs.IntVar(&s.Depth, "depth", 1024, "rate: WQEs per send queue")
	fs.StringVar(&engine, "engine", "model", "model, or native: measure the GPU side on the local GPU and print it beside the model")
	fs.StringVar(&lib, "lib", "", "native: path to libmoebench_native.so (default $"+native.LibEnv+" or native/build/)")
	budget.register(fs)
	prof.register(fs)
	out.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := budget.check(); err != nil {
		return err
	}
	if err := checkFiles(out.outputs(), append(profileArgs("--profile", prof.spec), outfile.Arg{Name: "--lib", Path: lib})); err != nil {
		return err
	}
	p, err := prof.loadFor("mech", &out)
	if err != nil {
		return err
	}
	switch engine {
	case "model":
	case "native":
		return mechNative(p, lib, out, stdout, stderr)
	default:
		return fmt.Errorf("%w: --engine %s: want model or native", errUsage, report.Quote(engine))
	}
	sweep, err := microbench.SweepOf(fs.Args(), fs.Changed)
	if fe := (*field.Error)(nil); errors.As(err, &fe) {
		if errors.Is(err, microbench.ErrNoSweep) {
			return fmt.Errorf("%w: --%s: only mech rate and mech single take sweep flags (the named experiments run fixed cases)", errUsage, fe.Field)
		}
		return fmt.Errorf("%w: --%s: mech single takes --ordering, --payload and --pointer; --%s is mech rate's", errUsage, fe.Field, fe.Field)
	}
	var rows []microbench.Row
	if sweep != "" {
		s.Inline = !pointer
		rows, err = s.Rows(p, sweep, func(cfg gda.RateConfig) error {
			bytes, msgs := cfg.Cost()
			what := fmt.Sprintf("mech rate --threads %d --qps %d --depth %d", cfg.Threads, cfg.QPs, cfg.Depth)
			return budget.allow(what, moe.Cost{Bytes: bytes, Messages: msgs})
		}, func(name string, err error) {
			// A cross product has combinations that cannot run; say which
			// were skipped.
			fmt.Fprintf(stderr, "moebench: skipping %s: %v\n", name, err)
		})
		if errors.Is(err, microbench.ErrNoneRuns) {
			return fmt.Errorf("%w: no combination of the sweep flags can run (see the skipped lines above)", errUsage)
		}
	} else {
		exps, err := microbench.Select(fs.Args())
		if err != nil {
			return fmt.Errorf("%w: %v (or: rate, single with sweep flags)", errUsage, err)
		}
		if rows, err = microbench.RunAll(p, exps, false); err != nil {
			return err
		}
	}
	if fe := (*field.Error)(nil); errors.As(err, &fe) && !errors.Is(err, errUsage) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return err
	}
	h := header("mech", p, "modelled (paper values beside them where measured)")
	return out.emit(stdout, func(w io.Writer) error {
		return results.Render(w, out.format, results.NewValidate(h, rows, nil, "paper"))
	})
}

// mechNative measures the GPU side on the local GPU (the calibrate suite's
// single-thread issue, inline and posting-rate parts) and prints each
// measurement beside the model's prediction for the same configuration.
func mechNative(p *profile.Profile, libPath string, out outputFlags, stdout, stderr io.Writer) error {
	lib, err := native.Open(libPath)
	if err != nil {
		return fmt.Errorf("mech --engine native: %w", err)
	}
	defer lib.Close()
	m, err := calib.Measure(lib, calib.Options{Iters: 1000}, func(s string) { fmt.Fprintln(stderr, "mech:", s) })
	if err != nil {
		return fmt.Errorf("mech --engine native: %w", err)
	}
	c, err := calib.Compare(p, m, true)
	if err != nil {
		return err
	}
	h := header("mech --engine native", p, c.Figures)
	return out.emit(stdout, func(w io.Writer) error { return results.Render(w, out.format, results.NewValidateMeasured(h, c, "")) })
}
