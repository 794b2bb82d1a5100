package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"moebench/internal/inputfile"
)

// jsonlFormat is the value of the header line's "format" key; it is how the
// JSON-lines form is told apart from any other JSON.
const jsonlFormat = "moebench-trace"

// jsonlHeader is the first line: the header fields plus the format tag.
type jsonlHeader struct {
	Format string `json:"format"`
	Header
}

// JSONLWriter writes the human-readable JSON-lines form: the header object
// on the first line, then one object per record with topk_idx (and
// topk_weights) as arrays of per-token arrays.
type JSONLWriter struct {
	w   *bufio.Writer
	h   Header
	buf []byte
	n   int
}

// NewJSONLWriter validates h and writes the header line.
func NewJSONLWriter(w io.Writer, h Header) (*JSONLWriter, error) {
	h.Version = Version
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	js, err := json.Marshal(jsonlHeader{Format: jsonlFormat, Header: h})
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	jw := &JSONLWriter{w: bufio.NewWriterSize(w, bufferedIOBytes), h: h}
	jw.w.Write(js)
	if err := jw.w.WriteByte('\n'); err != nil {
		return nil, err
	}
	return jw, nil
}

// Write validates r and appends one line. Weights are written with the
// fewest digits that parse back to the same float32, so the form is exact.
func (jw *JSONLWriter) Write(r Record) error {
	if err := r.Validate(&jw.h); err != nil {
		return fmt.Errorf("record %d (step %d, layer %d, rank %d): %w", jw.n, r.Step, r.Layer, r.Rank, err)
	}
	k := jw.h.TopK
	b := jw.buf[:0]
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(r.Step), 10)
	b = append(b, `,"layer":`...)
	b = strconv.AppendInt(b, int64(r.Layer), 10)
	b = append(b, `,"rank":`...)
	b = strconv.AppendInt(b, int64(r.Rank), 10)
	b = append(b, `,"topk_idx":[`...)
	for i, e := range r.TopkIdx {
		b = rowPunct(b, i, k)
		b = strconv.AppendInt(b, int64(e), 10)
	}
	b = closeRows(b, len(r.TopkIdx))
	if r.TopkWeights != nil {
		b = append(b, `,"topk_weights":[`...)
		for i, w := range r.TopkWeights {
			b = rowPunct(b, i, k)
			b = strconv.AppendFloat(b, float64(w), 'g', -1, 32)
		}
		b = closeRows(b, len(r.TopkWeights))
	}
	b = append(b, "}\n"...)
	jw.buf = b
	if len(b) > maxJSONLLineBytes {
		return fmt.Errorf("record %d (step %d, layer %d, rank %d): %d bytes as a JSON line, more than the %s a reader takes; write the binary form",
			jw.n, r.Step, r.Layer, r.Rank, len(b), inputfile.Size(maxJSONLLineBytes))
	}
	_, err := jw.w.Write(b)
	jw.n++
	return err
}

// rowPunct opens, separates and closes the per-token rows.
func rowPunct(b []byte, i, k int) []byte {
	switch {
	case i == 0:
		return append(b, '[')
	case i%k == 0:
		return append(b, "],["...)
	default:
		return append(b, ',')
	}
}

func closeRows(b []byte, n int) []byte {
	if n > 0 {
		b = append(b, ']')
	}
	return append(b, ']')
}

// Close flushes. JSON lines have no end marker: use the binary form where
// truncation must be caught.
func (jw *JSONLWriter) Close() error { return jw.w.Flush() }

// maxJSONLLineBytes bounds a record's line of the JSON-lines form: a
// 1M-token prefill on one rank at top-8 is 8M selections, about 40 MB of
// text, and fits. Larger records belong in the binary form, as the writer
// says. The header line is bounded as the binary form's header block is
// (maxHeaderBytes).
const maxJSONLLineBytes = 64 << 20

