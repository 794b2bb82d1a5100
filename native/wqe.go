package native

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The mlx5 send-WQE layout that the GPU kernels build (native/src/wqe.cuh)
// and the NIC fetches: 16 B segments packed into 64 B basic blocks, every
// multi-byte field big-endian.
const (
	BasicBlock  = 64 // bytes per send-queue basic block
	SegmentSize = 16 // bytes per WQE segment; ctrl.ds counts these

	OpcodeRDMAWrite    = 0x08
	OpcodeRDMAWriteImm = 0x09
	OpcodeAtomicFA     = 0x13       // 8 B fetch-add
	InlineSegFlag      = 0x80000000 // byte_count bit marking an inline segment
	CtrlCQUpdate       = 0x08       // fm_ce_se: generate a CQE on completion

	// MaxInline is the largest inline payload the experiments use; larger
	// WQEs are legal but need more basic blocks than a real QP allows
	// inline.
	MaxInline = 220
)

// WQE is one RC RDMA write as the send queue holds it: a ctrl segment, a
// remote-address segment, and either a data segment (pointer payload) or an
// inline segment (payload in the WQE).
type WQE struct {
	// ctrl segment
	Opmod     uint8
	Index     uint16 // producer index of this WQE in basic blocks (wqe_idx)
	Opcode    uint8
	QPN       uint32 // 24 bits
	DS        uint8  // size in 16 B units; Encode fills it in when zero
	Signature uint8
	FmCeSe    uint8
	Imm       uint32

	// remote-address segment
	RemoteAddr uint64
	RKey       uint32

	// Inline != nil selects an inline segment; otherwise the data segment
	// below names the payload (for a fetch-add: where the old value lands).
	Inline    []byte
	ByteCount uint32
	LKey      uint32
	LocalAddr uint64

	// Add is a fetch-add's operand (Opcode OpcodeAtomicFA), Compare its
	// second atomic word.
	Add, Compare uint64
	// AV, on a DC queue, is the address vector after the ctrl segment.
	AV *AddressVector
}

// AddressVector is DC's compact 16 B address vector: the destination's key,
// DCT number and LID (the native layer's emulated NIC reads the rank from
// the LID).
type AddressVector struct {
	DCKey uint64
	DCT   uint32 // 24 bits
	RLID  uint16
}

// Layout returns the WQE's size in 16 B units and in basic blocks.
func (w WQE) Layout() (ds, bbs int, err error) {
	if w.QPN > 0xffffff {
		return 0, 0, fmt.Errorf("wqe: qpn %#x does not fit 24 bits", w.QPN)
	}
	if w.AV != nil && w.AV.DCT > 0xffffff {
		return 0, 0, fmt.Errorf("wqe: dct %#x does not fit 24 bits", w.AV.DCT)
	}
	ds = 2
	if w.AV != nil {
		ds++
	}
	switch {
	case w.Opcode == OpcodeAtomicFA:
		if w.Inline != nil {
			return 0, 0, fmt.Errorf("wqe: a fetch-add carries no inline payload")
		}
		ds += 2
	case w.Inline != nil:
		if len(w.Inline) > MaxInline {
			return 0, 0, fmt.Errorf("wqe: inline payload %d B exceeds %d B", len(w.Inline), MaxInline)
		}
		ds += (4 + len(w.Inline) + SegmentSize - 1) / SegmentSize
	default:
		ds++
	}
	return ds, (ds*SegmentSize + BasicBlock - 1) / BasicBlock, nil
}

