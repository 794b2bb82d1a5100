package hw

import (
	"testing"
	"unsafe"

	"moebench/sim"
)

// A message record is one cache line: tens of millions are in flight at
// a few thousand ranks, and each NIC step reads one.
func TestMsgRecordIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(rec{}); n != 64 {
		t.Fatalf("message record is %d bytes, want 64", n)
	}
}

// Every field reads back as written at the edges of its packed range, and
// writing a message keeps what the NIC added to the record (references,
// waits, the wide timeline).
func TestMsgRoundTrips(t *testing.T) {
	for _, m := range []Msg{
		{},
		{Issue: maxIssue, Tag: -1, Channel: MaxChannel, QP: MaxQPs - 1, Dst: MaxNICs - 1, Src: MaxNICs - 1,
			Bytes: 1<<31 - 1, BBs: MaxBBs, WQE: 1<<31 - 1, Pointer: true, Atomic: true, Unsignaled: true, DC: true, Flush: true, NIC: true},
		{Issue: 5 * sim.Millisecond, Tag: 1 << 61, Channel: 7, QP: 3, Dst: 2, Src: 1, Bytes: 7168, BBs: 1, WQE: 9, Pointer: true},
		{Issue: 1, Tag: 42, Channel: 1, QP: MaxQPs - 1, Dst: 0, Src: 5, Bytes: 8, BBs: 2, Atomic: true, Flush: true, DC: true},
		{Issue: maxIssue, NIC: true},
	} {
		var r rec
		r.setRefs(2)
		r.addConnMiss()
		r.set(fWide, true)
		r.set(fDCISwitch, true)
		r.encode(&m)
		if got := r.decode(); got != m {
			t.Errorf("wrote %+v, read %+v", m, got)
		}
		if r.refs() != 2 || r.connMisses() != 1 || !r.has(fWide) || !r.has(fDCISwitch) {
			t.Errorf("writing %+v lost the NIC's state: refs %d, misses %d, wide %v, switch %v",
				m, r.refs(), r.connMisses(), r.has(fWide), r.has(fDCISwitch))
		}
	}
}

// A message outside the record's ranges is a model bug, caught where it is
// written rather than read back wrong.
func TestMsgOutOfRangePanics(t *testing.T) {
	for _, m := range []Msg{{Issue: -1}, {Issue: maxIssue + 1}, {Channel: MaxChannel + 1}, {BBs: MaxBBs + 1}, {QP: MaxQPs}, {Dst: -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v was written without complaint", m)
				}
			}()
			var r rec
			r.encode(&m)
		}()
	}
}
