package emunic

import (
	"bytes"
	"encoding/binary"
	"testing"

	"moebench/native"
)

// rig is two ranks' registered buffers and a queue from rank 0 to rank 1.
type rig struct {
	mem     [2]*Buffer
	regions []Region
	q       *Queue
	pi      uint32
	last    native.WQE
}

func newRig(t *testing.T, bbs int, dc bool) *rig {
	t.Helper()
	r := &rig{}
	for i := range r.mem {
		r.mem[i] = Alloc(4096)
		r.regions = append(r.regions, Region{Buf: r.mem[i], Key: 0x100 + uint32(i)})
	}
	r.q = &Queue{SQ: Alloc(bbs * native.BasicBlock), CQ: Alloc(8 * 64), Src: 0, Dst: 1, Cur: -1, DC: dc}
	t.Cleanup(func() {
		for _, b := range []*Buffer{r.mem[0], r.mem[1], r.q.SQ, r.q.CQ} {
			b.Free()
		}
	})
	return r
}

// post encodes w at the rig's producer index, as a poster would.
func (r *rig) post(t *testing.T, w native.WQE) {
	t.Helper()
	w.QPN = 0x1234
	pi, err := native.PostWQE(r.q.SQ.Bytes(), r.pi, w)
	if err != nil {
		t.Fatal(err)
	}
	w.Index = uint16(r.pi)
	r.pi, r.last = pi, w
}

