package sweep

import (
	"errors"

	"moebench/internal/field"
	nativelayer "moebench/native/layer"
	"moebench/transport/preset"
)

// ErrNCCLShared refuses NCCL's all-to-all on ranks sharing a GPU, and
// ErrNCCLAlone NCCL's all-to-all with no layer path beside it: it is a
// baseline to the layer, not a layer path.
var (
	ErrNCCLShared = errors.New("NCCL runs one rank per GPU")
	ErrNCCLAlone  = errors.New("NCCL's all-to-all is a baseline beside the layer")
)

// NativePaths is what the native engine runs each of points through: the
// presets' layer paths of mechanisms (or, with byName, of the preset
// names), the direct path ("direct"), and whether NCCL's all-to-all
// (nativelayer.NCCLName) runs beside them. With byName and no mechanisms
// given, the presets alone: "all", the mechanisms' default, adds nothing
// then. The emulated NIC runs every mechanism's GPU side whatever the
// profile's adapters, so "all" takes every mechanism and the direct path.
// Its errors name the field at fault, "transport" or "preset".
func NativePaths(mechanisms, names []string, byName, mechanismsGiven bool, points []Point) ([]nativelayer.Transport, bool, error) {
	presets, direct, nccl, err := nativePresets(mechanisms, names, byName, mechanismsGiven)
	if err != nil {
		return nil, false, err
	}
	if nccl {
		for _, c := range points {
			if c.GPUs != c.Shape.Ranks {
				return nil, false, field.Valuef("transport", nativelayer.NCCLName, "%w, not %d on each", ErrNCCLShared, c.Shape.Ranks/max(1, c.GPUs))
			}
		}
	}
	var paths []nativelayer.Transport
	for _, p := range presets {
		paths = append(paths, nativelayer.Transport{Preset: p})
	}
	if direct {
		paths = append(paths, nativelayer.Transport{Direct: true})
	}
	if len(paths) == 0 {
		if nccl {
			return nil, false, field.Valuef("transport", nativelayer.NCCLName, "%w: name a layer path too", ErrNCCLAlone)
		}
		return nil, false, field.Errorf("transport", "no transport given")
	}
	return paths, nccl, nil
}

// nativePresets splits mechanisms into presets, the direct path and
// NCCL's all-to-all.
func nativePresets(mechanisms, names []string, byName, mechanismsGiven bool) (ps []preset.Preset, direct, nccl bool, err error) {
	if byName && !mechanismsGiven {
		ps, err := preset.Resolve(nil, names, true, nil)
		return ps, false, false, err
	}
	var rest []string
	for _, t := range mechanisms {
		switch t {
		case nativelayer.NCCLName:
			nccl = true
		case "direct":
			direct = true
		case "all":
			direct = true
			rest = append(rest, t)
		default:
			rest = append(rest, t)
		}
	}
	if byName || len(rest) > 0 {
		ps, err := preset.Resolve(rest, names, byName, nil)
		return ps, direct, nccl, err
	}
	return nil, direct, nccl, nil
}
