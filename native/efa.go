package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// EFA's SRD TX WQE for an RDMA write, as EFA DP Direct builds it on the GPU
// (rdma-core providers/efa/efa_io_defs.h: efa_io_tx_meta_desc,
// efa_io_remote_mem_addr, efa_io_tx_buf_desc; little-endian). native/src/efa.cuh
// builds the same bytes.
const (
	EFAWQEBytes       = 64
	efaOpRDMAWrite    = 3
	efaMetaHasImm     = 1 << 4
	efaMetaDesc       = 1 << 7
	efaCtrlPhase      = 1 << 0
	efaCtrlFirst      = 1 << 2
	efaCtrlLast       = 1 << 3
	efaCtrlCompReq    = 1 << 4
	efaRemoteMetaExt  = 1 << 6
	efaRemoteMetaDesc = 1 << 7
)

// EFAWrite is one RDMA write WQE of one local buffer.
type EFAWrite struct {
	ReqID      uint16
	Phase      uint8 // the ring pass's phase bit
	CompReq    bool  // post a completion
	DestQP     uint16
	Imm        uint32 // immediate data; 0 carries none
	AH         uint16
	Length     uint16 // bytes, remote and local alike
	RKey       uint32
	RemoteAddr uint64
	LKey       uint32
	LocalAddr  uint64
}

// Encode lays w out in its 64 bytes.
func (w EFAWrite) Encode() []byte {
	b := make([]byte, EFAWQEBytes)
	le := binary.LittleEndian
	ctrl1 := byte(efaOpRDMAWrite | efaMetaDesc)
	if w.Imm != 0 {
		ctrl1 |= efaMetaHasImm
	}
	ctrl2 := w.Phase&1 | efaCtrlFirst | efaCtrlLast
	if w.CompReq {
		ctrl2 |= efaCtrlCompReq
	}
	le.PutUint16(b[0:], w.ReqID)
	b[2], b[3] = ctrl1, ctrl2
	le.PutUint16(b[4:], w.DestQP)
	le.PutUint16(b[6:], 1) // one buffer descriptor
	le.PutUint32(b[8:], w.Imm)
	le.PutUint16(b[12:], w.AH)
	le.PutUint16(b[16:], w.Length)
	b[18] = efaRemoteMetaExt | efaRemoteMetaDesc
	le.PutUint32(b[20:], w.RKey)
	le.PutUint64(b[24:], w.RemoteAddr)
	le.PutUint16(b[32:], w.Length)
	b[35] = efaCtrlLast
	le.PutUint32(b[36:], w.LKey)
	le.PutUint64(b[40:], w.LocalAddr)
	return b
}

// ErrEFAWQE marks bytes that are not an EFA RDMA-write WQE of one buffer.
var ErrEFAWQE = errors.New("not an EFA RDMA-write WQE of one buffer")

// DecodeEFAWrite reads a WQE Encode wrote, checking every fixed bit.
func DecodeEFAWrite(b []byte) (EFAWrite, error) {
	if len(b) < EFAWQEBytes {
		return EFAWrite{}, fmt.Errorf("%w: %d bytes, want %d", ErrEFAWQE, len(b), EFAWQEBytes)
	}
	le := binary.LittleEndian
	ctrl1, ctrl2 := b[2], b[3]
	w := EFAWrite{
		ReqID: le.Uint16(b[0:]), Phase: ctrl2 & efaCtrlPhase, CompReq: ctrl2&efaCtrlCompReq != 0,
		DestQP: le.Uint16(b[4:]), Imm: le.Uint32(b[8:]), AH: le.Uint16(b[12:]), Length: le.Uint16(b[16:]),
		RKey: le.Uint32(b[20:]), RemoteAddr: le.Uint64(b[24:]), LKey: le.Uint32(b[36:]), LocalAddr: le.Uint64(b[40:]),
	}
	switch {
	case ctrl1&0x0f != efaOpRDMAWrite:
		return w, fmt.Errorf("%w: op type %d, want %d", ErrEFAWQE, ctrl1&0x0f, efaOpRDMAWrite)
	case ctrl1&efaMetaDesc == 0 || ctrl1&0x60 != 0:
		return w, fmt.Errorf("%w: meta ctrl1 %#02x", ErrEFAWQE, ctrl1)
	case (ctrl1&efaMetaHasImm != 0) != (w.Imm != 0):
		return w, fmt.Errorf("%w: has_imm %v with immediate %#x", ErrEFAWQE, ctrl1&efaMetaHasImm != 0, w.Imm)
	case ctrl2&^(efaCtrlPhase|efaCtrlCompReq) != efaCtrlFirst|efaCtrlLast:
		return w, fmt.Errorf("%w: meta ctrl2 %#02x", ErrEFAWQE, ctrl2)
	case le.Uint16(b[6:]) != 1:
		return w, fmt.Errorf("%w: %d buffer descriptors", ErrEFAWQE, le.Uint16(b[6:]))
	case le.Uint16(b[14:]) != 0:
		return w, fmt.Errorf("%w: reserved meta bits set", ErrEFAWQE)
	case b[18] != efaRemoteMetaExt|efaRemoteMetaDesc || b[19] != 0:
		return w, fmt.Errorf("%w: remote address ctrl %#02x %#02x", ErrEFAWQE, b[18], b[19])
	case le.Uint16(b[32:]) != w.Length || b[34] != 0 || b[35] != efaCtrlLast:
		return w, fmt.Errorf("%w: buffer descriptor length %d ctrl %#02x %#02x", ErrEFAWQE, le.Uint16(b[32:]), b[34], b[35])
	case !bytes.Equal(b[48:64], make([]byte, 16)):
		return w, fmt.Errorf("%w: second buffer descriptor not empty", ErrEFAWQE)
	}
	return w, nil
}

