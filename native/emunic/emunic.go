//go:build cgo

package emunic

/*
#cgo CFLAGS: -I${SRCDIR}/../src -std=c99
#include <stdlib.h>
#include "emunic.h"

static int drain(mbn_host_queue *q, uint64_t db, const mbn_region *r, int n, uint64_t *done) {
	return mbn_nic_host_drain(q, db, r, n, done);
}
*/
import "C"

import (
	"encoding/binary"
	"unsafe"
)

// Buffer is C memory: WQEs name it by address.
type Buffer struct {
	p unsafe.Pointer
	n int
}

// Alloc returns n zeroed bytes of C memory.
func Alloc(n int) *Buffer {
	return &Buffer{p: C.calloc(C.size_t(max(n, 1)), 1), n: n}
}

// Bytes is the buffer's memory.
func (b *Buffer) Bytes() []byte { return unsafe.Slice((*byte)(b.p), b.n) }

// Addr is the buffer's address, as a WQE names it.
func (b *Buffer) Addr() uint64 { return uint64(uintptr(b.p)) }

// Free releases the memory.
func (b *Buffer) Free() {
	if b.p != nil {
		C.free(b.p)
		b.p = nil
	}
}

// Drain executes the WQEs of q from its consumer index through the one
// doorbell db announces, against regions (indexed by rank). It returns
// how many executed and OK, NotReady (the WQE at the consumer index is
// not the announced one: its stores are not visible yet) or the refusal
// of the first WQE the NIC would not run (after an error CQE).
func (q *Queue) Drain(db [8]byte, regions []Region) (executed int, status Status) {
	cq := C.mbn_host_queue{
		sq: (*C.uint8_t)(q.SQ.p), bbs: C.uint32_t(q.SQ.n / 64), ci: C.uint32_t(q.CI), src: C.int32_t(q.Src),
		dst: C.int32_t(q.Dst), cq_pi: C.uint32_t(q.CQPI), cur: C.int32_t(q.Cur), switches: C.uint64_t(q.Switches),
	}
	if q.DC {
		cq.dc = 1
	}
	if q.EFA {
		cq.efa = 1
	}
	if q.CQ != nil {
		cq.cq = (*C.uint8_t)(q.CQ.p)
		cq.cq_entries = C.uint32_t(q.CQ.n / 64)
	}
	rs := (*C.mbn_region)(C.calloc(C.size_t(max(len(regions), 1)), C.size_t(unsafe.Sizeof(C.mbn_region{}))))
	defer C.free(unsafe.Pointer(rs))
	regs := unsafe.Slice(rs, len(regions))
	for i, g := range regions {
		c := &regs[i]
		c.base = C.uint64_t(g.Buf.Addr())
		c.len = C.uint64_t(g.Buf.n)
		c.key = C.uint32_t(g.Key)
		c.rank = C.int32_t(i)
	}
	var done C.uint64_t
	rc := C.drain(&cq, C.uint64_t(binary.LittleEndian.Uint64(db[:])), rs, C.int(len(regions)), &done)
	q.CI, q.CQPI, q.Cur, q.Switches = uint32(cq.ci), uint32(cq.cq_pi), int(cq.cur), uint64(cq.switches)
	return int(done), Status(rc)
}
