package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func TestEncodeLayout(t *testing.T) {
	t.Parallel()
	// Sizes from the paper's Fig. 2: 28 B inline fits one 64 B basic
	// block, 92 B needs two.
	for _, tc := range []struct {
		inline  int
		ds, bbs int
	}{
		{8, 3, 1}, {12, 3, 1}, {16, 4, 1}, {28, 4, 1}, {32, 5, 2}, {60, 6, 2}, {92, 8, 2}, {124, 10, 3}, {220, 16, 4},
	} {
		w := WQE{Opcode: OpcodeRDMAWrite, QPN: 1, Inline: make([]byte, tc.inline)}
		ds, bbs, err := w.Layout()
		if err != nil || ds != tc.ds || bbs != tc.bbs {
			t.Errorf("inline %d: ds %d bbs %d err %v, want ds %d bbs %d", tc.inline, ds, bbs, err, tc.ds, tc.bbs)
		}
	}
}

func TestEncodeFields(t *testing.T) {
	t.Parallel()
	w := WQE{
		Opmod: 0x01, Index: 0x1234, Opcode: OpcodeRDMAWrite, QPN: 0xabcdef, FmCeSe: CtrlCQUpdate, Imm: 0x01020304,
		RemoteAddr: 0x1122334455667788, RKey: 0x99aabbcc, Inline: []byte{1, 2, 3, 4, 5, 6, 7, 8},
	}
	b, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x01, 0x12, 0x34, 0x08, 0xab, 0xcd, 0xef, 0x03, 0, 0, 0, 0x08, 0x01, 0x02, 0x03, 0x04,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0, 0, 0, 0,
		0x80, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0,
	}
	if !bytes.Equal(b[:48], want) {
		t.Fatalf("encoded\n% x\nwant\n% x", b[:48], want)
	}
	if len(b) != 64 || !bytes.Equal(b[48:], make([]byte, 16)) {
		t.Fatalf("want one zero-padded basic block, got %d bytes", len(b))
	}
	db, _ := w.Doorbell()
	if !bytes.Equal(db[:], want[:8]) {
		t.Fatalf("doorbell % x, want the ctrl segment's first 8 bytes", db)
	}
	if idx, qpn, op := ParseDoorbell(db); idx != 0x1234 || qpn != 0xabcdef || op != OpcodeRDMAWrite {
		t.Fatalf("ParseDoorbell = %#x %#x %#x", idx, qpn, op)
	}
	// The doorbell as a little-endian 64-bit store (how the GPU writes it).
	v := binary.LittleEndian.Uint64(db[:])
	if uint32(v) != binary.LittleEndian.Uint32(want[0:4]) {
		t.Fatalf("little-endian doorbell word %#x", v)
	}
}

func TestDataSegment(t *testing.T) {
	t.Parallel()
	w := WQE{Opcode: OpcodeRDMAWrite, QPN: 7, RemoteAddr: 1 << 40, RKey: 5, ByteCount: 4096, LKey: 9, LocalAddr: 0xdead0000}
	b, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(b[32:]); got != 4096 {
		t.Fatalf("byte count %d", got)
	}
	d, err := DecodeWQE(b)
	if err != nil {
		t.Fatal(err)
	}
	w.DS = 3
	if fmt.Sprint(d) != fmt.Sprint(w) {
		t.Fatalf("round trip\n%+v\nwant\n%+v", d, w)
	}
}

func TestRingWrapRoundTrip(t *testing.T) {
	t.Parallel()
	ring := make([]byte, 8*BasicBlock)
	pi := uint32(6)
	var posted []WQE
	for k := 0; k < 3; k++ {
		w := WQE{Opcode: OpcodeRDMAWrite, QPN: 0x42, RemoteAddr: uint64(k) * 92, RKey: 3, FmCeSe: CtrlCQUpdate, Inline: PayloadPattern(92, uint32(k))}
		next, err := PostWQE(ring, pi, w)
		if err != nil {
			t.Fatal(err)
		}
		w.Index, w.DS = uint16(pi), 8
		posted = append(posted, w)
		pi = next
	}
	if pi != 12 {
		t.Fatalf("pi %d, want 12", pi)
	}
	// The first WQE starts at bb 6 and wraps into bb 0; the third was
	// written over bbs 2-3 and so is intact.
	for k, start := range []uint32{6, 8, 10} {
		got, bbs, err := ReadWQE(ring, start)
		if err != nil {
			t.Fatalf("wqe %d: %v", k, err)
		}
		if bbs != 2 || fmt.Sprint(got) != fmt.Sprint(posted[k]) {
			t.Fatalf("wqe %d: %+v (%d bbs), want %+v", k, got, bbs, posted[k])
		}
	}
	if rec := DoorbellRecord(pi); ParseDoorbellRecord(rec) != 12 || rec != [4]byte{0, 0, 0, 12} {
		t.Fatalf("dbrec % x", rec)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	good, _ := WQE{Opcode: OpcodeRDMAWrite, QPN: 1, Inline: make([]byte, 8)}.Encode()
	for name, mut := range map[string]func([]byte) []byte{
		"short":        func(b []byte) []byte { return b[:20] },
		"ds too small": func(b []byte) []byte { b[7] = 2; return b },
		"ds past data": func(b []byte) []byte { b[7] = 9; return b },
		"opcode":       func(b []byte) []byte { b[3] = 0x0a; return b },
		"inline overrun": func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[32:], InlineSegFlag|40)
			return b
		},
		"pointer ds": func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[32:], 8)
			b[7] = 4
			return b
		},
	} {
		b := mut(append([]byte{}, good...))
		if _, err := DecodeWQE(b); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if _, err := PostWQE(make([]byte, 3*BasicBlock), 0, WQE{}); !errors.Is(err, ErrRingSize) {
		t.Errorf("ring of 3 bbs: %v, want ErrRingSize", err)
	}
	if _, err := (WQE{QPN: 1 << 24}).Encode(); err == nil {
		t.Error("qpn over 24 bits: want an error")
	}
	if _, err := (WQE{Inline: make([]byte, MaxInline+1)}).Encode(); err == nil {
		t.Error("inline over MaxInline: want an error")
	}
}

