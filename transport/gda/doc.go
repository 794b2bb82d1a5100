// Package gda is mini-gda in the model: GPU threads that reserve slots in RC
// send queues, build mlx5 WQEs in GPU memory, order their stores, ring the
// NIC doorbell and poll completions.
//
// A Submitter runs the real protocol against the hw models: slot
// reservation (thread-owned, shared by atomic, or under a QP lock),
// publication (cooperative per warp, handed off per thread in reservation
// order, or one doorbell lock per WQE), WQEs per doorbell, the ordering mode
// of Table 4, inline or pointer payloads, and completion by polling one QP's
// CQ or by a PE-wide quiet over every configured QP. The experiments in
// this package (SingleOp, Rate, Scope) are the paper's microbenchmarks run
// on that model.
package gda
