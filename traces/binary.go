package traces

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// binaryMagic opens every binary trace. The high first byte and the trailing
// newline catch files mangled by text-mode transfers, as PNG's signature does.
const binaryMagic = "\x89MOETRC\n"

const (
	tagRecord = 'R'
	tagEnd    = 'E'

	flagWeights = 1 << 0

	preambleSize    = len(binaryMagic) + 2 + 2 + 4 // magic, version, reserved, header length
	recordHeadSize  = 1 + 4 + 4 + 4 + 4 + 2 + 2    // tag, step, layer, rank, tokens, k, flags
	endBlockSize    = 1 + 8 + 4                    // tag, record count, crc
	maxHeaderBytes  = 64 << 20
	readChunk       = 1 << 20
	bufferedIOBytes = 256 << 10
)

// CRCs of the one-byte block tags, the start of every block checksum.
var (
	crcTagRecord = crc32.ChecksumIEEE([]byte{tagRecord})
	crcTagEnd    = crc32.ChecksumIEEE([]byte{tagEnd})
)

// BinaryWriter writes the streaming binary form (see the package
// documentation for the layout).
type BinaryWriter struct {
	w    *bufio.Writer
	h    Header
	buf  []byte
	n    uint64
	done bool
}

// NewBinaryWriter validates h and writes the preamble and header block.
func NewBinaryWriter(w io.Writer, h Header) (*BinaryWriter, error) {
	h.Version = Version
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	js, err := json.Marshal(&h)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if len(js) > maxHeaderBytes {
		return nil, fmt.Errorf("header: %d bytes of JSON, more than the limit %d", len(js), maxHeaderBytes)
	}
	b := make([]byte, 0, preambleSize+len(js)+4)
	b = append(b, binaryMagic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
	b = append(b, js...)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	bw := &BinaryWriter{w: bufio.NewWriterSize(w, bufferedIOBytes), h: h}
	if _, err := bw.w.Write(b); err != nil {
		return nil, err
	}
	return bw, nil
}

// Write validates r against the header and appends one record block.
func (bw *BinaryWriter) Write(r Record) error {
	if bw.done {
		return errors.New("write after close")
	}
	if err := r.Validate(&bw.h); err != nil {
		return fmt.Errorf("record %d (step %d, layer %d, rank %d): %w", bw.n, r.Step, r.Layer, r.Rank, err)
	}
	tokens := r.Tokens(bw.h.TopK)
	var flags uint16
	if r.TopkWeights != nil {
		flags |= flagWeights
	}
	b := bw.buf[:0]
	b = append(b, tagRecord)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Step))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Layer))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(r.Rank)))
	b = binary.LittleEndian.AppendUint32(b, uint32(tokens))
	b = binary.LittleEndian.AppendUint16(b, uint16(bw.h.TopK))
	b = binary.LittleEndian.AppendUint16(b, flags)
	for _, e := range r.TopkIdx {
		b = binary.LittleEndian.AppendUint32(b, uint32(e))
	}
	for _, w := range r.TopkWeights {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(w))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	bw.buf = b
	if _, err := bw.w.Write(b); err != nil {
		return err
	}
	bw.n++
	return nil
}

// Close writes the end block, which carries the record count, and flushes.
// A file without it reads as truncated.
func (bw *BinaryWriter) Close() error {
	if bw.done {
		return nil
	}
	bw.done = true
	b := make([]byte, 0, endBlockSize)
	b = append(b, tagEnd)
	b = binary.LittleEndian.AppendUint64(b, bw.n)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	if _, err := bw.w.Write(b); err != nil {
		return err
	}
	return bw.w.Flush()
}

// BinaryReader streams the binary form. Memory use is one record's worth,
// whatever the file size.
type BinaryReader struct {
	name string
	r    *bufio.Reader
	h    Header
	off  int64 // bytes consumed so far
	n    int   // records returned so far
	raw  []byte
	ids  []int32
	wts  []float32
	err  error // sticky: once broken, stays broken
}

