package traces

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"moebench/internal/field"
)

// Layout says which axis of a 3-D id array is the layer axis.
type Layout string

// Layouts of [A, B, k] id arrays.
const (
	LayoutAuto  Layout = ""             // decide from the array name or the physical map
	LayersFirst Layout = "layers-first" // [layers, tokens, k], SGLang's topk_ids_of_layer
	TokensFirst Layout = "tokens-first" // [tokens, layers, k], vLLM/SGLang routed_experts, Megatron routing_indices
)

// DefaultTokens is the per-(step, layer) token target used when a load
// matrix is not integral and no target was given: enough tokens that
// rounding moves each expert's share by well under a percent at 256 experts
// and top-8.
const DefaultTokens = 4096

// ImportOptions steer Import. Zero values mean "from the data".
type ImportOptions struct {
	From   Format // input format; "" = detect from magic bytes and extension
	Layout Layout
	// TopK is the top-k of tokens synthesized from counts (count sources do
	// not record it); required for them, ignored otherwise.
	TopK int
	// Experts is the number of logical experts; 0 infers it (largest id + 1,
	// or the width of a count matrix).
	Experts int
	// Tokens rescales each (step, layer) of a count source to this many
	// tokens; 0 keeps integral counts exactly.
	Tokens      int
	EPSize      int
	GPUsPerNode int
	Seed        uint64 // for synthesized tokens
	Provenance  string // appended to the generated provenance line
	// MaxBytes refuses a .npy array, or a .npz member, whose header
	// declares more data than this, before anything is read or
	// allocated (arrays are held whole); 0 = no limit.
	MaxBytes int64
}

// Names of id arrays accepted in .npz files, in order of preference, and the
// layout each implies.
var idArrayNames = []struct {
	name   string
	layout Layout
}{
	{"topk_ids", LayoutAuto},
	{"routed_experts", TokensFirst},
	{"routing_indices", TokensFirst},
}

type nopCloser struct{ Reader }

func (nopCloser) Close() error { return nil }

// Import reads foreign routing data (or a native trace) and returns a
// Reader over it as a trace. Several paths are accepted only for
// sglang-stat-csv, one file per rank in rank order. Shapes, dtypes and
// ranges are checked before the first record is returned; errors name the
// file and the element, line or field at fault.
func Import(paths []string, opt ImportOptions) (ReadCloser, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no input files")
	}
	from := opt.From
	if from == "" {
		f, err := sniffFile(paths[0])
		if err != nil {
			return nil, err
		}
		from = f
	}
	if len(paths) > 1 && from != FormatSGLangStatCSV {
		return nil, fmt.Errorf("%d input files given; only %s takes more than one (one per rank)", len(paths), FormatSGLangStatCSV)
	}
	path := paths[0]
	switch from {
	case FormatBinary, FormatJSONL:
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		var r Reader
		if from == FormatBinary {
			r, err = NewBinaryReader(f, path)
		} else {
			r, err = NewJSONLReader(f, path)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return fileReader{Reader: r, f: f}, nil
	case FormatNPY:
		a, err := readNPYFile(path, "topk_ids", opt.MaxBytes)
		if err != nil {
			return nil, err
		}
		r, err := idsTraceFrom(path, a, nil, nil, make([]*array, 3), opt)
		return nopCloser{r}, err
	case FormatNPZ:
		return importNPZFile(path, opt, false)
	case FormatSGLangStatCSV:
		r, err := importCountsCSV(paths, opt)
		return nopCloser{r}, err
	case FormatEPLB:
		return importEPLB(path, opt)
	}
	return nil, fmt.Errorf("input format %q is not one of bin, jsonl, npy, npz, sglang-stat-csv, eplb", from)
}

func sniffFile(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	fm := Sniff(head[:n], path)
	if fm == "" {
		return "", field.Errorf("from", "%s: cannot tell the input format; name it", path)
	}
	return fm, nil
}

func readNPYFile(path, role string, maxBytes int64) (*array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readNPY(bufio.NewReaderSize(f, bufferedIOBytes), st.Size(), maxBytes, path, role)
}

