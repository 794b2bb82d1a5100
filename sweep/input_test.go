package sweep_test

import (
	"errors"
	"testing"
	"time"

	"moebench/internal/field"
	"moebench/moe"
	nativelayer "moebench/native/layer"
	"moebench/sweep"
)

// Each refusal of the caller's input names its field, and its text is
// what a command line shows after the field's flag.
func TestInputErrors(t *testing.T) {
	t.Parallel()
	base := pib(t)
	okOptions := nativelayer.Options{Warmup: 1, Reps: 1, NICSMs: 1, BgSMs: 1, Timeout: time.Second}
	for _, tc := range []struct {
		name string
		err  func() error
		want string // the error's text
		fld  string // its first field
	}{
		{"set without a value", func() error { _, err := sweep.SetAxes(base, []string{"gpu.sms="}, false); return err }, `set "gpu.sms=": no value`, "set"},
		{"set without =", func() error { _, err := sweep.SetAxes(base, []string{"gpu.sms"}, false); return err }, `set "gpu.sms": want name=value`, "set"},
		{"a list where one is taken", func() error { _, err := sweep.SetAxes(base, []string{"gpu.sms=1,2"}, true); return err }, `set "gpu.sms=1,2": one value only`, "set"},
		{"an over-limit name unknown", func() error { return sweep.CheckOver([]string{"nope"}) }, "", "over-limit"},
		{"an empty over-limit name", func() error { return sweep.CheckOver([]string{" "}) }, "", "over-limit"},
		{"a scaled combine type", func() error { s := shape(16, 8); return sweep.DTypes(&s, "", "fp8") }, "combine-dtype fp8: a dispatch type only; combine sends bf16, fp16 or fp32", "combine-dtype"},
		{"an unknown dispatch type", func() error { s := shape(16, 8); return sweep.DTypes(&s, "fp4", "") }, "", "dispatch-dtype"},
		{"one schedule taken", func() error { _, err := sweep.Schedules("none,hook", true); return err }, "overlap none,hook: this command takes one schedule", "overlap"},
		{"a schedule twice", func() error { _, err := sweep.Schedules("hook,hook", false); return err }, "overlap: hook twice", "overlap"},
		{"an unknown mode", func() error { _, err := sweep.Modes([]string{"fast"}); return err }, "", "mode"},
		{"an unknown background", func() error { _, err := sweep.Backgrounds([]string{"loud"}); return err }, "", "background"},
		{"a loss rate of 1", func() error { return sweep.Faults{Loss: []float64{1}, Swept: true}.Check() }, "loss 1: want a rate from 0 to below 1", "loss"},
		{"too many seeds", func() error { return sweep.Faults{Specs: []string{"slow:1:2"}, Seeds: sweep.MaxSeeds + 1}.Check() }, "seeds 10001: want 1 to 10000", "seeds"},
		{"a fault that does not parse", func() error { return sweep.Faults{Specs: []string{"melt:1"}}.Check() }, "", "fault"},
		{"no timed repetition", func() error { o := okOptions; o.Reps = 0; return o.Check() }, "reps 0: must be at least 1", "reps"},
		{"a timeout too short", func() error { o := okOptions; o.Timeout = time.Millisecond; return o.Check() }, "timeout 1ms: want 10ms to 1h", "timeout"},
		{"warm-up past 32 bits", func() error { o := okOptions; o.Warmup = 1 << 31; return o.Check() }, "warmup 2147483648: more than the 2147483647 the native library counts (32 bits)", "warmup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.err()
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			fs := field.Fields(err)
			if len(fs) == 0 || fs[0].Field != tc.fld {
				t.Errorf("error %q names fields %v, want %s first", err, fs, tc.fld)
			}
		})
	}
	if err := okOptions.Check(); err != nil {
		t.Errorf("good options: %v", err)
	}
	if _, err := sweep.SetAxes(base, []string{"gpu.sms=1,2"}, true); !errors.Is(err, sweep.ErrList) || !errors.Is(err, sweep.ErrInput) {
		t.Errorf("a list where one is taken: %v, want ErrList and ErrInput", err)
	}
	axes, err := sweep.SetAxes(base, []string{" gpu.sms = 100, 120 ", "nic.max_qps=300"}, false)
	if d := diff([]sweep.SetAxis{{"gpu.sms", []string{"100", "120"}}, {"nic.max_qps", []string{"300"}}}, axes); err != nil || d != "" {
		t.Errorf("axes: %v%s", err, d)
	}
	s := shape(16, 8)
	if err := sweep.DTypes(&s, "bf16", "fp32"); err != nil || s.Dispatch != moe.BF16 || s.Combine != moe.FP32 {
		t.Errorf("bf16, fp32: %v, %s, %s", err, s.Dispatch, s.Combine)
	}
}
