package published

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/inputfile"
	"moebench/internal/report"
)

// Runs are a user's own runs of DeepEP's tests, each figure a Row whose
// Source is the file and line it was read from.
type Runs struct {
	Platform string // what the file says it was measured on
	Rows     []Row
}

// runFields is one run as a file writes it: JSON keys and CSV columns
// alike. A nil field is absent.
type runFields struct {
	Name          *string `json:"name,omitempty"`
	Mode          *string `json:"mode,omitempty"`
	Ranks         *int    `json:"ranks,omitempty"`
	GPUsPerNode   *int    `json:"gpus_per_node,omitempty"`
	Experts       *int    `json:"experts,omitempty"`
	TopK          *int    `json:"topk,omitempty"`
	TopKGroups    *int    `json:"topk_groups,omitempty"`
	ExpertGroups  *int    `json:"expert_groups,omitempty"`
	Hidden        *int    `json:"hidden,omitempty"`
	Tokens        *int    `json:"tokens,omitempty"`
	NVLink        *bool   `json:"nvlink,omitempty"`
	DispatchDType *string `json:"dispatch_dtype,omitempty"`
	// The figures DeepEP's tests print: test_low_latency.py's avg_t of
	// dispatch and combine; test_internode.py's "GB/s (RDMA)" and either
	// normal test's "GB/s (NVL)".
	DispatchUs      *float64 `json:"dispatch_us,omitempty"`
	CombineUs       *float64 `json:"combine_us,omitempty"`
	DispatchRDMAGBs *float64 `json:"dispatch_rdma_gbs,omitempty"`
	CombineRDMAGBs  *float64 `json:"combine_rdma_gbs,omitempty"`
	DispatchNVLGBs  *float64 `json:"dispatch_nvl_gbs,omitempty"`
	CombineNVLGBs   *float64 `json:"combine_nvl_gbs,omitempty"`
}

// figures are runFields' measured values in file order, with the phase and
// the metric each one is.
func (f *runFields) figures() []struct {
	key, phase, metric string
	v                  *float64
} {
	return []struct {
		key, phase, metric string
		v                  *float64
	}{
		{"dispatch_us", "dispatch", MeanUs, f.DispatchUs},
		{"combine_us", "combine", MeanUs, f.CombineUs},
		{"dispatch_rdma_gbs", "dispatch", DeepEPGBps, f.DispatchRDMAGBs},
		{"combine_rdma_gbs", "combine", DeepEPGBps, f.CombineRDMAGBs},
		{"dispatch_nvl_gbs", "dispatch", NVLinkGBps, f.DispatchNVLGBs},
		{"combine_nvl_gbs", "combine", NVLinkGBps, f.CombineNVLGBs},
	}
}

// runKeys are runFields' keys, in order.
var runKeys = func() []string {
	t := reflect.TypeFor[runFields]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return keys
}()

// RunKeys are the keys a run may have: JSON's and the CSV header's.
func RunKeys() []string { return slices.Clone(runKeys) }

// ParseRuns reads a file of a user's runs of DeepEP's tests: JSON, an
// object {"platform": "...", "runs": [{...}, ...]}, or CSV, a header of
// the same keys and a run a line ('#' starts a comment). name is the file,
// for errors, which say "NAME:LINE: run N: field: problem".
func ParseRuns(name string, data []byte) (Runs, error) {
	text := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	var (
		runs   Runs
		fields []runFields
		lines  []int
		err    error
	)
	if len(text) > 0 && (text[0] == '{' || text[0] == '[') {
		runs.Platform, fields, lines, err = parseRunsJSON(name, data)
	} else {
		fields, lines, err = parseRunsCSV(name, data)
	}
	if err != nil {
		return Runs{}, err
	}
	if len(fields) == 0 {
		return Runs{}, fmt.Errorf("%s: no runs (want a run of DeepEP's tests a CSV line or \"runs\" element)", name)
	}
	for i := range fields {
		rows, err := fields[i].rows(name, lines[i])
		if err != nil {
			return Runs{}, fmt.Errorf("%s:%d: run %d: %w", name, lines[i], i+1, err)
		}
		runs.Rows = append(runs.Rows, rows...)
	}
	return runs, nil
}

// LooksLikeRuns says whether data reads as a file of DeepEP runs (a JSON
// object with "runs", or a CSV header naming mode and ranks), to tell it
// from another kind of measurement given in its place.
func LooksLikeRuns(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) == nil {
		raw, ok := top["runs"]
		if !ok {
			return false
		}
		// calibrate --layer's raw runs also list "runs", each a grid
		// "point" on a measured "device".
		var runs []map[string]json.RawMessage
		if _, dev := top["device"]; dev || json.Unmarshal(raw, &runs) == nil && len(runs) > 0 && runs[0]["point"] != nil {
			return false
		}
		return true
	}
	var head string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			head = l
			break
		}
	}
	cols := strings.Split(head, ",")
	has := func(k string) bool {
		for _, c := range cols {
			if strings.TrimSpace(c) == k {
				return true
			}
		}
		return false
	}
	return has("mode") && has("ranks")
}