// JSONLReader streams the JSON-lines form, one line in memory at a time.
type JSONLReader struct {
	name string
	r    *bufio.Reader
	h    Header
	line int
	buf  []byte
	rec  jsonlRecord
	ids  []int32
	wts  []float32
	err  error
}

type jsonlRecord struct {
	Step        int             `json:"step"`
	Layer       int             `json:"layer"`
	Rank        int             `json:"rank"`
	TopkIdx     json.RawMessage `json:"topk_idx"`
	TopkWeights json.RawMessage `json:"topk_weights"`
}

// NewJSONLReader reads and checks the header line; name is used in errors.
func NewJSONLReader(r io.Reader, name string) (*JSONLReader, error) {
	jr := &JSONLReader{name: name, r: bufio.NewReaderSize(r, bufferedIOBytes)}
	line, err := jr.readLine(maxHeaderBytes, "a trace's header line", "")
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file, want a header line", name)
	}
	if err != nil {
		return nil, err
	}
	var jh jsonlHeader
	if err := strictUnmarshal(line, &jh); err != nil {
		return nil, fmt.Errorf("%s:%d: header: %s", name, jr.line, inputfile.JSONProblem(err))
	}
	if jh.Format != jsonlFormat {
		return nil, fmt.Errorf("%s:%d: header: format = %q, want %q", name, jr.line, jh.Format, jsonlFormat)
	}
	if err := jh.Header.Validate(); err != nil {
		return nil, fmt.Errorf("%s:%d: header: %w", name, jr.line, err)
	}
	jr.h = jh.Header
	return jr, nil
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// readLine returns the next non-blank line without its newline, or io.EOF.
// A line longer than limit bytes is an error naming what, the kind of line,
// followed by hint.
func (jr *JSONLReader) readLine(limit int, what, hint string) ([]byte, error) {
	for {
		jr.buf = jr.buf[:0]
		var err error
		for {
			var frag []byte
			frag, err = jr.r.ReadSlice('\n')
			if len(jr.buf)+len(frag) > limit+1 { // +1: the newline
				return nil, fmt.Errorf("%s:%d: a line longer than %s, the most %s can be%s", jr.name, jr.line+1, inputfile.Size(int64(limit)), what, hint)
			}
			jr.buf = append(jr.buf, frag...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s:%d: %w", jr.name, jr.line+1, err)
		}
		if len(jr.buf) == 0 && err == io.EOF {
			return nil, io.EOF
		}
		jr.line++
		if line := bytes.TrimSpace(jr.buf); len(line) > 0 {
			return line, nil
		}
		if err == io.EOF {
			return nil, io.EOF
		}
	}
}

// Header returns the trace header.
func (jr *JSONLReader) Header() Header { return jr.h }

// Next returns the next record, io.EOF at the end, or an error naming the
// line and field at fault.
func (jr *JSONLReader) Next() (Record, error) {
	if jr.err != nil {
		return Record{}, jr.err
	}
	rec, err := jr.next()
	if err != nil {
		jr.err = err
	}
	return rec, err
}

// missing marks a field the line did not set.
const missing = math.MinInt

func (jr *JSONLReader) next() (Record, error) {
	line, err := jr.readLine(maxJSONLLineBytes, "a JSON-lines trace record", "; larger records need the binary form")
	if err != nil {
		return Record{}, err
	}
	jr.rec.Step, jr.rec.Layer, jr.rec.Rank = missing, missing, missing
	jr.rec.TopkIdx, jr.rec.TopkWeights = jr.rec.TopkIdx[:0], jr.rec.TopkWeights[:0]
	if err := strictUnmarshal(line, &jr.rec); err != nil {
		return Record{}, fmt.Errorf("%s:%d: %s", jr.name, jr.line, inputfile.JSONProblem(err))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"step", jr.rec.Step}, {"layer", jr.rec.Layer}, {"rank", jr.rec.Rank}} {
		if f.v == missing {
			return Record{}, fmt.Errorf("%s:%d: missing field %q", jr.name, jr.line, f.name)
		}
	}
	if len(jr.rec.TopkIdx) == 0 {
		return Record{}, fmt.Errorf("%s:%d: missing field \"topk_idx\"", jr.name, jr.line)
	}
	k := jr.h.TopK
	jr.ids = jr.ids[:0]
	err = scanRows(jr.rec.TopkIdx, k, func(tok []byte, t, s int) error {
		v, err := strconv.ParseInt(string(tok), 10, 32)
		if err != nil {
			return fmt.Errorf("topk_idx[%d,%d] = %s is not a 32-bit integer", t, s, tok)
		}
		jr.ids = append(jr.ids, int32(v))
		return nil
	})
	if err != nil {
		return Record{}, fmt.Errorf("%s:%d: %w", jr.name, jr.line, err)
	}
	var wts []float32
	if len(jr.rec.TopkWeights) > 0 {
		if jr.wts == nil {
			jr.wts = make([]float32, 0, len(jr.ids))
		}
		jr.wts = jr.wts[:0]
		err = scanRows(jr.rec.TopkWeights, k, func(tok []byte, t, s int) error {
			v, err := strconv.ParseFloat(string(tok), 32)
			if err != nil {
				return fmt.Errorf("topk_weights[%d,%d] = %s is not a float32", t, s, tok)
			}
			jr.wts = append(jr.wts, float32(v))
			return nil
		})
		if err != nil {
			return Record{}, fmt.Errorf("%s:%d: %w", jr.name, jr.line, err)
		}
		wts = jr.wts
	}
	rec := Record{Step: jr.rec.Step, Layer: jr.rec.Layer, Rank: jr.rec.Rank, TopkIdx: jr.ids, TopkWeights: wts}
	if err := rec.Validate(&jr.h); err != nil {
		return Record{}, fmt.Errorf("%s:%d: %w", jr.name, jr.line, err)
	}
	return rec, nil
}

