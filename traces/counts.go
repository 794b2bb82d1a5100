package traces

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/field"
	"moebench/internal/inputfile"
)

// countGroup is one (step, rank) of per-layer, per-expert counts.
type countGroup struct {
	step, rank int
	// load returns layer l's counts (len = experts) into dst.
	load func(l int, dst []float64) []float64
}

// countsTrace synthesizes one record per (group, layer) on demand, so even
// a large count matrix never exists as tokens all at once.
type countsTrace struct {
	h      Header
	groups []countGroup
	tokens int // 0 = counts are used as given (they are integral)
	seed   uint64
	g, l   int
	fbuf   []float64
	ibuf   []int64
	file   string
}

func (c *countsTrace) Header() Header { return c.h }

func (c *countsTrace) Next() (Record, error) {
	if c.g >= len(c.groups) {
		return Record{}, io.EOF
	}
	g, l := c.groups[c.g], c.l
	if c.l++; c.l == c.h.Layers {
		c.l, c.g = 0, c.g+1
	}
	c.fbuf = g.load(l, c.fbuf[:0])
	var counts []int64
	if c.tokens > 0 {
		var err error
		if counts, err = Apportion(c.fbuf, int64(c.tokens)*int64(c.h.TopK)); err != nil {
			return Record{}, fmt.Errorf("%s: step %d, rank %d, layer %d: %w", c.file, g.step, g.rank, l, err)
		}
	} else {
		c.ibuf = slices.Grow(c.ibuf[:0], len(c.fbuf))[:len(c.fbuf)]
		for i, v := range c.fbuf {
			c.ibuf[i] = int64(v)
		}
		counts = c.ibuf
	}
	ids, err := Synthesize(counts, c.h.TopK, recordRNG(c.seed, g.step, l, g.rank))
	if err != nil {
		return Record{}, fmt.Errorf("%s: step %d, rank %d, layer %d: %w", c.file, g.step, g.rank, l, err)
	}
	return Record{Step: g.step, Layer: l, Rank: g.rank, TopkIdx: ids}, nil
}

// optionError is an import error that an option must fix (ErrOption),
// naming the option's field.
type optionError struct{ err error }

func (e optionError) Error() string      { return e.err.Error() }
func (e optionError) Unwrap() error      { return e.err }
func (optionError) Is(target error) bool { return target == ErrOption }

// needOption is an optionError about the option named name.
func needOption(name, format string, args ...any) error {
	return optionError{field.Errorf(name, format, args...)}
}

// newCountsTrace fills in the header shared by every count source and
// decides whether counts must be rescaled.
func newCountsTrace(file string, layers, experts, steps int, integral bool, what string, opt ImportOptions) (*countsTrace, error) {
	if opt.TopK < 1 {
		return nil, needOption("topk", "%s: %s carries no top-k; give it", file, what)
	}
	if opt.Experts > 0 && opt.Experts != experts {
		if opt.Experts < experts {
			return nil, needOption("experts", "%s: counts cover %d experts, more than the %d given", file, experts, opt.Experts)
		}
		experts = opt.Experts
	}
	c := &countsTrace{file: file, tokens: opt.Tokens, seed: opt.Seed}
	prov := fmt.Sprintf("synthesized from %s (%s), seed %d", baseName(file), what, opt.Seed)
	if c.tokens == 0 && !integral {
		c.tokens = DefaultTokens
		prov += fmt.Sprintf(", loads not integral: rescaled to %d tokens per layer", DefaultTokens)
	} else if c.tokens > 0 {
		prov += fmt.Sprintf(", rescaled to %d tokens per layer", c.tokens)
	}
	c.h = Header{
		Version: Version, IDSpace: Logical, Experts: experts, TopK: opt.TopK,
		Layers: layers, Steps: steps, EPSize: opt.EPSize, GPUsPerNode: opt.GPUsPerNode,
		Provenance: joinProvenance(prov, opt.Provenance), Synthesized: true,
	}
	if err := c.h.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// countsFromArray takes SGLang's logical_count [steps, layers, experts] or
// an EPLB weight [layers, experts].
func countsFromArray(file string, a *array, opt ImportOptions, what string) (*countsTrace, error) {
	var steps, layers, experts int
	switch len(a.shape) {
	case 2:
		steps, layers, experts = 1, a.shape[0], a.shape[1]
	case 3:
		steps, layers, experts = a.shape[0], a.shape[1], a.shape[2]
	default:
		return nil, fmt.Errorf("%s: %s has shape %s, want [steps, layers, experts] or [layers, experts]", file, a.name, shapeString(a.shape))
	}
	if steps < 1 || layers < 1 || experts < 1 {
		return nil, fmt.Errorf("%s: %s has shape %s, want no empty axis", file, a.name, shapeString(a.shape))
	}
	integral := true
	for i := range a.len() {
		v := a.float(i)
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %s%s = %v is not a non-negative count", file, a.name, index(a.shape, i), v)
		}
		if v != math.Trunc(v) || v > 1<<53 {
			integral = false
		}
	}
	c, err := newCountsTrace(file, layers, experts, steps, integral, what, opt)
	if err != nil {
		return nil, err
	}
	for s := range steps {
		c.groups = append(c.groups, countGroup{step: s, rank: -1, load: func(l int, dst []float64) []float64 {
			base := (s*layers + l) * experts
			for e := range experts {
				dst = append(dst, a.float(base+e))
			}
			for range c.h.Experts - experts {
				dst = append(dst, 0)
			}
			return dst
		}})
	}
	return c, nil
}

