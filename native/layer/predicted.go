package layer

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/native"
	"moebench/profile"
)

// OnProfile is o for a run on prof: with Pace, the emulated NIC paced at
// prof's line rate (its efficiency applied) and message rate.
func (o Options) OnProfile(prof *profile.Profile) Options {
	if o.Pace {
		o.LineGBs = prof.Get("link.gbps") * prof.Get("link.efficiency") / 8
		o.MsgMps = prof.Get("nic.msg_rate_mps")
	}
	return o
}

// RunPredicted runs routing rt through path tr (Run) and models the same
// run on prof beside it (Predict). A run that failed its checks is
// returned with checkErr, the measurement still there to report; a run
// the library or the plan refuses is an error naming the path that
// wraps ErrPlan or native.ErrBadArgument.
func RunPredicted(lib Runner, rt *moe.Routing, tr Transport, o Options, bg moe.Background, prof *profile.Profile,
	log *zap.Logger) (m *Measurement, model *moe.Result, checkErr, err error) {
	m, err = Run(lib, rt, tr, o, bg)
	switch {
	case errors.Is(err, ErrPlan) || errors.Is(err, native.ErrBadArgument):
		return nil, nil, nil, fmt.Errorf("%s: %w", tr.Name(), err)
	case errors.Is(err, native.ErrCheck) && m != nil:
		checkErr = err
	case err != nil:
		return nil, nil, nil, err
	}
	model, err = Predict(rt, m.Config, m.Result.Workers, tr, prof, bg, log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: the model of the native run: %w", tr.Name(), err)
	}
	return m, model, checkErr, nil
}

// Check refuses counts a caller asks for that the library cannot run: a
// negative warm-up, no timed repetition, fewer than one SM for the
// emulated NIC or the background posters, a timeout outside 10 ms to an
// hour, and counts past the library's 32-bit integers.
func (o Options) Check() error {
	switch {
	case o.Warmup < 0:
		return field.Valuef("warmup", o.Warmup, "must be 0 or more")
	case o.Reps < 1:
		return field.Valuef("reps", o.Reps, "must be at least 1")
	case o.NICSMs < 1:
		return field.Valuef("nic-sms", o.NICSMs, "the emulated NIC needs at least one SM")
	case o.BgSMs < 1:
		return field.Valuef("bg-sms", o.BgSMs, "must be at least 1")
	case o.Timeout < 10*time.Millisecond || o.Timeout > time.Hour:
		return field.Valuef("timeout", o.Timeout, "want 10ms to 1h")
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"warmup", o.Warmup}, {"reps", o.Reps}, {"nic-sms", o.NICSMs}, {"bg-sms", o.BgSMs}} {
		if c.v > math.MaxInt32 {
			return field.Valuef(c.name, c.v, "more than the %d the native library counts (32 bits)", math.MaxInt32)
		}
	}
	return nil
}
