// Package transport is the seam between the MoE workload and the
// mechanisms that move its bytes.
//
// A Transport opens a Conn over a simulated cluster (Env). The workload's
// sending warps post Ops through the Conn; the Conn runs the mechanism's
// protocol (WQE construction and doorbells for mini-gda, descriptors and CPU
// workers for mini-proxy, DCI selection for dc) against the hardware models
// and reports each Op's arrival through Env.Delivered, with the timestamps
// that let the workload say which mechanism bound its time. Packages gda,
// proxy and dc implement it; hw holds the hardware models they share.
package transport
