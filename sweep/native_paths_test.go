package sweep_test

import (
	"slices"
	"testing"

	"moebench/moe"
	"moebench/sweep"
)

// NativePaths takes the presets of the mechanisms or names, the direct
// path and NCCL's baseline apart, and refuses NCCL on shared GPUs, NCCL
// alone and no path at all, naming the field.
func TestNativePaths(t *testing.T) {
	t.Parallel()
	onGPUs := func(ranks, gpus int) []sweep.Point {
		return []sweep.Point{{Shape: moe.Shape{Ranks: ranks}, GPUs: gpus}}
	}
	for _, tc := range []struct {
		name          string
		mechs, names  []string
		byName, given bool
		points        []sweep.Point
		want          []string // the paths' names
		nccl          bool
		field         string // the field refused, "" for none
		is            error
	}{
		{name: "direct", mechs: []string{"direct"}, given: true, points: onGPUs(2, 2), want: []string{"direct"}},
		{name: "mechanisms then direct", mechs: []string{"direct", "mini-gda"}, given: true, points: onGPUs(2, 2), want: []string{"mini-gda", "direct"}},
		{name: "presets alone", mechs: []string{"all"}, names: []string{"deepep-v1"}, byName: true, points: onGPUs(2, 2), want: []string{"deepep-v1"}},
		{name: "presets and direct", mechs: []string{"direct"}, names: []string{"deepep-v1"}, byName: true, given: true, points: onGPUs(2, 2), want: []string{"deepep-v1", "direct"}},
		{name: "nccl beside", mechs: []string{"direct", "nccl-a2a"}, given: true, points: onGPUs(2, 2), want: []string{"direct"}, nccl: true},
		{name: "nccl on shared GPUs", mechs: []string{"direct", "nccl-a2a"}, given: true, points: onGPUs(4, 2), field: "transport", is: sweep.ErrNCCLShared},
		{name: "nccl alone", mechs: []string{"nccl-a2a"}, given: true, points: onGPUs(2, 2), field: "transport", is: sweep.ErrNCCLAlone},
		{name: "none", given: true, points: onGPUs(2, 2), field: "transport"},
		{name: "unknown mechanism", mechs: []string{"bogus"}, given: true, points: onGPUs(2, 2), field: "transport"},
		{name: "unknown preset", names: []string{"nope"}, byName: true, points: onGPUs(2, 2), field: "preset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			paths, nccl, err := sweep.NativePaths(tc.mechs, tc.names, tc.byName, tc.given, tc.points)
			if tc.field != "" {
				wantRefusal(t, err, tc.field, tc.is)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range paths {
				got = append(got, p.Name())
			}
			if !slices.Equal(got, tc.want) || nccl != tc.nccl {
				t.Errorf("paths %v, NCCL %v; want %v, %v", got, nccl, tc.want, tc.nccl)
			}
		})
	}
}