func (r *rig) doorbell(t *testing.T) [8]byte {
	t.Helper()
	d, err := r.last.Doorbell()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (r *rig) write(off, len int, dstOff int) native.WQE {
	return native.WQE{Opcode: native.OpcodeRDMAWrite, RemoteAddr: r.mem[1].Addr() + uint64(dstOff), RKey: 0x101,
		ByteCount: uint32(len), LKey: 0x100, LocalAddr: r.mem[0].Addr() + uint64(off)}
}

func (r *rig) atomic(add uint64, dstOff, fetchOff int) native.WQE {
	return native.WQE{Opcode: native.OpcodeAtomicFA, RemoteAddr: r.mem[1].Addr() + uint64(dstOff), RKey: 0x101, Add: add,
		LKey: 0x100, LocalAddr: r.mem[0].Addr() + uint64(fetchOff), FmCeSe: native.CtrlCQUpdate}
}

// cqe decodes CQE i: qpn, wqe counter, opcode and owner.
func cqe(q *Queue, i int) (qpn uint32, counter uint16, opcode, owner uint8, syndrome uint8) {
	b := q.CQ.Bytes()[i*64 : i*64+64]
	be := binary.BigEndian
	return be.Uint32(b[56:]) & 0xffffff, be.Uint16(b[60:]), b[63] >> 4, b[63] & 1, b[55]
}

// Writes then a count: the data lands, the atomic adds and hands back the
// old value, the signaled WQE leaves a CQE naming it.
func TestWritesThenAtomic(t *testing.T) {
	t.Parallel()
	r := newRig(t, 64, false)
	src := r.mem[0].Bytes()
	for i := range 256 {
		src[i] = byte(i*7 + 3)
	}
	binary.LittleEndian.PutUint64(r.mem[1].Bytes()[1024:], 40)
	r.post(t, r.write(0, 160, 512))
	r.post(t, r.write(160, 96, 2048))
	r.post(t, r.atomic(^uint64(2), 1024, 3072)) // add -3, as a count of 2 tokens
	n, st := r.q.Drain(r.doorbell(t), r.regions)
	if st != OK || n != 3 {
		t.Fatalf("drain: %d executed, %v", n, st)
	}
	dst := r.mem[1].Bytes()
	if !bytes.Equal(dst[512:672], src[:160]) || !bytes.Equal(dst[2048:2144], src[160:256]) {
		t.Fatal("write payloads differ")
	}
	if v := int64(binary.LittleEndian.Uint64(dst[1024:])); v != 37 {
		t.Fatalf("counter = %d, want 37", v)
	}
	if old := binary.LittleEndian.Uint64(src[3072:]); old != 40 {
		t.Fatalf("fetched %d, want the old 40", old)
	}
	if r.q.CI != r.pi || r.q.CQPI != 1 {
		t.Fatalf("ci %d (want %d), %d CQEs (want 1)", r.q.CI, r.pi, r.q.CQPI)
	}
	if qpn, ctr, op, owner, _ := cqe(r.q, 0); qpn != 0x1234 || ctr != 2 || op != 0 || owner != 0 {
		t.Fatalf("CQE: qpn %#x counter %d opcode %d owner %d", qpn, ctr, op, owner)
	}
	// The same doorbell again announces nothing new.
	if n, st := r.q.Drain(r.doorbell(t), r.regions); n != 0 || st != OK {
		t.Fatalf("repeated doorbell: %d executed, %v", n, st)
	}
}

// A doorbell batches: WQEs posted before the one it names run with it; an
// inline payload comes from the WQE itself.
func TestBatchAndInline(t *testing.T) {
	t.Parallel()
	r := newRig(t, 16, false)
	payload := []byte("eight by")
	w := native.WQE{Opcode: native.OpcodeRDMAWrite, RemoteAddr: r.mem[1].Addr() + 8, RKey: 0x101, Inline: payload}
	r.post(t, w)
	r.post(t, r.write(0, 64, 256))
	first := r.doorbell(t)
	r.post(t, r.write(64, 64, 512))
	if n, st := r.q.Drain(first, r.regions); n != 2 || st != OK {
		t.Fatalf("first doorbell: %d executed, %v", n, st)
	}
	if !bytes.Equal(r.mem[1].Bytes()[8:16], payload) {
		t.Fatalf("inline payload: %q", r.mem[1].Bytes()[8:16])
	}
	if n, st := r.q.Drain(r.doorbell(t), r.regions); n != 1 || st != OK {
		t.Fatalf("second doorbell: %d executed, %v", n, st)
	}
}

// Keys and ranges are checked: the NIC refuses, reports an error CQE and
// leaves the consumer index at the refused WQE.
func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mut  func(r *rig, w *native.WQE)
		want Status
	}{
		{"wrong rkey", func(r *rig, w *native.WQE) { w.RKey = 0x100 }, BadRKey},
		{"past the region", func(r *rig, w *native.WQE) { w.RemoteAddr = r.mem[1].Addr() + 4090 }, BadRKey},
		{"below the region", func(r *rig, w *native.WQE) { w.RemoteAddr = r.mem[1].Addr() - 64 }, BadRKey},
		{"wrong lkey", func(r *rig, w *native.WQE) { w.LKey = 7 }, BadLKey},
		{"local range", func(r *rig, w *native.WQE) { w.ByteCount = 5000 }, BadRKey},
		{"opcode", func(r *rig, w *native.WQE) { w.Opcode = 0x0a }, BadOpcode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, 16, false)
			w := r.write(0, 64, 0)
			tc.mut(r, &w)
			r.post(t, w)
			n, st := r.q.Drain(r.doorbell(t), r.regions)
			if st != tc.want || n != 0 {
				t.Fatalf("%d executed, %v; want %v", n, st, tc.want)
			}
			if _, _, op, _, syn := cqe(r.q, 0); op != 0xd || Status(syn) != tc.want {
				t.Fatalf("error CQE: opcode %#x syndrome %d", op, syn)
			}
			if r.q.CI != 0 {
				t.Fatalf("ci moved to %d", r.q.CI)
			}
		})
	}
	t.Run("unaligned atomic", func(t *testing.T) {
		r := newRig(t, 16, false)
		r.post(t, r.atomic(1, 1025, 0))
		if _, st := r.q.Drain(r.doorbell(t), r.regions); st != BadAlign {
			t.Fatalf("status %v", st)
		}
	})
}

