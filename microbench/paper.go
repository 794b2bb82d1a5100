package microbench

import (
	"moebench/transport/gda"
	"moebench/transport/proxy"
)

// The paper's measurements that the model (validate) and the GPU
// (calibrate) are compared against, in one place. Times in µs, rates in
// M msg/s; NaN where the paper has no value.

// Issue is a single operation's measured times.
type Issue struct{ Issue, PutC float64 }

// Table4 is Table 4: issue and put+completion of one 8 B inline RDMA
// write by the ordering before the doorbell, on P-IB or (gb200) P-GB200.
func Table4(gb200 bool) map[gda.Ordering]Issue {
	if gb200 {
		return map[gda.Ordering]Issue{
			gda.OrderNone:        {0.16, 5.09},
			gda.OrderGPUFence:    {0.77, 5.70},
			gda.OrderFencedDBRec: {0.99, 5.89},
			gda.OrderReleaseGPU:  {0.77, 5.66},
			gda.OrderThreadFence: {1.22, 6.14},
			gda.OrderReleaseSys:  {2.08, 7.01},
			gda.OrderFenceSys:    {2.34, 7.26},
		}
	}
	return map[gda.Ordering]Issue{
		gda.OrderNone:        {0.19, 3.46},
		gda.OrderGPUFence:    {0.70, 4.03},
		gda.OrderFencedDBRec: {0.93, 4.26},
		gda.OrderReleaseGPU:  {0.70, 4.00},
		gda.OrderThreadFence: {1.22, 4.48},
		gda.OrderReleaseSys:  {2.37, 5.66},
		gda.OrderFenceSys:    {2.62, 5.92},
	}
}

// RatePoint is one posting-rate configuration of Table 5 (P-IB, 8 B
// inline, GPU-scope fence, with a NIC) and its measured rate.
type RatePoint struct {
	Name                           string
	Threads, QPs, SMs, PerDoorbell int
	Style                          gda.Publication
	Mps                            float64
	// CalibrateOnly rows are measured by calibrate but not among
	// validate's rate rows.
	CalibrateOnly bool
}

// Table5 is Table 5's mini-gda rows.
func Table5() []RatePoint {
	return []RatePoint{
		{"1 thread, 1 QP, 1 SM, 1/doorbell", 1, 1, 1, 1, gda.PubThread, 1.79, false},
		{"32 threads share 1 QP (handoff), 1/doorbell", 32, 1, 1, 1, gda.PubHandoff, 1.85, false},
		{"1 thread, 1 QP, 16/doorbell", 1, 1, 1, 16, gda.PubThread, 4.70, false},
		{"32 threads, doorbell lock per WQE", 32, 1, 1, 1, gda.PubLock, 1.27, false},
		{"256 threads, per-thread handoff, 32/doorbell", 256, 1, 1, 32, gda.PubHandoff, 2.60, false},
		{"32 threads cooperative, 32/doorbell", 32, 1, 1, 32, gda.PubCoop, 21.6, false},
		{"256 threads cooperative, 32/doorbell", 256, 1, 1, 32, gda.PubCoop, 30.7, false},
		{"16 threads, 16 QPs, 16 SMs, 1/doorbell", 16, 16, 16, 1, gda.PubThread, 27.9, false},
		{"16 threads, 16 QPs, 16 SMs, 16/doorbell", 16, 16, 16, 16, gda.PubThread, 74.4, false},
		{"32 threads, 32 QPs, 1 SM, 16/doorbell", 32, 32, 1, 16, gda.PubThread, 133, false},
		{"64 threads, 64 QPs, 1 SM, 16/doorbell", 64, 64, 1, 16, gda.PubThread, 206, false},
		{"64 threads, 64 QPs, 64 SMs, 16/doorbell", 64, 64, 64, 16, gda.PubThread, 260, false},
		{"4,096 threads cooperative, 16 QPs, 16 SMs, 32/doorbell", 4096, 16, 16, 32, gda.PubCoop, 260, true},
	}
}

// Table5NVSHMEM is Table 5's NVSHMEM 3.7.2 IBGDA rows: cooperative
// 256-thread CTAs, one per QP, 32 WQEs per doorbell.
func Table5NVSHMEM() []RatePoint {
	return []RatePoint{
		{"NVSHMEM IBGDA, 256 threads, 1 QP, 32/doorbell", 256, 1, 1, 32, gda.PubCoop, 25.2, false},
		{"NVSHMEM IBGDA, 4,096 threads, 16 QPs, 16 SMs, 32/doorbell", 4096, 16, 16, 32, gda.PubCoop, 250, false},
	}
}

// ProxyOp is a mini-proxy handoff's single-operation times, cold and warm
// (Table 3 cold, Table 9 warm).
type ProxyOp struct {
	Name             string
	Handoff          proxy.Handoff
	Completion       proxy.Completion
	Issue, PutC, RTT [2]float64 // cold, warm
}

// Table3Proxy is Table 3's mini-proxy rows with Table 9's warm pairs.
func Table3Proxy() []ProxyOp {
	return []ProxyOp{
		{"mini-proxy, baseline", proxy.Baseline, proxy.CompletionHost, [2]float64{2.27, nan}, [2]float64{7.07, 6.91}, [2]float64{14.59, 13.44}},
		{"mini-proxy, tuned", proxy.Tuned, proxy.CompletionGPU, [2]float64{0.13, nan}, [2]float64{4.10, 3.62}, [2]float64{5.89, 5.22}},
	}
}
