package traces

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"moebench/internal/inputfile"
)

const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds the header dictionary; NumPy writes a few hundred
// bytes, so anything near this is corrupt.
const maxNPYHeader = 1 << 20

// maxArrayBytes bounds the data of one array, from a .npy file or a .npz
// member, whatever --max-memory allows: arrays are held whole, and the
// largest routing capture worth replaying, 2M tokens × 61 layers × top-8
// as int32, is 3.6 GiB. A header that declares more is refused before
// anything is read.
const maxArrayBytes = 4 << 30

// maxNPZMemberBytes bounds what one .npz member inflates to, read or
// declared: an array's data and its .npy header. The inflated bytes are
// counted as they arrive, so a member whose directory entry understates
// its size stops here too.
const maxNPZMemberBytes = maxArrayBytes + maxNPYHeader + 16

// array is one NumPy array: its dtype, C-order shape and raw little-endian
// data. Elements are decoded on access so that a large array is held once,
// at its on-disk width.
type array struct {
	name  string // the role or member name, for error messages
	descr string // NumPy dtype string, e.g. "<i4"
	kind  byte   // 'i', 'u' or 'f'
	size  int    // bytes per element
	shape []int
	data  []byte
}

func (a *array) len() int { return len(a.data) / a.size }

func (a *array) isInt() bool { return a.kind == 'i' || a.kind == 'u' }

// int returns element i of an integer array, saturating u8 values that do
// not fit an int64 (they are out of every range anyway).
func (a *array) int(i int) int64 {
	b := a.data[i*a.size:]
	switch int(a.kind)<<4 | a.size {
	case 'i'<<4 | 1:
		return int64(int8(b[0]))
	case 'u'<<4 | 1:
		return int64(b[0])
	case 'i'<<4 | 2:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case 'u'<<4 | 2:
		return int64(binary.LittleEndian.Uint16(b))
	case 'i'<<4 | 4:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	case 'u'<<4 | 4:
		return int64(binary.LittleEndian.Uint32(b))
	case 'i'<<4 | 8:
		return int64(binary.LittleEndian.Uint64(b))
	case 'u'<<4 | 8:
		v := binary.LittleEndian.Uint64(b)
		if v > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(v)
	}
	return int64(a.float(i))
}

// float returns element i as a float64 (exact for every supported dtype).
func (a *array) float(i int) float64 {
	b := a.data[i*a.size:]
	switch {
	case a.kind == 'f' && a.size == 2:
		return float64(halfToFloat32(binary.LittleEndian.Uint16(b)))
	case a.kind == 'f' && a.size == 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case a.kind == 'f' && a.size == 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return float64(a.int(i))
}

// halfToFloat32 widens an IEEE 754 binary16 value exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: value = man × 2^-24
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// shapeString renders a shape as NumPy would print it, for messages.
func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// index renders the multi-index of flat element i, e.g. "[3,17,2]".
func index(shape []int, i int) string {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	parts := make([]string, len(idx))
	for d, v := range idx {
		parts[d] = strconv.Itoa(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// readNPY parses one .npy stream. avail is how many bytes the stream holds
// (−1 when unknown); a shape that needs more is rejected before any data is
// read, and reading grows memory only as data arrives in any case.
func readNPY(r io.Reader, avail, maxBytes int64, file, name string) (*array, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", file, name, fmt.Sprintf(format, args...))
	}
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fail("reading the .npy preamble: %v", truncated(err))
	}
	if string(pre[:6]) != npyMagic {
		return nil, fail("not a .npy array (bad magic %q)", pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen int
	used := int64(8)
	switch major {
	case 1:
		b := make([]byte, 2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fail("reading the header length: %v", truncated(err))
		}
		hlen = int(binary.LittleEndian.Uint16(b))
		used += 2
	case 2, 3:
		b := make([]byte, 4)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fail("reading the header length: %v", truncated(err))
		}
		h := binary.LittleEndian.Uint32(b)
		if h > maxNPYHeader {
			return nil, fail(".npy header length %d is more than the limit %d", h, maxNPYHeader)
		}
		hlen = int(h)
		used += 4
	default:
		return nil, fail(".npy version %d.%d is not supported (want 1.0, 2.0 or 3.0)", major, minor)
	}
	hdr, err := readN(r, nil, hlen)
	if err != nil {
		return nil, fail("reading the .npy header: %v", truncated(err))
	}
	used += int64(hlen)
	a := &array{name: name}
	if err := parseNPYHeader(string(hdr), a); err != nil {
		return nil, fail(".npy header: %v", err)
	}
	n := 1
	for _, d := range a.shape {
		if d != 0 && n > math.MaxInt32/d {
			return nil, fail("shape %s has too many elements", shapeString(a.shape))
		}
		n *= d
	}
	nbytes := int64(n) * int64(a.size)
	if nbytes > maxArrayBytes {
		return nil, fail("shape %s declares %d data bytes, more than %s, the most an array can be", shapeString(a.shape), nbytes, inputfile.Size(maxArrayBytes))
	}
	if maxBytes > 0 && nbytes > maxBytes {
		return nil, needOption("max-memory", "%w", fail("shape %s declares %d data bytes, more than the memory budget of %d", shapeString(a.shape), nbytes, maxBytes))
	}
	if avail >= 0 && nbytes > avail-used {
		return nil, fail("shape %s needs %d data bytes, the file holds %d: %v", shapeString(a.shape), nbytes, max(avail-used, 0), fmt.Errorf("%w", ErrTruncated))
	}
	a.data, err = readN(r, nil, int(nbytes))
	if err != nil {
		return nil, fail("shape %s needs %d data bytes, read %d: %v", shapeString(a.shape), nbytes, len(a.data), truncated(err))
	}
	var one [1]byte
	switch m, err := r.Read(one[:]); {
	case m > 0:
		return nil, fail("trailing data after %d data bytes", nbytes)
	case err != nil && err != io.EOF:
		return nil, fail("%v", err)
	}
	if avail >= 0 && used+nbytes < avail {
		return nil, fail("trailing data after %d data bytes", nbytes)
	}
	return a, nil
}

// parseNPYHeader reads the Python dict literal NumPy writes, e.g.
// {'descr': '<i4', 'fortran_order': False, 'shape': (61, 4096, 8), }.
func parseNPYHeader(s string, a *array) error {
	p := &pyLit{s: s}
	if !p.eat('{') {
		return errors.New("want a dict")
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, ok := p.str()
		if !ok {
			return fmt.Errorf("byte %d: want a quoted key", p.i)
		}
		if !p.eat(':') {
			return fmt.Errorf("byte %d: want ':' after %q", p.i, key)
		}
		if seen[key] {
			return fmt.Errorf("key %q repeated", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			d, ok := p.str()
			if !ok {
				return errors.New("descr is not a plain dtype string (structured dtypes are not supported)")
			}
			if err := setDType(a, d); err != nil {
				return err
			}
		case "fortran_order":
			f, ok := p.boolean()
			if !ok {
				return errors.New("fortran_order is not True or False")
			}
			if f {
				return errors.New("fortran_order is True; only C-order arrays are supported (save with np.ascontiguousarray)")
			}
		case "shape":
			sh, ok := p.tuple()
			if !ok {
				return errors.New("shape is not a tuple of non-negative integers")
			}
			a.shape = sh
		default:
			return fmt.Errorf("unexpected key %q", key)
		}
		if !p.eat(',') {
			if !p.eat('}') {
				return fmt.Errorf("byte %d: want ',' or '}'", p.i)
			}
			break
		}
	}
	p.skip()
	if p.i != len(p.s) {
		return fmt.Errorf("byte %d: unexpected data after the dict", p.i)
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("missing key %q", k)
		}
	}
	return nil
}

// setDType accepts little-endian (or single-byte) integer and float dtypes.
func setDType(a *array, d string) error {
	a.descr = d
	bad := fmt.Errorf("dtype %q is not supported (want a little-endian integer or float: <i4, <i8, <f4, <f2, ...)", d)
	if len(d) != 3 {
		return bad
	}
	order, kind, size := d[0], d[1], int(d[2]-'0')
	if kind != 'i' && kind != 'u' && kind != 'f' {
		return bad
	}
	switch {
	case size == 1 && kind != 'f' && (order == '|' || order == '<'):
	case (size == 2 || size == 4 || size == 8) && order == '<':
	default:
		return bad
	}
	a.kind, a.size = kind, size
	return nil
}

// pyLit scans the small subset of Python literals .npy headers use.
type pyLit struct {
	s string
	i int
}

func (p *pyLit) skip() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyLit) eat(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyLit) str() (string, bool) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	j := strings.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+j]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	p.i += j + 2
	return v, true
}

