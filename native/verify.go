package native

import (
	"bytes"
	"fmt"
)

// wqeCase is one layout the GPU builds and the host decoder checks.
type wqeCase struct {
	inline  bool
	length  uint32
	mode    string
	target  DoorbellTarget
	sqBBs   uint32
	startPI uint32
	count   int
}

// verifyCases cover every inline size class (1 to 4 basic blocks), a
// pointer payload, both doorbell targets, and wraps of the ring.
var verifyCases = []wqeCase{
	{true, 8, "gpu-fence", HostMapped, 64, 60, 9},
	{true, 28, "none", DeviceMemory, 64, 0, 3},
	{true, 92, "release-gpu", HostMapped, 64, 61, 5},
	{true, 220, "fence-sys", DeviceMemory, 64, 62, 7},
	{false, 4096, "threadfence", HostMapped, 16, 14, 4},
}

// ExpectedPosting encodes on the host what BuildWQEs should leave behind.
func ExpectedPosting(p WQEParams, count int, payload []byte) (Posted, error) {
	out := Posted{SQ: make([]byte, int(p.SQBBs)*BasicBlock)}
	pi := p.StartPI
	var last WQE
	for k := 0; k < count; k++ {
		w := WQE{
			Opmod: p.Opmod, Opcode: OpcodeRDMAWrite, QPN: p.QPN, FmCeSe: p.FmCeSe, Imm: p.Imm,
			RemoteAddr: p.RemoteAddr + uint64(k)*uint64(p.Length), RKey: p.RKey,
		}
		if p.Inline {
			w.Inline = payload[:p.Length]
		} else {
			w.ByteCount, w.LKey, w.LocalAddr = p.Length, p.LKey, p.LocalAddr
		}
		w.Index = uint16(pi)
		last = w
		var err error
		if pi, err = PostWQE(out.SQ, pi, w); err != nil {
			return Posted{}, err
		}
	}
	out.DBRec = DoorbellRecord(pi)
	db, err := last.Doorbell()
	out.Doorbell = db
	return out, err
}

// VerifyWQEs has the GPU build WQEs of every size class with several
// orderings and doorbell targets, then decodes what it wrote and checks
// every field, the doorbell record and the doorbell against the host
// encoder. It returns the number of WQEs checked.
func (l *Lib) VerifyWQEs() (int, error) {
	checked := 0
	for i, c := range verifyCases {
		p := WQEParams{
			RemoteAddr: 0x7f00_1234_5000 + uint64(i)<<20, LocalAddr: 0x7e00_0000_8000, QPN: 0xabcde + uint32(i),
			RKey: 0x1111_2222, LKey: 0x3333_4444, Imm: 0xdead_beef, Length: c.length, Inline: c.inline,
			SQBBs: c.sqBBs, StartPI: c.startPI, Opmod: 0, FmCeSe: CtrlCQUpdate,
		}
		var payload []byte
		if c.inline {
			payload = PayloadPattern(int(c.length), uint32(i+1))
		}
		got, err := l.BuildWQEs(p, c.count, c.mode, c.target, payload)
		if err != nil {
			return checked, err
		}
		want, err := ExpectedPosting(p, c.count, payload)
		if err != nil {
			return checked, err
		}
		name := fmt.Sprintf("case %d (%d B %s, %s, %s doorbell)", i, c.length, map[bool]string{true: "inline", false: "pointer"}[c.inline], c.mode, c.target)
		if err := comparePosting(got, want); err != nil {
			return checked, fmt.Errorf("native: GPU-built WQEs differ from the mlx5 layout: %s: %w", name, err)
		}
		checked += c.count
	}
	return checked, nil
}

// comparePosting reports the first field that differs, decoding both sides.
func comparePosting(got, want Posted) error {
	if len(got.SQ) != len(want.SQ) {
		return fmt.Errorf("send queue is %d bytes, want %d", len(got.SQ), len(want.SQ))
	}
	if got.DBRec != want.DBRec {
		return fmt.Errorf("doorbell record % x, want % x (pi %d vs %d)", got.DBRec, want.DBRec,
			ParseDoorbellRecord(got.DBRec), ParseDoorbellRecord(want.DBRec))
	}
	if got.Doorbell != want.Doorbell {
		gi, gq, _ := ParseDoorbell(got.Doorbell)
		wi, wq, _ := ParseDoorbell(want.Doorbell)
		return fmt.Errorf("doorbell % x (idx %d qpn %#x), want % x (idx %d qpn %#x)", got.Doorbell, gi, gq, want.Doorbell, wi, wq)
	}
	if bytes.Equal(got.SQ, want.SQ) {
		return nil
	}
	// Find the first differing basic block and explain it field by field.
	for bb := 0; bb < len(got.SQ)/BasicBlock; bb++ {
		g := got.SQ[bb*BasicBlock : (bb+1)*BasicBlock]
		w := want.SQ[bb*BasicBlock : (bb+1)*BasicBlock]
		if bytes.Equal(g, w) {
			continue
		}
		gw, _, gerr := ReadWQE(got.SQ, uint32(bb))
		ww, _, werr := ReadWQE(want.SQ, uint32(bb))
		if gerr == nil && werr == nil {
			return fmt.Errorf("basic block %d: got %+v, want %+v", bb, gw, ww)
		}
		return fmt.Errorf("basic block %d: got % x, want % x (decode: %v / %v)", bb, g, w, gerr, werr)
	}
	return nil
}