// EFADoorbell is the 32-bit SQ doorbell value after WQEs up to producer
// counter pc, as stored (the counter's 16 bits, little-endian), in the
// first four bytes of Posted.Doorbell.
func EFADoorbell(pc uint32) [8]byte {
	var d [8]byte
	binary.LittleEndian.PutUint32(d[:], pc&0xffff)
	return d
}

// ExpectedEFAPosting encodes on the host what BuildWQEs should leave
// behind for p.Format EFA: WQE k at slot (StartPI+k) mod SQBBs, its phase
// the pass of the ring the producer counter is on.
func ExpectedEFAPosting(p WQEParams, count int) (Posted, error) {
	if p.SQBBs == 0 || p.SQBBs&(p.SQBBs-1) != 0 {
		return Posted{}, fmt.Errorf("native: EFA ring of %d WQEs, want a power of two", p.SQBBs)
	}
	if p.Length > 0xffff || p.Inline {
		return Posted{}, fmt.Errorf("native: EFA write of %d B (inline %v): at most 65535 B, no inline data", p.Length, p.Inline)
	}
	out := Posted{SQ: make([]byte, int(p.SQBBs)*EFAWQEBytes)}
	pc := p.StartPI
	for k := range count {
		w := EFAWrite{
			ReqID: uint16(pc), Phase: uint8(pc / p.SQBBs & 1), CompReq: p.FmCeSe != 0, DestQP: uint16(p.QPN),
			Imm: p.Imm, AH: p.AH, Length: uint16(p.Length), RKey: p.RKey,
			RemoteAddr: p.RemoteAddr + uint64(k)*uint64(p.Length), LKey: p.LKey, LocalAddr: p.LocalAddr,
		}
		slot := int(pc&(p.SQBBs-1)) * EFAWQEBytes
		copy(out.SQ[slot:], w.Encode())
		pc++
	}
	out.Doorbell = EFADoorbell(pc)
	return out, nil
}

// efaVerifyCases cover both doorbell targets, several orderings, a wrap of
// the ring (phase flip) and immediate data with and without a completion.
var efaVerifyCases = []struct {
	mode    string
	target  DoorbellTarget
	ring    uint32
	startPC uint32
	count   int
	imm     uint32
	comp    uint8
	length  uint32
}{
	{"fence-sys", HostMapped, 16, 13, 7, 0, 1, 8},
	{"gpu-fence", DeviceMemory, 16, 0, 5, 0xdead_beef, 1, 4096},
	{"release-sys", HostMapped, 8, 30, 9, 7, 0, 65535},
	{"none", DeviceMemory, 32, 65530, 12, 0, 1, 7168},
}

// VerifyEFAWQEs has the GPU post EFA WQEs as DP Direct does and checks
// every byte and the doorbell against the host encoder. It returns the
// number of WQEs checked.
func (l *Lib) VerifyEFAWQEs() (int, error) {
	checked := 0
	for i, c := range efaVerifyCases {
		p := WQEParams{
			RemoteAddr: 0x7f00_1234_5000 + uint64(i)<<20, LocalAddr: 0x7e00_0000_8000, QPN: 0x1200 + uint32(i),
			RKey: 0x1111_2222, LKey: 0x3333_4444, Imm: c.imm, Length: c.length, SQBBs: c.ring, StartPI: c.startPC,
			FmCeSe: c.comp, Format: EFA, AH: 0x40 + uint16(i),
		}
		want, err := ExpectedEFAPosting(p, c.count)
		if err != nil {
			return checked, err
		}
		got, err := l.BuildWQEs(p, c.count, c.mode, c.target, nil)
		if err != nil {
			return checked, err
		}
		name := fmt.Sprintf("case %d (%d B, %s, %s doorbell)", i, c.length, c.mode, c.target)
		if err := compareEFA(got, want); err != nil {
			return checked, fmt.Errorf("native: GPU-built WQEs differ from the EFA layout: %s: %w", name, err)
		}
		checked += c.count
	}
	return checked, nil
}

// compareEFA reports the first WQE or doorbell that differs, decoded.
func compareEFA(got, want Posted) error {
	if len(got.SQ) != len(want.SQ) {
		return fmt.Errorf("send queue is %d bytes, want %d", len(got.SQ), len(want.SQ))
	}
	if got.Doorbell != want.Doorbell {
		return fmt.Errorf("doorbell % x, want % x", got.Doorbell[:4], want.Doorbell[:4])
	}
	for s := 0; s < len(got.SQ)/EFAWQEBytes; s++ {
		g, w := got.SQ[s*EFAWQEBytes:(s+1)*EFAWQEBytes], want.SQ[s*EFAWQEBytes:(s+1)*EFAWQEBytes]
		if bytes.Equal(g, w) {
			continue
		}
		gw, gerr := DecodeEFAWrite(g)
		ww, _ := DecodeEFAWrite(w)
		return fmt.Errorf("slot %d: got %+v (decode: %v), want %+v", s, gw, gerr, ww)
	}
	return nil
}