func importNPZFile(path string, opt ImportOptions, eplb bool) (ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // every array is read before the reader is returned
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	z, err := openNPZ(f, st.Size(), path)
	if err != nil {
		return nil, err
	}
	z.maxBytes = opt.MaxBytes
	r, err := importNPZ(z, opt, eplb)
	if err != nil {
		return nil, err
	}
	return nopCloser{r}, nil
}

// importNPZ picks the arrays the archive holds: per-token ids first, then
// SGLang stat counts, then an EPLB load matrix.
func importNPZ(z *npz, opt ImportOptions, eplb bool) (Reader, error) {
	if !eplb {
		for _, c := range idArrayNames {
			if !z.has(c.name) {
				continue
			}
			ids, err := z.read(c.name)
			if err != nil {
				return nil, err
			}
			if opt.Layout == LayoutAuto {
				opt.Layout = c.layout
			}
			var extra [5]*array
			for i, n := range []string{"topk_weights", "physical_to_logical_map", "segment_offsets", "segment_steps", "segment_ranks"} {
				if extra[i], err = z.read(n); err != nil {
					return nil, err
				}
			}
			return idsTraceFrom(z.file, ids, extra[0], extra[1], extra[2:], opt)
		}
		if z.has("logical_count") {
			a, err := z.read("logical_count")
			if err != nil {
				return nil, err
			}
			return countsFromArray(z.file, a, opt, "SGLang stat logical_count")
		}
	}
	if z.has("weight") {
		a, err := z.read("weight")
		if err != nil {
			return nil, err
		}
		return countsFromArray(z.file, a, opt, "EPLB weight")
	}
	names := z.names()
	slices.Sort(names)
	want := "topk_ids, routed_experts, routing_indices, logical_count or weight"
	if eplb {
		want = "weight"
	}
	return nil, fmt.Errorf("%s: no array named %s (found: %s)", z.file, want, strings.Join(names, ", "))
}

// idsTrace serves records from an in-memory id array without copying it.
type idsTrace struct {
	h           Header
	ids, wts    *array
	layersFirst bool
	nl, nt, k   int
	off         []int
	steps       []int
	ranks       []int
	seg, layer  int
	buf         []int32
	wbuf        []float32
}

func idsTraceFrom(file string, ids, wts, p2l *array, seg []*array, opt ImportOptions) (*idsTrace, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", file, fmt.Sprintf(format, args...))
	}
	if !ids.isInt() {
		return nil, fail("%s has dtype %q, want an integer dtype (<i4, <i8, ...)", ids.name, ids.descr)
	}
	t := &idsTrace{ids: ids, wts: wts}
	if err := t.shape(fail, p2l, opt.Layout); err != nil {
		return nil, err
	}
	h := Header{Version: Version, IDSpace: Logical, TopK: t.k, Layers: t.nl, EPSize: opt.EPSize, GPUsPerNode: opt.GPUsPerNode, Experts: opt.Experts}
	limit := int64(opt.Experts)
	if p2l != nil {
		if err := t.physical(fail, p2l, &h); err != nil {
			return nil, err
		}
		limit = int64(h.PhysicalExperts)
	}
	if limit == 0 {
		limit = MaxExperts
	}
	var hi int64 = -1
	for i := range ids.len() {
		v := ids.int(i)
		if v < -1 || v >= limit {
			return nil, fail("%s%s = %d is out of range [-1, %d)", ids.name, index(ids.shape, i), v, limit)
		}
		hi = max(hi, v)
	}
	if h.Experts == 0 {
		h.Experts = max(int(hi+1), t.k)
	}
	if err := t.weights(fail); err != nil {
		return nil, err
	}
	if err := t.segments(fail, seg); err != nil {
		return nil, err
	}
	h.Steps = 1
	for _, s := range t.steps {
		h.Steps = max(h.Steps, s+1)
	}
	order := "layers-first"
	if !t.layersFirst {
		order = "tokens-first"
	}
	h.Provenance = joinProvenance(fmt.Sprintf("converted from %s (%s, %s)", baseName(file), ids.name, order), opt.Provenance)
	if err := h.Validate(); err != nil {
		return nil, fail("%v", err)
	}
	t.h = h
	return t, nil
}