// maxCountsCSVBytes bounds a count CSV (an SGLang stat dump per rank or an
// EPLB load matrix), whose counts are held whole: DeepSeek-V3's 61 layers ×
// 256 experts are 15,616 counts, a few hundred KB as text; 32 MiB is a
// hundred times that.
const maxCountsCSVBytes = 32 << 20

// maxStatLineBytes bounds a line of an SGLang stat CSV, three integers:
// a longer one is not such a file.
const maxStatLineBytes = 1 << 20

// maxMatrixLineBytes bounds one row of an EPLB load matrix: a million
// experts (MaxExperts) of up to 15 characters each.
const maxMatrixLineBytes = 16 << 20

// openCountsCSV opens a count CSV, to be read no further than
// maxCountsCSVBytes; a file known to be larger is refused before it is
// read.
func openCountsCSV(path, what string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > maxCountsCSVBytes {
		f.Close()
		return nil, nil, &inputfile.TooLargeError{Name: path, What: what, Limit: maxCountsCSVBytes}
	}
	return inputfile.NewReader(f, path, what, maxCountsCSVBytes), f.Close, nil
}

// scanErr words a scanner's error at line: the file's bound, or a line
// over limit bytes.
func scanErr(name string, line int, err error, limit int) error {
	if inputfile.IsTooLarge(err) {
		return err
	}
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: a line longer than %s", name, line, inputfile.Size(int64(limit)))
	}
	return fmt.Errorf("%s:%d: %w", name, line, err)
}

// rankCounts is one rank's SGLang CSV dump: count per (layer, expert).
type rankCounts struct {
	counts          map[[2]int32]int64
	layers, experts int // one past the largest id seen
}

// parseCountsCSV reads SGLang's older dump, "layer_id,expert_id,count" per
// line, with or without that header line.
func parseCountsCSV(r io.Reader, name string) (*rankCounts, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxStatLineBytes)
	rc := &rankCounts{counts: map[[2]int32]int64{}}
	first := map[[2]int32]int{}
	line, header := 0, false
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Split(s, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 3 (layer_id,expert_id,count)", name, line, len(f))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if !header && len(first) == 0 && f[0] == "layer_id" {
			if f[1] != "expert_id" || f[2] != "count" {
				return nil, fmt.Errorf("%s:%d: header %q, want layer_id,expert_id,count", name, line, s)
			}
			header = true
			continue
		}
		var v [3]int64
		for i, fn := range []string{"layer_id", "expert_id", "count"} {
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s %q is not an integer", name, line, fn, f[i])
			}
			v[i] = x
		}
		switch {
		case v[0] < 0 || v[0] >= MaxLayers:
			return nil, fmt.Errorf("%s:%d: layer_id %d is out of range [0, %d)", name, line, v[0], MaxLayers)
		case v[1] < 0 || v[1] >= MaxExperts:
			return nil, fmt.Errorf("%s:%d: expert_id %d is out of range [0, %d)", name, line, v[1], MaxExperts)
		case v[2] < 0 || v[2] > MaxSelections:
			return nil, fmt.Errorf("%s:%d: count %d is out of range [0, %d]", name, line, v[2], MaxSelections)
		}
		key := [2]int32{int32(v[0]), int32(v[1])}
		if at, dup := first[key]; dup {
			return nil, fmt.Errorf("%s:%d: layer %d, expert %d already counted on line %d", name, line, v[0], v[1], at)
		}
		first[key] = line
		rc.counts[key] = v[2]
		rc.layers = max(rc.layers, int(v[0])+1)
		rc.experts = max(rc.experts, int(v[1])+1)
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(name, line+1, err, maxStatLineBytes)
	}
	if len(rc.counts) == 0 {
		return nil, fmt.Errorf("%s: no counts", name)
	}
	return rc, nil
}