// A WQE whose stores are not visible yet (the slot still holds an old
// lap's) is not executed: the NIC retries it later.
func TestNotReady(t *testing.T) {
	t.Parallel()
	r := newRig(t, 16, false)
	r.post(t, r.write(0, 64, 0))
	db := r.doorbell(t)
	ring := r.q.SQ.Bytes()
	binary.BigEndian.PutUint32(ring[0:], 0xff00|native.OpcodeRDMAWrite) // another WQE index
	if n, st := r.q.Drain(db, r.regions); st != NotReady || n != 0 {
		t.Fatalf("%d executed, %v; want not ready", n, st)
	}
	r.pi = 0
	r.post(t, r.write(0, 64, 0))
	if n, st := r.q.Drain(db, r.regions); st != OK || n != 1 {
		t.Fatalf("after the stores landed: %d executed, %v", n, st)
	}
}

// A DCI reads each WQE's destination from its address vector, counts
// re-targets, and refuses a destination that is no rank; a two-block WQE
// wraps the ring.
func TestDC(t *testing.T) {
	t.Parallel()
	r := newRig(t, 8, true)
	r.regions = append(r.regions, Region{Buf: Alloc(4096), Key: 0x102})
	defer r.regions[2].Buf.Free()
	to := func(rank int, w native.WQE) native.WQE {
		w.AV = &native.AddressVector{DCKey: 0x4d4f45, DCT: uint32(rank), RLID: uint16(rank)}
		return w
	}
	w2 := r.write(0, 32, 0)
	w2.RemoteAddr, w2.RKey = r.regions[2].Buf.Addr(), 0x102
	r.pi = 5
	r.q.CI = 5
	r.post(t, to(1, r.write(0, 32, 0)))
	r.post(t, to(2, w2))
	r.post(t, to(1, r.atomic(5, 64, 8))) // two basic blocks at 7: wraps to 0
	n, st := r.q.Drain(r.doorbell(t), r.regions)
	if st != OK || n != 3 || r.q.Switches != 2 || r.q.Cur != 1 {
		t.Fatalf("%d executed, %v, %d switches, current %d", n, st, r.q.Switches, r.q.Cur)
	}
	if got := binary.LittleEndian.Uint64(r.mem[1].Bytes()[64:]); got != 5 {
		t.Fatalf("wrapped atomic added %d", got)
	}
	r.post(t, to(9, r.write(0, 32, 0)))
	if _, st := r.q.Drain(r.doorbell(t), r.regions); st != BadDest {
		t.Fatalf("destination 9: %v", st)
	}
}

// Arbitrary queue contents never crash the NIC or make it run away: it
// executes, refuses or waits (a write lands only where a region's key
// allows, which random addresses never hit).
func FuzzDrain(f *testing.F) {
	f.Add(make([]byte, 512), uint64(0), uint16(0), false)
	f.Add(bytes.Repeat([]byte{0x08, 0, 0, 0x08, 0, 0x12, 0x34, 3}, 64), uint64(0x0000000800000008), uint16(0), true)
	f.Fuzz(func(t *testing.T, ring []byte, db uint64, ci uint16, dc bool) {
		if len(ring) < 512 {
			ring = append(ring, make([]byte, 512-len(ring))...)
		}
		ring = ring[:512]
		q := &Queue{SQ: Alloc(512), Src: 0, Dst: 1, Cur: -1, DC: dc, CI: uint32(ci)}
		defer q.SQ.Free()
		copy(q.SQ.Bytes(), ring)
		mem := []*Buffer{Alloc(256), Alloc(256)}
		defer mem[0].Free()
		defer mem[1].Free()
		var d [8]byte
		binary.LittleEndian.PutUint64(d[:], db)
		n, st := q.Drain(d, []Region{{mem[0], 1}, {mem[1], 2}})
		// A lap of the ring at most: past it, no slot holds the index the
		// consumer index expects.
		if n > 8 {
			t.Fatalf("%d WQEs executed from an 8-block ring", n)
		}
		if n == 0 && q.CI != uint32(ci) {
			t.Fatalf("ci moved without executing")
		}
		if st != OK && st != NotReady && (st < BadDS || st > BadAlign) {
			t.Fatalf("status %v", st)
		}
	})
}