// shape reads layers, tokens and top-k off the ids' shape, the layer axis
// from lay or, when auto, from the one p2l's layers match.
func (t *idsTrace) shape(fail func(string, ...any) error, p2l *array, lay Layout) error {
	ids := t.ids
	switch len(ids.shape) {
	case 2: // [tokens, k]: one layer
		t.nl, t.nt, t.k = 1, ids.shape[0], ids.shape[1]
		t.layersFirst = true
	case 3:
		if lay == LayoutAuto && p2l != nil && len(p2l.shape) == 2 {
			a, b := ids.shape[0] == p2l.shape[0], ids.shape[1] == p2l.shape[0]
			switch {
			case a && !b:
				lay = LayersFirst
			case b && !a:
				lay = TokensFirst
			}
		}
		switch lay {
		case LayersFirst:
			t.layersFirst = true
			t.nl, t.nt = ids.shape[0], ids.shape[1]
		case TokensFirst:
			t.nt, t.nl = ids.shape[0], ids.shape[1]
		case LayoutAuto:
			return field.Errorf("layout", "%w", fail("%s has shape %s: cannot tell the layer axis; give layers-first or tokens-first", ids.name, shapeString(ids.shape)))
		default:
			return fail("layout %q is neither %q nor %q", lay, LayersFirst, TokensFirst)
		}
		t.k = ids.shape[2]
	default:
		return fail("%s has shape %s, want [layers, tokens, k] or [tokens, layers, k]", ids.name, shapeString(ids.shape))
	}
	if t.k < 1 || t.k > MaxTopK {
		return fail("%s has shape %s: top-k %d is out of range [1, %d]", ids.name, shapeString(ids.shape), t.k, MaxTopK)
	}
	if t.nl < 1 || t.nl > MaxLayers {
		return fail("%s has shape %s: %d layers is out of range [1, %d]", ids.name, shapeString(ids.shape), t.nl, MaxLayers)
	}
	return nil
}

// physical puts h in physical expert ids: p2l maps each layer's physical
// experts to logical ones below h.Experts (or MaxExperts when not given),
// and sets h.Experts from it when not given.
func (t *idsTrace) physical(fail func(string, ...any) error, p2l *array, h *Header) error {
	if !p2l.isInt() {
		return fail("%s has dtype %q, want an integer dtype", p2l.name, p2l.descr)
	}
	if len(p2l.shape) != 2 || p2l.shape[0] != t.nl || p2l.shape[1] < 1 || p2l.shape[1] > MaxExperts {
		return fail("%s has shape %s, want [%d, physical experts]", p2l.name, shapeString(p2l.shape), t.nl)
	}
	h.IDSpace = Physical
	h.PhysicalExperts = p2l.shape[1]
	h.PhysicalToLogical = make([][]int32, t.nl)
	var hi int64 = -1
	lim := int64(MaxExperts)
	if h.Experts > 0 {
		lim = int64(h.Experts)
	}
	for l := range t.nl {
		row := make([]int32, h.PhysicalExperts)
		for p := range row {
			i := l*h.PhysicalExperts + p
			v := p2l.int(i)
			if v < 0 || v >= lim {
				return fail("%s%s = %d is out of range [0, %d)", p2l.name, index(p2l.shape, i), v, lim)
			}
			row[p] = int32(v)
			hi = max(hi, v)
		}
		h.PhysicalToLogical[l] = row
	}
	if h.Experts == 0 {
		h.Experts = int(hi + 1)
	}
	return nil
}