func (p *pyLit) boolean() (bool, bool) {
	p.skip()
	for _, w := range []struct {
		s string
		v bool
	}{{"True", true}, {"False", false}} {
		if strings.HasPrefix(p.s[p.i:], w.s) {
			p.i += len(w.s)
			return w.v, true
		}
	}
	return false, false
}

func (p *pyLit) tuple() ([]int, bool) {
	if !p.eat('(') {
		return nil, false
	}
	out := []int{}
	for {
		if p.eat(')') {
			return out, true
		}
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		if j == p.i || j-p.i > 10 {
			return nil, false
		}
		v, err := strconv.Atoi(p.s[p.i:j])
		if err != nil || v > math.MaxInt32 || len(out) >= 32 {
			return nil, false
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long suffix
			p.i++
		}
		out = append(out, v)
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, false
			}
			return out, true
		}
	}
}

// npz is an opened .npz archive: a zip of .npy members.
type npz struct {
	file     string
	members  map[string]*zip.File
	maxBytes int64 // per member, 0 = no limit
}

func openNPZ(ra io.ReaderAt, size int64, file string) (*npz, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable .npz (zip) archive: %w", file, err)
	}
	z := &npz{file: file, members: map[string]*zip.File{}}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := z.members[name]; dup {
			return nil, fmt.Errorf("%s: array %q appears twice", file, name)
		}
		z.members[name] = f
	}
	return z, nil
}

func (z *npz) has(name string) bool { _, ok := z.members[name]; return ok }

func (z *npz) names() []string {
	out := make([]string, 0, len(z.members))
	for n := range z.members {
		out = append(out, n)
	}
	return out
}

// read loads one member; memory grows only as decompressed bytes arrive,
// so a member whose directory entry lies about its size cannot force a
// large allocation.
func (z *npz) read(name string) (*array, error) {
	f, ok := z.members[name]
	if !ok {
		return nil, nil
	}
	if f.UncompressedSize64 > maxNPZMemberBytes {
		return nil, fmt.Errorf("%s: %s: declares %d bytes inflated, more than an array's %s and its header, the most a member can be", z.file, name, f.UncompressedSize64, inputfile.Size(maxArrayBytes))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", z.file, name, err)
	}
	defer rc.Close()
	// The declared size is not trusted: the inflated bytes are counted.
	r := inputfile.NewReader(rc, z.file+": "+name, "an inflated .npz member", maxNPZMemberBytes)
	return readNPY(r, int64(f.UncompressedSize64), z.maxBytes, z.file, name)
}
