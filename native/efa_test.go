package native

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// The encoder lays an EFA RDMA write out as rdma-core's efa_io_defs.h has
// it, byte for byte (the expectation is typed from the header's fields).
func TestEFAWriteEncodesTheHeaderLayout(t *testing.T) {
	t.Parallel()
	w := EFAWrite{ReqID: 0x0102, Phase: 1, CompReq: true, DestQP: 0x0304, Imm: 0x05060708, AH: 0x090a, Length: 0x0b0c,
		RKey: 0x0d0e0f10, RemoteAddr: 0x1112131415161718, LKey: 0x191a1b1c, LocalAddr: 0x1d1e1f2021222324}
	want := strings.Join([]string{
		"0201", "93", "1d", "0403", "0100", "08070605", "0a09", "0000", // meta: op 3 | has_imm | meta_desc; phase|first|last|comp_req
		"0c0b", "c0", "00", "100f0e0d", "1817161514131211", // remote: meta_extension | meta_desc
		"0c0b", "00", "08", "1c1b1a19", "24232221201f1e1d", // buffer: last
		"00000000000000000000000000000000",
	}, "")
	if got := hex.EncodeToString(w.Encode()); got != want {
		t.Fatalf("encoded\n%s\nwant\n%s", got, want)
	}
	back, err := DecodeEFAWrite(w.Encode())
	if err != nil || back != w {
		t.Fatalf("decoded %+v, %v; want %+v", back, err, w)
	}
}

func TestEFADecodeRefusesWhatIsNotAWrite(t *testing.T) {
	t.Parallel()
	good := EFAWrite{ReqID: 3, DestQP: 9, AH: 2, Length: 8, RKey: 1, LKey: 2}.Encode()
	for _, tc := range []struct {
		name string
		at   int
		v    byte
	}{
		{"send op", 2, 0x81}, {"no meta_desc", 2, 0x03}, {"has_imm without data", 2, 0x93}, {"not first", 3, 0x08},
		{"two buffers", 6, 2}, {"remote ctrl", 18, 0x80}, {"buffer not last", 35, 0}, {"second buffer", 50, 1},
	} {
		b := bytes.Clone(good)
		b[tc.at] = tc.v
		if _, err := DecodeEFAWrite(b); !errors.Is(err, ErrEFAWQE) {
			t.Errorf("%s: %v, want ErrEFAWQE", tc.name, err)
		}
	}
	if _, err := DecodeEFAWrite(good[:63]); !errors.Is(err, ErrEFAWQE) {
		t.Errorf("short: %v", err)
	}
}

// Posting wraps the ring: slot = counter mod ring, the phase bit flips
// with each pass, and the doorbell holds the counter's low 16 bits.
func TestExpectedEFAPostingWrapsTheRing(t *testing.T) {
	t.Parallel()
	p := WQEParams{RemoteAddr: 0x1000, Length: 64, SQBBs: 4, StartPI: 65534, QPN: 0x10007, Format: EFA, AH: 5}
	got, err := ExpectedEFAPosting(p, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Counters 65534..65538: slots 2, 3, 0, 1, 2; passes 16383 (odd) then 16384.
	for i, want := range []struct {
		slot  int
		req   uint16
		phase uint8
		raddr uint64
	}{{2, 65534, 1, 0x1000}, {3, 65535, 1, 0x1040}, {0, 0, 0, 0x1080}, {1, 1, 0, 0x10c0}, {2, 2, 0, 0x1100}} {
		if i == 0 {
			continue // slot 2 was written again by the fifth WQE
		}
		w, err := DecodeEFAWrite(got.SQ[want.slot*EFAWQEBytes:])
		if err != nil {
			t.Fatalf("slot %d: %v", want.slot, err)
		}
		if w.ReqID != want.req || w.Phase != want.phase || w.RemoteAddr != want.raddr || w.DestQP != 7 || w.AH != 5 {
			t.Errorf("slot %d: %+v, want req %d phase %d raddr %#x", want.slot, w, want.req, want.phase, want.raddr)
		}
	}
	if got.Doorbell != [8]byte{3, 0, 0, 0} {
		t.Errorf("doorbell % x, want counter 65539 & 0xffff = 3", got.Doorbell)
	}
	if _, err := ExpectedEFAPosting(WQEParams{SQBBs: 4, Length: 70000}, 1); err == nil {
		t.Error("a 70,000 B write fits no 16-bit length field")
	}
}

func TestEFAIssueRefusesWhatEFACannotPost(t *testing.T) {
	t.Parallel()
	for _, c := range []IssueConfig{{Mode: "gpu-fence", Format: EFA, InlineBytes: 8}, {Mode: "fenced-dbrec", Format: EFA}, {Mode: "none", Format: 7}} {
		if err := c.checkFormat(); !errors.Is(err, ErrBadArgument) {
			t.Errorf("%+v: %v, want ErrBadArgument", c, err)
		}
	}
	if err := (IssueConfig{Mode: "fence-sys", Format: EFA}).checkFormat(); err != nil {
		t.Error(err)
	}
}
