package moe

import (
	"time"

	"go.uber.org/zap"

	"moebench/profile"
)

// RunLayer simulates dispatch and then combine, each from a common start
// as DeepEP times its kernels, and checks the results.
func RunLayer(cfg LayerConfig) (*Result, error) {
	if err := cfg.onProfile(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	var err error
	if cfg.own, err = ownCausesOf(cfg.Transport); err != nil {
		return nil, err
	}
	s := cfg.Routing.Shape
	res := &Result{
		Transport: cfg.Transport.Name(),
		Mode:      cfg.Mode,
		Shape:     s,
		NVLink:    cfg.NVLink,
		RouteHash: cfg.Routing.Hash(),
	}
	setPhaseFaults(&cfg, res)
	if flaps(cfg.Faults) {
		// Combine's start on the layer's clock is dispatch's end.
		cfg.InTurn = true
	}
	log := cfg.Log.With(zap.String("transport", res.Transport), zap.String("mode", cfg.Mode.String()),
		zap.Int("ranks", s.Ranks), zap.String("route", res.RouteHash))
	log.Debug("layer start", zap.Int("tokens", s.Tokens), zap.Int("experts", s.Physical()), zap.Int("topk", s.TopK),
		zap.String("background", cfg.Background.String()))
	wall := time.Now()
	if err = cfg.Mode.spec().run(&cfg, res); err != nil {
		log.Debug("layer failed", zap.Error(err))
		return nil, err
	}
	for _, ph := range []struct {
		name string
		p    *Phase
	}{{"dispatch", &res.Dispatch}, {"combine", &res.Combine}} {
		log.Debug("phase done", zap.String("phase", ph.name), zap.Float64("mean_us", ph.p.Time.Mean),
			zap.Int64("messages", ph.p.Messages), zap.Uint64("events", ph.p.Events), zap.String("bound_by", ph.p.BoundBy))
	}
	log.Info("layer simulated", zap.Uint64("events", res.Events), zap.Duration("wall", time.Since(wall)))
	if phase, f := res.Failed(); f != nil {
		// A result the faults asked for, not a fault of the run's.
		log.Info("layer failed under faults", zap.String("phase", phase), zap.Error(f))
	}
	if res.ProblemCount > 0 {
		log.Warn("layer checks failed", zap.Int("problems", res.ProblemCount), zap.Strings("first", res.Problems))
	}
	if res.Resources.ConnKnee == 0 {
		res.Resources.ConnKnee = ConnKnee(cfg.Profile)
	}
	var sum Breakdown
	for c := range sum {
		sum[c] = res.Dispatch.Breakdown[c] + res.Combine.Breakdown[c]
	}
	if sum.Total() > 0 {
		res.BoundBy = sum.Largest().String()
	}
	res.Correct = len(res.Problems) == 0
	return res, nil
}

// ConnKnee is the profile's onset of NIC connection-context pressure
// (conn.knee_connections, or the context cache's conn.entries), or 0 when
// the profile has neither.
func ConnKnee(p *profile.Profile) int {
	for _, name := range []string{"conn.knee_connections", "conn.entries"} {
		if _, declared := profile.Lookup(name); !declared {
			continue
		}
		if c, ok := p.Constant(name); ok {
			return int(c.Value)
		}
	}
	return 0
}
