package layer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"moebench/internal/inputfile"
)

// Measured is how a layer calibration's raw measurement rides in a
// profile fragment ("measured": {"layer": ...}), apart from the GPU-side
// calibration's.
type Measured struct {
	Layer *Raw `json:"layer"`
}

// ParseMeasured reads a layer measurement: a fragment's measured
// section, a whole fragment, or calibrate --layer's raw file. ok is false
// when data holds no layer measurement.
func ParseMeasured(data []byte) (*Raw, bool, error) {
	var probe struct {
		Layer    json.RawMessage `json:"layer"`
		Measured json.RawMessage `json:"measured"`
		Runs     json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, false, inputfile.JSONError("", data, err)
	}
	top := true
	switch {
	case probe.Layer != nil:
		data, top = probe.Layer, false
	case probe.Measured != nil:
		r, ok, err := ParseMeasured(probe.Measured)
		if err != nil {
			err = fmt.Errorf("measured: %w", err)
		}
		return r, ok, err
	case probe.Runs == nil:
		return nil, false, nil
	}
	var raw Raw
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		if !top { // a section: its lines are not the file's
			return nil, true, fmt.Errorf("layer: %s", inputfile.JSONProblem(err))
		}
		return nil, true, inputfile.JSONError("", data, err)
	}
	if err := raw.Check(); err != nil {
		return nil, true, err
	}
	return &raw, true, nil
}

// ErrNoLayer is AddMeasured's error for data that holds no layer
// measurement.
var ErrNoLayer = errors.New("no layer measurement")

// AddMeasured reads the layer measurement in data (ParseMeasured) and
// merges it into acc (Raw.Merge; nil: the first), so that runs measured
// apart on one GPU are fitted together.
func AddMeasured(acc *Raw, data []byte) (*Raw, error) {
	r, ok, err := ParseMeasured(data)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrNoLayer
	case acc == nil:
		return r, nil
	}
	return acc.Merge(r)
}
