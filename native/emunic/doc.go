// Package emunic runs the emulated NIC's decisions on the CPU: the C of
// native/src/emunic.h and wqe_fmt.h that the native layer's NIC warps run
// on the GPU (when a doorbell announces work, whether the WQE at the
// consumer index is the announced one, what it asks for, whether its keys
// and ranges are allowed, the CQE it writes), executed here against queues
// and memory in host memory so that tests check it without a GPU.
//
// What flows in and out:
//
//	Alloc(n) *Buffer                 C memory a queue or a region lives in
//	(*Queue).Drain(db, regions)      execute every WQE through the one the
//	                                 doorbell announces; executed count and
//	                                 status (OK, NotReady or a refusal)
//
// It needs cgo; without it Drain reports ErrNoCgo.
package emunic