// NewBinaryReader reads and checks the preamble and header block. name is
// used in error messages (usually the file path).
func NewBinaryReader(r io.Reader, name string) (*BinaryReader, error) {
	br := &BinaryReader{name: name, r: bufio.NewReaderSize(r, bufferedIOBytes)}
	pre := make([]byte, preambleSize)
	if _, err := io.ReadFull(br.r, pre); err != nil {
		return nil, fmt.Errorf("%s: reading preamble: %w", name, truncated(err))
	}
	if string(pre[:len(binaryMagic)]) != binaryMagic {
		return nil, fmt.Errorf("%s: not a moebench binary trace (bad magic %q)", name, pre[:len(binaryMagic)])
	}
	ver := binary.LittleEndian.Uint16(pre[8:])
	if ver != Version {
		return nil, fmt.Errorf("%s: byte 8: format version %d is not supported (want %d)", name, ver, Version)
	}
	hlen := binary.LittleEndian.Uint32(pre[12:])
	if hlen > maxHeaderBytes {
		return nil, fmt.Errorf("%s: byte 12: header length %d is more than the limit %d", name, hlen, maxHeaderBytes)
	}
	js, err := readN(br.r, nil, int(hlen)+4)
	if err != nil {
		return nil, fmt.Errorf("%s: byte %d: header block: %w", name, preambleSize, truncated(err))
	}
	crc := crc32.Update(crc32.ChecksumIEEE(pre), crc32.IEEETable, js[:hlen])
	if got := binary.LittleEndian.Uint32(js[hlen:]); got != crc {
		return nil, fmt.Errorf("%s: byte %d: header block: %w (stored %08x, computed %08x)", name, preambleSize, ErrChecksum, got, crc)
	}
	if err := decodeHeaderJSON(js[:hlen], &br.h); err != nil {
		return nil, fmt.Errorf("%s: byte %d: header: %w", name, preambleSize, err)
	}
	br.off = int64(preambleSize) + int64(hlen) + 4
	return br, nil
}

// decodeHeaderJSON is strict: unknown fields are errors, so a header from a
// newer writer is not half understood.
func decodeHeaderJSON(js []byte, h *Header) error {
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	if err := d.Decode(h); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the header object")
	}
	return h.Validate()
}

// Header returns the trace header.
func (br *BinaryReader) Header() Header { return br.h }

// Next returns the next record, io.EOF after the end block, or an error that
// names the record index and byte offset of the first damaged block.
func (br *BinaryReader) Next() (Record, error) {
	if br.err != nil {
		return Record{}, br.err
	}
	rec, err := br.next()
	if err != nil {
		br.err = err
	}
	return rec, err
}

func (br *BinaryReader) fail(at int64, format string, args ...any) error {
	return fmt.Errorf("%s: record %d at byte %d: %s", br.name, br.n, at, fmt.Sprintf(format, args...))
}

func (br *BinaryReader) failErr(at int64, what string, err error) error {
	if what == "" {
		return fmt.Errorf("%s: record %d at byte %d: %w", br.name, br.n, at, err)
	}
	return fmt.Errorf("%s: record %d at byte %d: %s: %w", br.name, br.n, at, what, err)
}

