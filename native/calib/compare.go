package calib

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"moebench/internal/field"
	"moebench/internal/inputfile"
	"moebench/microbench"
	nativelayer "moebench/native/layer"
	"moebench/profile"
	"moebench/transport/gda"
)

// Compared is a GPU's measurement beside the model on a profile: a
// GPU-side record's rows (GPU, Rows and their Summary) or a layer
// measurement's runs (Layer, Runs), with the header's account of them:
// what the figures are and, for a GPU-side record, where it was measured.
type Compared struct {
	GPU     gda.Measured
	Rows    []microbench.Row
	Summary microbench.Summary
	Layer   *nativelayer.Raw
	Runs    []nativelayer.Comparison
	Figures string
	Note    string
}

// ErrNoIssue is CompareFile's error for a GPU-side record without the
// issue times every measurement begins with.
var ErrNoIssue = errors.New("no issue_ns measurements")

// CompareFile puts the model on p beside the measurement in data, read
// from path: the runs of a layer measurement where data holds one
// (nativelayer.ParseMeasured), else a GPU-side record (Measure's, as its
// raw file or a fragment's carries it). Errors reading data, ErrNoIssue
// among them, are field.Errors of measured naming path.
func CompareFile(p *profile.Profile, path string, data []byte) (Compared, error) {
	if raw, ok, err := nativelayer.ParseMeasured(data); ok {
		if err != nil {
			return Compared{}, field.Valuef("measured", path, "%w", err)
		}
		cs, err := nativelayer.Compare(raw, p)
		if err != nil {
			return Compared{}, err
		}
		return Compared{Layer: raw, Runs: cs, Figures: "modelled vs measured by the native engine on " + raw.Device.Name}, nil
	}
	var m gda.Measured
	// The record's first JSON value, as the files validate read have
	// always been taken.
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return Compared{}, field.Valuef("measured", path, "%w", inputfile.JSONError("", data, err))
	}
	if len(m.IssueNs) == 0 {
		return Compared{}, field.Valuef("measured", path, "%w", ErrNoIssue)
	}
	return Compare(p, m, false)
}

// Compare puts the model on p beside the GPU-side record m
// (microbench.CompareMeasured, whose model NIC never binds the rates: no
// measuring host has an RDMA NIC). here says m was measured just now on
// this host, which the note then says has none; else the note names m's
// host.
func Compare(p *profile.Profile, m gda.Measured, here bool) (Compared, error) {
	rows, err := microbench.CompareMeasured(p, m)
	if err != nil {
		return Compared{}, err
	}
	c := Compared{GPU: m, Rows: rows, Summary: microbench.Summarize(rows), Figures: "modelled vs measured on " + m.GPU}
	c.Note = fmt.Sprintf("measured: %s, driver %s, CUDA %s, SM clock %.0f MHz, doorbell %s", m.GPU, m.Driver, m.CUDA, m.ClockMHz, m.DoorbellTarget)
	if here {
		c.Figures = "modelled beside measured on " + m.GPU
		c.Note += " (no NIC on this host: the model's NIC is made non-binding for rates)"
	} else {
		c.Note += "; host " + m.Host
	}
	return c, nil
}