// Encode returns the WQE's bytes, padded with zeros to whole basic blocks.
func (w WQE) Encode() ([]byte, error) {
	ds, bbs, err := w.Layout()
	if err != nil {
		return nil, err
	}
	if w.DS != 0 && int(w.DS) != ds {
		return nil, fmt.Errorf("wqe: ds %d does not match the segments (%d)", w.DS, ds)
	}
	b := make([]byte, bbs*BasicBlock)
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(w.Opmod)<<24|uint32(w.Index)<<8|uint32(w.Opcode))
	be.PutUint32(b[4:], w.QPN<<8|uint32(ds))
	b[8] = w.Signature
	b[11] = w.FmCeSe
	be.PutUint32(b[12:], w.Imm)
	o := 16
	if w.AV != nil {
		be.PutUint64(b[o:], w.AV.DCKey)
		be.PutUint32(b[o+8:], w.AV.DCT)
		be.PutUint32(b[o+12:], uint32(w.AV.RLID))
		o += SegmentSize
	}
	be.PutUint64(b[o:], w.RemoteAddr)
	be.PutUint32(b[o+8:], w.RKey)
	o += SegmentSize
	switch {
	case w.Opcode == OpcodeAtomicFA:
		be.PutUint64(b[o:], w.Add)
		be.PutUint64(b[o+8:], w.Compare)
		o += SegmentSize
		be.PutUint32(b[o:], 8)
		be.PutUint32(b[o+4:], w.LKey)
		be.PutUint64(b[o+8:], w.LocalAddr)
	case w.Inline != nil:
		be.PutUint32(b[o:], uint32(len(w.Inline))|InlineSegFlag)
		copy(b[o+4:], w.Inline)
	default:
		be.PutUint32(b[o:], w.ByteCount)
		be.PutUint32(b[o+4:], w.LKey)
		be.PutUint64(b[o+8:], w.LocalAddr)
	}
	return b, nil
}

// DecodeWQE parses a WQE starting at b[0] (its ctrl segment). b must hold
// at least the WQE's ds*16 bytes; a WQE that wraps the ring must be
// gathered first (ReadWQE does).
func DecodeWQE(b []byte) (WQE, error) {
	var w WQE
	if len(b) < 3*SegmentSize {
		return w, fmt.Errorf("wqe: %d bytes, need at least %d", len(b), 3*SegmentSize)
	}
	be := binary.BigEndian
	c0 := be.Uint32(b[0:])
	w.Opmod = uint8(c0 >> 24)
	w.Index = uint16(c0 >> 8)
	w.Opcode = uint8(c0)
	c1 := be.Uint32(b[4:])
	w.QPN = c1 >> 8
	w.DS = uint8(c1)
	w.Signature = b[8]
	w.FmCeSe = b[11]
	w.Imm = be.Uint32(b[12:])
	if w.DS < 3 {
		return w, fmt.Errorf("wqe: ds %d is too small for ctrl + raddr + data", w.DS)
	}
	if len(b) < int(w.DS)*SegmentSize {
		return w, fmt.Errorf("wqe: ds %d needs %d bytes, have %d", w.DS, int(w.DS)*SegmentSize, len(b))
	}
	if w.Opcode != OpcodeRDMAWrite && w.Opcode != OpcodeRDMAWriteImm {
		return w, fmt.Errorf("wqe: opcode %#x is not an RDMA write", w.Opcode)
	}
	w.RemoteAddr = be.Uint64(b[16:])
	w.RKey = be.Uint32(b[24:])
	bc := be.Uint32(b[32:])
	dataBytes := (int(w.DS) - 2) * SegmentSize
	if bc&InlineSegFlag != 0 {
		n := int(bc &^ InlineSegFlag)
		if 4+n > dataBytes {
			return w, fmt.Errorf("wqe: inline byte count %d overruns ds %d", n, w.DS)
		}
		if want := (4 + n + SegmentSize - 1) / SegmentSize; want != dataBytes/SegmentSize {
			return w, fmt.Errorf("wqe: inline byte count %d needs %d data segments, ds gives %d", n, want, dataBytes/SegmentSize)
		}
		w.Inline = append([]byte{}, b[36:36+n]...)
		return w, nil
	}
	if w.DS != 3 {
		return w, fmt.Errorf("wqe: ds %d with a single data segment, want 3", w.DS)
	}
	w.ByteCount = bc
	w.LKey = be.Uint32(b[36:])
	w.LocalAddr = be.Uint64(b[40:])
	return w, nil
}