// lineAt is the line of data's byte off.
func lineAt(data []byte, off int64) int {
	return 1 + bytes.Count(data[:max(0, min(int(off), len(data)))], []byte("\n"))
}

// parseRunsJSON reads the JSON form, and the line each run begins on.
func parseRunsJSON(name string, data []byte) (platform string, fields []runFields, lines []int, err error) {
	// The whole first: a syntax error, or a top level not an object, at
	// its line.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return "", nil, nil, inputfile.JSONError(name, data, err)
	}
	// Then token by token, valid now, for where each run begins.
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return "", nil, nil, inputfile.JSONError(name, data, err)
	}
	// skip moves past the space, ':' and ',' before a value.
	skip := func(off int64) int64 {
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
			off++
		}
		return off
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, nil, inputfile.JSONError(name, data, err)
		}
		key, _ := tok.(string)
		at := lineAt(data, dec.InputOffset())
		if seen[key] {
			return "", nil, nil, fmt.Errorf("%s:%d: %s twice", name, at, report.Quote(key))
		}
		seen[key] = true
		switch key {
		case "platform":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return "", nil, nil, inputfile.JSONError(name, data, err)
			}
			if err := json.Unmarshal(raw, &platform); err != nil {
				return "", nil, nil, fmt.Errorf("%s:%d: field platform: %s", name, at, inputfile.JSONProblem(err))
			}
		case "runs":
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				return "", nil, nil, fmt.Errorf("%s:%d: field runs: want an array of runs", name, at)
			}
			for dec.More() {
				line := lineAt(data, skip(dec.InputOffset()))
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return "", nil, nil, inputfile.JSONError(name, data, err)
				}
				f, err := decodeRun(raw)
				if err != nil {
					at := line
					var typ *json.UnmarshalTypeError
					if errors.As(err, &typ) {
						at += bytes.Count(raw[:max(0, min(int(typ.Offset), len(raw)))], []byte("\n"))
					}
					return "", nil, nil, fmt.Errorf("%s:%d: run %d: %s", name, at, len(fields)+1, inputfile.JSONProblem(err))
				}
				fields, lines = append(fields, f), append(lines, line)
			}
			if _, err := dec.Token(); err != nil { // ]
				return "", nil, nil, inputfile.JSONError(name, data, err)
			}
		default:
			return "", nil, nil, fmt.Errorf("%s:%d: unknown field %s (want platform and runs)", name, at, report.Quote(key))
		}
	}
	if !seen["runs"] {
		return "", nil, nil, fmt.Errorf("%s: no \"runs\" (want an object with \"runs\", a list of runs of DeepEP's tests)", name)
	}
	return platform, fields, lines, nil
}

// decodeRun decodes one run's object, refusing keys it does not know.
func decodeRun(raw []byte) (runFields, error) {
	var f runFields
	if len(raw) == 0 || raw[0] != '{' {
		return f, errors.New("want an object of a run's conditions and figures")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return f, err
	}
	return f, nil
}

// parseRunsCSV reads the CSV form: a header of runFields' keys, then a run
// a line; an empty cell is an absent field.
func parseRunsCSV(name string, data []byte) (fields []runFields, lines []int, err error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	csvErr := func(err error) error {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	head, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s: empty, want a header of %s and a run a line (or JSON)", name, strings.Join(runKeys, ","))
		}
		return nil, nil, csvErr(err)
	}
	headLine, _ := r.FieldPos(0)
	index := make([]int, len(head)) // head's column i is runFields' field index[i]
	seen := map[string]bool{}
	for i, h := range head {
		h = strings.TrimSpace(h)
		k := slices.Index(runKeys, h)
		if k < 0 {
			return nil, nil, fmt.Errorf("%s:%d: column %d: unknown key %s (want %s)", name, headLine, i+1, report.Quote(h), strings.Join(runKeys, ", "))
		}
		if seen[h] {
			return nil, nil, fmt.Errorf("%s:%d: column %s twice", name, headLine, h)
		}
		seen[h], index[i] = true, k
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return fields, lines, nil
		}
		if err != nil {
			return nil, nil, csvErr(err)
		}
		line, _ := r.FieldPos(0)
		var f runFields
		v := reflect.ValueOf(&f).Elem()
		for i, cell := range rec {
			cell = strings.TrimSpace(cell)
			if cell == "" {
				continue
			}
			if err := setField(v.Field(index[i]), cell); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: run %d: field %s: %w", name, line, len(fields)+1, runKeys[index[i]], err)
			}
		}
		fields, lines = append(fields, f), append(lines, line)
	}
}