func TestExpectedPostingMatchesDecoder(t *testing.T) {
	t.Parallel()
	for i, c := range verifyCases {
		p := WQEParams{RemoteAddr: 0x1000, QPN: 0x77, RKey: 1, LKey: 2, Length: c.length, Inline: c.inline, SQBBs: c.sqBBs, StartPI: c.startPI, FmCeSe: CtrlCQUpdate}
		var payload []byte
		if c.inline {
			payload = PayloadPattern(int(c.length), uint32(i))
		}
		got, err := ExpectedPosting(p, c.count, payload)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := comparePosting(got, got); err != nil {
			t.Fatalf("case %d: self comparison: %v", i, err)
		}
		// A flipped payload byte is found and explained.
		bad := got
		bad.SQ = append([]byte{}, got.SQ...)
		_, bbs, _ := ReadWQE(got.SQ, c.startPI)
		last := (c.startPI + uint32(bbs)*uint32(c.count-1)) % c.sqBBs
		bad.SQ[last*BasicBlock+17] ^= 0xff
		if err := comparePosting(bad, got); err == nil {
			t.Fatalf("case %d: corrupted send queue passed", i)
		}
	}
}

func FuzzWQERoundTrip(f *testing.F) {
	f.Add(uint8(0), uint16(5), uint32(0x123), uint64(0x1000), uint32(7), []byte{1, 2, 3, 4, 5, 6, 7, 8}, true, uint32(3))
	f.Add(uint8(1), uint16(0xffff), uint32(0xffffff), uint64(1<<63), uint32(0), []byte{}, false, uint32(0))
	f.Fuzz(func(t *testing.T, opmod uint8, idx uint16, qpn uint32, raddr uint64, rkey uint32, payload []byte, inline bool, pi uint32) {
		w := WQE{Opmod: opmod, Index: idx, Opcode: OpcodeRDMAWrite, QPN: qpn & 0xffffff, RemoteAddr: raddr, RKey: rkey, FmCeSe: CtrlCQUpdate}
		if inline {
			if len(payload) > MaxInline {
				payload = payload[:MaxInline]
			}
			w.Inline = append([]byte{}, payload...)
		} else {
			w.ByteCount, w.LKey, w.LocalAddr = uint32(len(payload)), rkey^1, raddr^2
		}
		ds, _, err := w.Layout()
		if err != nil {
			t.Fatal(err)
		}
		ring := make([]byte, 8*BasicBlock)
		next, err := PostWQE(ring, pi, w)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := ReadWQE(ring, pi)
		if err != nil {
			t.Fatal(err)
		}
		w.Index, w.DS = uint16(pi), uint8(ds)
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("round trip\n%+v\nwant\n%+v", got, w)
		}
		if ParseDoorbellRecord(DoorbellRecord(next)) != uint16(next) {
			t.Fatal("dbrec round trip")
		}
		// Whatever the bytes, decoding never panics.
		DecodeWQE(ring[(pi%8)*BasicBlock:])
	})
}

func ExampleWQE_Encode() {
	w := WQE{Index: 3, Opcode: OpcodeRDMAWrite, QPN: 0x1234, FmCeSe: CtrlCQUpdate, RemoteAddr: 0x10000, RKey: 0x55, Inline: []byte("8 bytes!")}
	b, _ := w.Encode()
	db, _ := w.Doorbell()
	fmt.Printf("ctrl  % x\nraddr % x\ninl   % x\ndoorbell % x\n", b[0:16], b[16:32], b[32:48], db)
	// Output:
	// ctrl  00 00 03 08 00 12 34 03 00 00 00 08 00 00 00 00
	// raddr 00 00 00 00 00 01 00 00 00 00 00 55 00 00 00 00
	// inl   80 00 00 08 38 20 62 79 74 65 73 21 00 00 00 00
	// doorbell 00 00 03 08 00 12 34 03
}