// scanRows walks an already syntax-checked JSON value that must be an array
// of arrays of exactly k numbers, calling f with each number's text and its
// [token, slot] position.
func scanRows(b []byte, k int, f func(tok []byte, t, s int) error) error {
	p := &rowScanner{b: b}
	if !p.eat('[') {
		return errors.New("want an array of per-token arrays")
	}
	if p.eat(']') {
		return p.end()
	}
	for t := 0; ; t++ {
		if !p.eat('[') {
			return fmt.Errorf("token %d: want an array of %d numbers", t, k)
		}
		s := 0
		if !p.eat(']') {
			for ; ; s++ {
				tok := p.number()
				if tok == nil {
					return fmt.Errorf("[%d,%d]: want a number", t, s)
				}
				if s >= k {
					return fmt.Errorf("token %d has more than top_k = %d entries", t, k)
				}
				if err := f(tok, t, s); err != nil {
					return err
				}
				if p.eat(']') {
					s++
					break
				}
				if !p.eat(',') {
					return fmt.Errorf("[%d,%d]: want ',' or ']'", t, s)
				}
			}
		}
		if s != k {
			return fmt.Errorf("token %d has %d entries, header top_k is %d", t, s, k)
		}
		if p.eat(']') {
			return p.end()
		}
		if !p.eat(',') {
			return fmt.Errorf("after token %d: want ',' or ']'", t)
		}
	}
}

type rowScanner struct {
	b []byte
	i int
}

func (p *rowScanner) skip() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *rowScanner) eat(c byte) bool {
	p.skip()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *rowScanner) number() []byte {
	p.skip()
	j := p.i
	for j < len(p.b) && (p.b[j] == '-' || p.b[j] == '+' || p.b[j] == '.' || p.b[j] == 'e' || p.b[j] == 'E' || (p.b[j] >= '0' && p.b[j] <= '9')) {
		j++
	}
	if j == p.i {
		return nil
	}
	tok := p.b[p.i:j]
	p.i = j
	return tok
}

func (p *rowScanner) end() error {
	p.skip()
	if p.i != len(p.b) {
		return errors.New("unexpected data after the array")
	}
	return nil
}