// setField sets the pointer field v from a CSV cell.
func setField(v reflect.Value, cell string) error {
	p := reflect.New(v.Type().Elem())
	switch x := p.Interface().(type) {
	case *string:
		*x = cell
	case *int:
		n, err := strconv.Atoi(cell)
		if err != nil {
			return fmt.Errorf("want a whole number, not %s", report.Quote(cell))
		}
		*x = n
	case *bool:
		b, err := strconv.ParseBool(cell)
		if err != nil {
			return fmt.Errorf("want true or false, not %s", report.Quote(cell))
		}
		*x = b
	case *float64:
		f, err := strconv.ParseFloat(cell, 64)
		if err != nil {
			return fmt.Errorf("want a number, not %s", report.Quote(cell))
		}
		*x = f
	}
	v.Set(p)
	return nil
}

// cellText bounds a run's name to a table cell.
func cellText(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return s
}

// rows checks a run's conditions and figures and returns a Row a figure,
// its source the file name and the run's line.
func (f *runFields) rows(name string, line int) ([]Row, error) {
	var c Conditions
	str := func(key string, p *string, want ...string) (string, error) {
		if p == nil {
			return "", fmt.Errorf("no %s (want %s)", key, strings.Join(want, " or "))
		}
		if !slices.Contains(want, *p) {
			return "", fmt.Errorf("field %s: %s, want %s", key, report.Quote(*p), strings.Join(want, " or "))
		}
		return *p, nil
	}
	var err error
	if c.Mode, err = str("mode", f.Mode, LL, Normal); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		key      string
		p        *int
		to       *int
		optional bool
	}{
		{"ranks", f.Ranks, &c.Ranks, false}, {"gpus_per_node", f.GPUsPerNode, &c.GPUsPerNode, false},
		{"experts", f.Experts, &c.Experts, false}, {"topk", f.TopK, &c.TopK, false},
		{"topk_groups", f.TopKGroups, &c.TopKGroups, true}, {"expert_groups", f.ExpertGroups, &c.ExpertGroups, true},
		{"hidden", f.Hidden, &c.Hidden, false}, {"tokens", f.Tokens, &c.Tokens, false},
	} {
		switch {
		case x.p == nil && x.optional:
		case x.p == nil:
			return nil, fmt.Errorf("no %s", x.key)
		case *x.p < 1:
			return nil, fmt.Errorf("field %s: %d, want at least 1", x.key, *x.p)
		default:
			*x.to = *x.p
		}
	}
	if c.ExpertGroups > 0 && c.TopKGroups == 0 {
		return nil, errors.New("field expert_groups: no topk_groups to limit a token's groups")
	}
	if c.DispatchDType, err = str("dispatch_dtype", f.DispatchDType, "fp8", "bf16"); err != nil {
		return nil, err
	}
	switch {
	case c.Mode == Normal && f.NVLink != nil && !*f.NVLink:
		return nil, errors.New("field nvlink: false, but DeepEP's normal kernels always forward over NVLink inside a node")
	case c.Mode == Normal:
		c.NVLink = true
	case f.NVLink == nil:
		return nil, errors.New("no nvlink (true where same-node peers use NVLink, allow_nvlink_for_low_latency_mode; false for RDMA only)")
	default:
		c.NVLink = *f.NVLink
	}
	label := fmt.Sprintf("EP%d (line %d)", c.Ranks, line)
	if f.Name != nil && strings.TrimSpace(*f.Name) != "" {
		label = cellText(strings.ToValidUTF8(strings.TrimSpace(*f.Name), "\uFFFD"))
	}
	var rows []Row
	for _, g := range f.figures() {
		if g.v == nil {
			continue
		}
		switch v := *g.v; {
		case math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
			return nil, fmt.Errorf("field %s: %v, want a positive number", g.key, v)
		case c.Mode == LL && g.metric != MeanUs:
			return nil, fmt.Errorf("field %s: a normal-mode figure; test_low_latency.py's GB/s counts other bytes: give dispatch_us and combine_us, its avg_t", g.key)
		case strings.HasSuffix(g.key, "_rdma_gbs") && c.OneNode():
			return nil, fmt.Errorf("field %s: the run is within one node (%d ranks, %d GPUs a node), where nothing crosses RDMA: give the NVL figure", g.key, c.Ranks, c.GPUsPerNode)
		}
		metric := g.metric
		if metric == NVLinkGBps && c.OneNode() {
			// test_intranode.py's GB/s (NVL) counts the tokens a rank
			// receives, its own included: the model's DeepEP figure on
			// one node.
			metric = DeepEPGBps
		}
		rows = append(rows, Row{Experiment: c.Experiment(), Case: label, Phase: g.phase, Metric: metric,
			Value: *g.v, Source: fmt.Sprintf("%s:%d", name, line), Conditions: c})
	}
	if len(rows) == 0 {
		return nil, errors.New("no figure (want dispatch_us, combine_us, dispatch_rdma_gbs, combine_rdma_gbs, dispatch_nvl_gbs or combine_nvl_gbs)")
	}
	return rows, nil
}