func (br *BinaryReader) next() (Record, error) {
	at := br.off
	tag, err := br.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			return Record{}, br.failErr(at, "missing end block", ErrTruncated)
		}
		return Record{}, br.failErr(at, "reading", err)
	}
	switch tag {
	case tagEnd:
		return Record{}, br.readEnd(at)
	case tagRecord:
	default:
		return Record{}, br.fail(at, "unknown block tag 0x%02x", tag)
	}
	br.raw, err = readN(br.r, br.raw, recordHeadSize-1)
	if err != nil {
		return Record{}, br.failErr(at, "block header", truncated(err))
	}
	head := br.raw
	step := binary.LittleEndian.Uint32(head[0:])
	layer := binary.LittleEndian.Uint32(head[4:])
	rank := int32(binary.LittleEndian.Uint32(head[8:]))
	tokens := binary.LittleEndian.Uint32(head[12:])
	k := binary.LittleEndian.Uint16(head[16:])
	flags := binary.LittleEndian.Uint16(head[18:])
	if int(k) != br.h.TopK {
		return Record{}, br.fail(at, "k = %d, header top_k is %d", k, br.h.TopK)
	}
	if flags&^flagWeights != 0 {
		return Record{}, br.fail(at, "unknown flags 0x%04x", flags)
	}
	sel := uint64(tokens) * uint64(k)
	if sel > MaxSelections {
		return Record{}, br.fail(at, "tokens = %d × k = %d is more than the limit %d selections", tokens, k, MaxSelections)
	}
	n := int(sel)
	payload := 4 * n
	if flags&flagWeights != 0 {
		payload *= 2
	}
	crc := crc32.Update(crcTagRecord, crc32.IEEETable, head)
	// Read payload and CRC after the fixed head; readN grows the buffer only
	// as bytes actually arrive, so a lying token count cannot force a huge
	// allocation.
	br.raw, err = readN(br.r, br.raw, payload+4)
	if err != nil {
		return Record{}, br.failErr(at, fmt.Sprintf("payload of %d tokens", tokens), truncated(err))
	}
	body := br.raw
	crc = crc32.Update(crc, crc32.IEEETable, body[:payload])
	if got := binary.LittleEndian.Uint32(body[payload:]); got != crc {
		return Record{}, br.failErr(at, "block", fmt.Errorf("%w (stored %08x, computed %08x)", ErrChecksum, got, crc))
	}
	if cap(br.ids) < n {
		br.ids = make([]int32, n)
	}
	ids := br.ids[:n]
	for i := range ids {
		ids[i] = int32(binary.LittleEndian.Uint32(body[4*i:]))
	}
	var wts []float32
	if flags&flagWeights != 0 {
		if cap(br.wts) < n || br.wts == nil {
			br.wts = make([]float32, n)
		}
		wts = br.wts[:n]
		wb := body[4*n:]
		for i := range wts {
			wts[i] = math.Float32frombits(binary.LittleEndian.Uint32(wb[4*i:]))
		}
	}
	rec := Record{Step: int(step), Layer: int(layer), Rank: int(rank), TopkIdx: ids, TopkWeights: wts}
	if step > math.MaxInt32 {
		return Record{}, br.fail(at, "step = %d is out of range [0, %d]", step, math.MaxInt32)
	}
	if err := rec.Validate(&br.h); err != nil {
		return Record{}, br.failErr(at, "", err)
	}
	br.off += int64(recordHeadSize) + int64(payload) + 4
	br.n++
	return rec, nil
}

func (br *BinaryReader) readEnd(at int64) error {
	b, err := readN(br.r, br.raw, endBlockSize-1)
	br.raw = b
	if err != nil {
		return br.failErr(at, "end block", truncated(err))
	}
	crc := crc32.Update(crcTagEnd, crc32.IEEETable, b[:8])
	if got := binary.LittleEndian.Uint32(b[8:]); got != crc {
		return br.failErr(at, "end block", fmt.Errorf("%w (stored %08x, computed %08x)", ErrChecksum, got, crc))
	}
	if cnt := binary.LittleEndian.Uint64(b); cnt != uint64(br.n) {
		return br.fail(at, "end block counts %d records, file holds %d", cnt, br.n)
	}
	if _, err := br.r.ReadByte(); err != io.EOF {
		if err != nil {
			return br.failErr(at+endBlockSize, "after end block", err)
		}
		return fmt.Errorf("%s: byte %d: trailing data after the end block", br.name, at+endBlockSize)
	}
	return io.EOF
}

// readN reads exactly n bytes into buf (reusing its capacity). When n is
// larger than the capacity it grows in steps no bigger than what has
// already arrived, so memory is bounded by the input actually present.
func readN(r io.Reader, buf []byte, n int) ([]byte, error) {
	if n <= cap(buf) {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), max(len(buf), readChunk))
		if cap(buf)-len(buf) < step {
			nb := make([]byte, len(buf), len(buf)+step)
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// truncated marks end-of-input errors with ErrTruncated and passes other
// I/O errors through unchanged.
func truncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: unexpected end of file", ErrTruncated)
	}
	return err
}