// ErrRingSize reports a send queue whose size is not a power-of-two number
// of basic blocks.
var ErrRingSize = errors.New("wqe: ring size must be a power-of-two number of basic blocks")

func ringBBs(ring []byte) (uint32, error) {
	n := len(ring) / BasicBlock
	if n == 0 || len(ring)%BasicBlock != 0 || n&(n-1) != 0 {
		return 0, fmt.Errorf("%w (got %d bytes)", ErrRingSize, len(ring))
	}
	return uint32(n), nil
}

// PostWQE writes w into ring at producer index pi (basic blocks), wrapping
// past the end segment by segment as the NIC reads it, and returns the next
// producer index. w.Index is set from pi.
func PostWQE(ring []byte, pi uint32, w WQE) (uint32, error) {
	n, err := ringBBs(ring)
	if err != nil {
		return pi, err
	}
	w.Index = uint16(pi)
	b, err := w.Encode()
	if err != nil {
		return pi, err
	}
	if uint32(len(b)/BasicBlock) > n {
		return pi, fmt.Errorf("wqe: %d basic blocks do not fit a ring of %d", len(b)/BasicBlock, n)
	}
	mask := uint32(len(ring)) - 1
	for off := 0; off < len(b); off += SegmentSize {
		at := (pi*BasicBlock + uint32(off)) & mask
		copy(ring[at:at+SegmentSize], b[off:off+SegmentSize])
	}
	return pi + uint32(len(b)/BasicBlock), nil
}

// ReadWQE decodes the WQE at producer index pi of ring, gathering segments
// across the wrap, and returns it with its size in basic blocks.
func ReadWQE(ring []byte, pi uint32) (WQE, int, error) {
	n, err := ringBBs(ring)
	if err != nil {
		return WQE{}, 0, err
	}
	mask := uint32(len(ring)) - 1
	seg := func(k uint32) []byte {
		at := (pi*BasicBlock + k*SegmentSize) & mask
		return ring[at : at+SegmentSize]
	}
	ds := uint32(seg(0)[7])
	if ds == 0 || ds*SegmentSize > n*BasicBlock {
		return WQE{}, 0, fmt.Errorf("wqe at %d: ds %d does not fit the ring", pi, ds)
	}
	buf := make([]byte, 0, ds*SegmentSize)
	for k := uint32(0); k < ds; k++ {
		buf = append(buf, seg(k)...)
	}
	w, err := DecodeWQE(buf)
	if err != nil {
		return w, 0, fmt.Errorf("wqe at %d: %w", pi, err)
	}
	return w, (int(ds)*SegmentSize + BasicBlock - 1) / BasicBlock, nil
}

// DoorbellRecord is the send doorbell record after posting up to pi: the
// next free basic-block index, 16 bits, big-endian in a 32-bit word.
func DoorbellRecord(pi uint32) [4]byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], pi&0xffff)
	return b
}

// ParseDoorbellRecord is DoorbellRecord's inverse.
func ParseDoorbellRecord(b [4]byte) uint16 { return uint16(binary.BigEndian.Uint32(b[:])) }

// Doorbell is the 8 B doorbell store announcing w: the first 8 bytes of
// its ctrl segment, exactly as stored in the send queue.
func (w WQE) Doorbell() ([8]byte, error) {
	var d [8]byte
	b, err := w.Encode()
	if err != nil {
		return d, err
	}
	copy(d[:], b[:8])
	return d, nil
}

// ParseDoorbell returns the WQE index and QP number a doorbell announces.
func ParseDoorbell(d [8]byte) (index uint16, qpn uint32, opcode uint8) {
	c0 := binary.BigEndian.Uint32(d[0:])
	c1 := binary.BigEndian.Uint32(d[4:])
	return uint16(c0 >> 8), c1 >> 8, uint8(c0)
}

// PayloadPattern is the inline payload the library writes for WQE seed:
// byte i is seed*31 + i*7 + 1 (mod 256). Tests compare GPU output with it.
func PayloadPattern(n int, seed uint32) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + uint32(i)*7 + 1)
	}
	return b
}
