package main

import (
	"errors"
	"fmt"
	"strings"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/sweep"
	"moebench/transport/preset"
)

// precheck refuses, before any routing is generated or any layer built, a
// configuration that cannot run or cannot be deployed (queues too shallow
// for the mode, buffers larger than the GPU, more queues than the NIC
// holds), naming the point when there are several, and then a --set that
// no model of these points reads: the models are built, not run, and read
// their constants as they are built.
func (f *layerFlags) precheck(command string, base *profile.Profile, points []sweep.Point, presets []preset.Preset) error {
	err := f.layer().CheckAll(base, points, presets)
	if pe := (*sweep.PointError)(nil); errors.As(err, &pe) {
		c := pe.Point
		return fmt.Errorf("%w: point EP%d × %d tokens × %d experts, %s mode%s: %s", errUsage,
			c.Shape.Ranks, c.Shape.Tokens, c.Shape.Physical(), c.Mode, pointSets(c), message(pointErr(pe.Err, true)))
	}
	if err != nil {
		return pointErr(err, true)
	}
	return checkSetsRead(command, base, f.prof.sets)
}

// pointSets is a point's --set values and knobs for a message, "" when none.
func pointSets(c sweep.Point) string {
	var s []string
	for k, v := range c.Knobs {
		s = append(s, "--"+k+" "+v)
	}
	for _, kv := range c.Sets {
		s = append(s, "--set "+kv)
	}
	if len(s) == 0 {
		return ""
	}
	return ", " + strings.Join(s, " ")
}

// precheckErr turns a layer's refusal into a usage error naming the flags.
func precheckErr(ce *sweep.CheckError) error {
	p, err := ce.Preset, ce.Err
	var capErr *moe.CapacityError
	switch {
	case errors.Is(err, moe.ErrQueueDepth):
		return fmt.Errorf("%w: preset %s: %w", errUsage, p.Name, err)
	case errors.As(err, &capErr) && capErr.Kind == moe.CapacityWRs:
		return fmt.Errorf("%w: preset %s: %v", errUsage, p.Name, err)
	case errors.As(err, &capErr):
		var s []string
		for _, in := range ce.Culprits() {
			s = append(s, strings.TrimSuffix("--"+in.Field+" "+in.Value, " ")+in.Note)
		}
		return fmt.Errorf("%w: preset %s: %s: %v", errUsage, p.Name, strings.Join(s, ", "), err)
	}
	// A refusal of one input (a shape field, --num-sms, --chunk) is the
	// user's to change, whatever the preset.
	if _, ok := err.(*field.Error); ok {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return fmt.Errorf("%w: preset %s: %w", errUsage, p.Name, err)
}