// importCountsCSV reads one SGLang CSV per rank, rank = position in paths.
func importCountsCSV(paths []string, opt ImportOptions) (*countsTrace, error) {
	ranks := make([]*rankCounts, len(paths))
	layers, experts := 0, 0
	for i, p := range paths {
		f, closeFile, err := openCountsCSV(p, "an SGLang stat CSV")
		if err != nil {
			return nil, err
		}
		ranks[i], err = parseCountsCSV(f, p)
		closeFile()
		if err != nil {
			return nil, err
		}
		layers, experts = max(layers, ranks[i].layers), max(experts, ranks[i].experts)
	}
	what := "SGLang stat CSV"
	if len(paths) > 1 {
		what += fmt.Sprintf(", %d ranks", len(paths))
	}
	if opt.EPSize == 0 {
		opt.EPSize = len(paths)
	}
	if opt.EPSize < len(paths) {
		return nil, fmt.Errorf("%d rank files, but ep size %d", len(paths), opt.EPSize)
	}
	c, err := newCountsTrace(paths[0], layers, experts, 1, true, what, opt)
	if err != nil {
		return nil, err
	}
	for i, rc := range ranks {
		c.groups = append(c.groups, countGroup{step: 0, rank: i, load: func(l int, dst []float64) []float64 {
			for e := range c.h.Experts {
				dst = append(dst, float64(rc.counts[[2]int32{int32(l), int32(e)}]))
			}
			return dst
		}})
	}
	return c, nil
}

// parseMatrixCSV reads a load matrix: one row per layer, one column per
// expert, comma separated; blank lines and lines starting with # skipped.
func parseMatrixCSV(r io.Reader, name string) ([][]float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxMatrixLineBytes)
	var rows [][]float64
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Split(s, ",")
		if len(rows) > 0 && len(f) != len(rows[0]) {
			return nil, fmt.Errorf("%s:%d: %d columns, the first row has %d", name, line, len(f), len(rows[0]))
		}
		if len(f) > MaxExperts {
			return nil, fmt.Errorf("%s:%d: %d columns, more than %d experts", name, line, len(f), MaxExperts)
		}
		if len(rows) >= MaxLayers {
			return nil, fmt.Errorf("%s:%d: more than %d rows (layers)", name, line, MaxLayers)
		}
		row := make([]float64, len(f))
		for i, x := range f {
			v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("%s:%d: column %d: %q is not a non-negative number", name, line, i+1, strings.TrimSpace(x))
			}
			row[i] = v
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, scanErr(name, line+1, err, maxMatrixLineBytes)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return rows, nil
}

// importEPLB reads an EPLB weight[layers, experts] from .npy, .npz or CSV.
func importEPLB(path string, opt ImportOptions) (ReadCloser, error) {
	fm, _ := sniffFile(path) // CSV has no magic: anything unrecognised is read as CSV
	switch fm {
	case FormatNPZ:
		return importNPZFile(path, opt, true)
	case FormatNPY:
		a, err := readNPYFile(path, "weight", opt.MaxBytes)
		if err != nil {
			return nil, err
		}
		if len(a.shape) != 2 {
			return nil, fmt.Errorf("%s: weight has shape %s, want [layers, experts]", path, shapeString(a.shape))
		}
		c, err := countsFromArray(path, a, opt, "EPLB weight")
		if err != nil {
			return nil, err
		}
		return nopCloser{c}, nil
	}
	f, closeFile, err := openCountsCSV(path, "an EPLB load matrix CSV")
	if err != nil {
		return nil, err
	}
	rows, err := parseMatrixCSV(f, path)
	closeFile()
	if err != nil {
		return nil, err
	}
	a := matrixArray(rows)
	c, err := countsFromArray(path, a, opt, "EPLB weight")
	if err != nil {
		return nil, err
	}
	return nopCloser{c}, nil
}

// matrixArray packs CSV rows as a <f8 array so they share countsFromArray.
func matrixArray(rows [][]float64) *array {
	a := &array{name: "weight", descr: "<f8", kind: 'f', size: 8, shape: []int{len(rows), len(rows[0])}}
	a.data = make([]byte, 0, 8*len(rows)*len(rows[0]))
	for _, r := range rows {
		for _, v := range r {
			a.data = appendFloat64(a.data, v)
		}
	}
	return a
}

func appendFloat64(b []byte, v float64) []byte {
	u := math.Float64bits(v)
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
}