// efaRig is rank 0's SRD queue of entries 64 B entries to ranks 1 and 2.
type efaRig struct {
	mem     [3]*Buffer
	regions []Region
	q       *Queue
	pc      uint32
}

func newEFARig(t *testing.T, entries int) *efaRig {
	t.Helper()
	r := &efaRig{}
	for i := range r.mem {
		r.mem[i] = Alloc(4096)
		r.regions = append(r.regions, Region{Buf: r.mem[i], Key: 0x100 + uint32(i)})
	}
	r.q = &Queue{SQ: Alloc(entries * native.EFAWQEBytes), Src: 0, Cur: -1, EFA: true}
	t.Cleanup(func() {
		for _, b := range []*Buffer{r.mem[0], r.mem[1], r.mem[2], r.q.SQ} {
			b.Free()
		}
	})
	return r
}

// post writes w at the producer counter with its req_id and phase, as
// the GPU poster does.
func (r *efaRig) post(w native.EFAWrite) {
	entries := uint32(r.q.SQ.n / native.EFAWQEBytes)
	w.ReqID, w.Phase = uint16(r.pc), uint8(r.pc/entries&1)
	copy(r.q.SQ.Bytes()[(r.pc%entries)*native.EFAWQEBytes:], w.Encode())
	r.pc++
}

func (r *efaRig) doorbell() (db [8]byte) {
	binary.LittleEndian.PutUint64(db[:], uint64(r.pc))
	return db
}

func (r *efaRig) write(dst, off, n, dstOff int) native.EFAWrite {
	return native.EFAWrite{AH: uint16(dst), DestQP: 1, Length: uint16(n), RKey: 0x100 + uint32(dst),
		RemoteAddr: r.mem[dst].Addr() + uint64(dstOff), LKey: 0x100, LocalAddr: r.mem[0].Addr() + uint64(off)}
}

func (r *efaRig) flag(dst int, add int32, dstOff int) native.EFAWrite {
	return native.EFAWrite{AH: uint16(dst), DestQP: 1, Imm: uint32(add), RKey: 0x100 + uint32(dst),
		RemoteAddr: r.mem[dst].Addr() + uint64(dstOff)}
}

// An SRD queue serves several peers: each entry's address handle names
// its rank; a flag adds its sign-extended immediate; the ring wraps with
// the phase bit flipping; an entry of the previous pass is not ready.
func TestEFA(t *testing.T) {
	t.Parallel()
	r := newEFARig(t, 4)
	src := r.mem[0].Bytes()
	for i := range 256 {
		src[i] = byte(i + 1)
	}
	r.post(r.write(1, 0, 64, 0))
	r.post(r.write(2, 64, 32, 128))
	r.post(r.flag(1, -3, 512))
	n, st := r.q.Drain(r.doorbell(), r.regions)
	if st != OK || n != 3 || r.q.CI != 3 {
		t.Fatalf("%d executed, %v, ci %d", n, st, r.q.CI)
	}
	if !bytes.Equal(r.mem[1].Bytes()[:64], src[:64]) || !bytes.Equal(r.mem[2].Bytes()[128:160], src[64:96]) {
		t.Fatal("writes did not land at their address handles' ranks")
	}
	if got := int64(binary.LittleEndian.Uint64(r.mem[1].Bytes()[512:])); got != -3 {
		t.Fatalf("flag holds %d, want -3", got)
	}
	// Entries 3, 4 (slot 0 on the second pass, phase 1) and 5.
	r.post(r.flag(1, 5, 512))
	r.post(r.write(2, 0, 16, 0))
	r.post(r.flag(2, 1, 8))
	if n, st := r.q.Drain(r.doorbell(), r.regions); st != OK || n != 3 || r.q.CI != 6 {
		t.Fatalf("wrapped: %d executed, %v, ci %d", n, st, r.q.CI)
	}
	if got := int64(binary.LittleEndian.Uint64(r.mem[1].Bytes()[512:])); got != 2 {
		t.Fatalf("flag holds %d after +5, want 2", got)
	}
	// Announced but not yet written: slot 2 still holds the first pass's
	// entry (phase 0, req_id 2).
	db := r.doorbell()
	binary.LittleEndian.PutUint64(db[:], uint64(r.pc+1))
	if n, st := r.q.Drain(db, r.regions); st != NotReady || n != 0 {
		t.Fatalf("stale entry: %d executed, %v", n, st)
	}
	// A never-rung doorbell and one already served do nothing.
	if n, st := r.q.Drain([8]byte{}, r.regions); st != OK || n != 0 {
		t.Fatalf("doorbell 0: %d executed, %v", n, st)
	}
}

func TestEFARefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		w    func(r *efaRig) native.EFAWrite
		want Status
	}{
		{"address handle past the ranks", func(r *efaRig) native.EFAWrite { w := r.write(1, 0, 8, 0); w.AH = 9; return w }, BadDest},
		{"remote key of another rank", func(r *efaRig) native.EFAWrite { w := r.write(1, 0, 8, 0); w.RKey = 0x102; return w }, BadRKey},
		{"local range past the region", func(r *efaRig) native.EFAWrite { return r.write(1, 4090, 64, 0) }, BadLKey},
		{"a flag with a payload", func(r *efaRig) native.EFAWrite { w := r.flag(1, 1, 0); w.Length = 8; return w }, BadDS},
		{"an unaligned flag", func(r *efaRig) native.EFAWrite { return r.flag(1, 1, 4) }, BadAlign},
	} {
		r := newEFARig(t, 8)
		r.post(c.w(r))
		if n, st := r.q.Drain(r.doorbell(), r.regions); st != c.want || n != 0 {
			t.Errorf("%s: %d executed, %v; want %v", c.name, n, st, c.want)
		}
	}
	r := newEFARig(t, 8)
	r.post(r.write(1, 0, 8, 0))
	r.q.SQ.Bytes()[2] = 0x80 | 0x1 // op type 1 (send), not an RDMA write
	if _, st := r.q.Drain(r.doorbell(), r.regions); st != BadOpcode {
		t.Errorf("a send: %v, want bad opcode", st)
	}
}

// Arbitrary SRD queue contents never crash the NIC or make it run away.
func FuzzDrainEFA(f *testing.F) {
	f.Add(make([]byte, 512), uint64(1), uint16(0))
	f.Add(bytes.Repeat([]byte{0, 0, 0x83, 0x0c, 1, 0, 1, 0}, 64), uint64(3), uint16(0))
	f.Fuzz(func(t *testing.T, ring []byte, db uint64, ci uint16) {
		if len(ring) < 512 {
			ring = append(ring, make([]byte, 512-len(ring))...)
		}
		q := &Queue{SQ: Alloc(512), Src: 0, Cur: -1, EFA: true, CI: uint32(ci)}
		defer q.SQ.Free()
		copy(q.SQ.Bytes(), ring[:512])
		mem := []*Buffer{Alloc(256), Alloc(256)}
		defer mem[0].Free()
		defer mem[1].Free()
		regions := []Region{{Buf: mem[0], Key: 1}, {Buf: mem[1], Key: 2}}
		var d [8]byte
		binary.LittleEndian.PutUint64(d[:], db)
		n, st := q.Drain(d, regions)
		if n > 0xffff {
			t.Fatalf("%d executed from a ring of 8 entries: ran away", n)
		}
		_ = st
	})
}