// weights checks the routing weights, when given: floats of the ids'
// shape, every one a finite float32.
func (t *idsTrace) weights(fail func(string, ...any) error) error {
	wts, ids := t.wts, t.ids
	if wts == nil {
		return nil
	}
	if wts.isInt() {
		return fail("%s has dtype %q, want a float dtype (<f4, <f2, <f8)", wts.name, wts.descr)
	}
	if !slices.Equal(wts.shape, ids.shape) {
		return fail("%s has shape %s, %s has %s (top-k or token counts differ)", wts.name, shapeString(wts.shape), ids.name, shapeString(ids.shape))
	}
	for i := range wts.len() {
		if w := float32(wts.float(i)); math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
			return fail("%s%s = %v is not a finite float32", wts.name, index(wts.shape, i), wts.float(i))
		}
	}
	return nil
}

// segments reads the optional segment arrays that split the token axis into
// (step, rank) records; without them the whole array is step 0, rank −1.
func (t *idsTrace) segments(fail func(string, ...any) error, seg []*array) error {
	off, st, rk := seg[0], seg[1], seg[2]
	if off == nil {
		if st != nil || rk != nil {
			return fail("segment_steps or segment_ranks given without segment_offsets")
		}
		t.off, t.steps, t.ranks = []int{0, t.nt}, []int{0}, []int{-1}
		return nil
	}
	for _, a := range []*array{off, st, rk} {
		if a != nil && (!a.isInt() || len(a.shape) != 1) {
			return fail("%s has dtype %q and shape %s, want a 1-D integer array", a.name, a.descr, shapeString(a.shape))
		}
	}
	n := off.len() - 1
	if n < 1 {
		return fail("%s has %d entries, want at least 2", off.name, off.len())
	}
	t.off = make([]int, n+1)
	for i := range t.off {
		v := off.int(i)
		prev := int64(0)
		if i > 0 {
			prev = int64(t.off[i-1])
		}
		if v < prev || v > int64(t.nt) || (i == 0 && v != 0) {
			return fail("%s[%d] = %d: offsets must start at 0, not decrease, and end at %d tokens", off.name, i, v, t.nt)
		}
		t.off[i] = int(v)
	}
	if t.off[n] != t.nt {
		return fail("%s[%d] = %d, want the token count %d", off.name, n, t.off[n], t.nt)
	}
	t.steps, t.ranks = make([]int, n), make([]int, n)
	for i := range n {
		t.ranks[i] = -1
	}
	for _, c := range []struct {
		a   *array
		dst []int
		lo  int64
	}{{st, t.steps, 0}, {rk, t.ranks, -1}} {
		if c.a == nil {
			continue
		}
		if c.a.len() != n {
			return fail("%s has %d entries, %s defines %d segments", c.a.name, c.a.len(), off.name, n)
		}
		for i := range n {
			v := c.a.int(i)
			if v < c.lo || v > math.MaxInt32-1 {
				return fail("%s[%d] = %d is out of range [%d, %d)", c.a.name, i, v, c.lo, int64(math.MaxInt32))
			}
			c.dst[i] = int(v)
		}
	}
	return nil
}

func (t *idsTrace) Header() Header { return t.h }

func (t *idsTrace) Next() (Record, error) {
	if t.seg >= len(t.steps) {
		return Record{}, io.EOF
	}
	s, l := t.seg, t.layer
	if t.layer++; t.layer == t.nl {
		t.layer, t.seg = 0, t.seg+1
	}
	lo, hi := t.off[s], t.off[s+1]
	n := (hi - lo) * t.k
	t.buf = slices.Grow(t.buf[:0], n)[:n]
	var wts []float32
	if t.wts != nil {
		t.wbuf = slices.Grow(t.wbuf[:0], n)[:n]
		if t.wbuf == nil {
			t.wbuf = []float32{}
		}
		wts = t.wbuf
	}
	for tok := lo; tok < hi; tok++ {
		base := (tok*t.nl + l) * t.k
		if t.layersFirst {
			base = (l*t.nt + tok) * t.k
		}
		row := (tok - lo) * t.k
		for j := range t.k {
			t.buf[row+j] = int32(t.ids.int(base + j))
			if wts != nil {
				wts[row+j] = float32(t.wts.float(base + j))
			}
		}
	}
	return Record{Step: t.steps[s], Layer: l, Rank: t.ranks[s], TopkIdx: t.buf, TopkWeights: wts}, nil
}

func joinProvenance(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
