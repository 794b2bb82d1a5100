// Package calibtest has a calib.Runner that answers like an H200 host, so
// that the calibration pipeline (measurements, fit, fragment, reports)
// runs in tests without a GPU.
package calibtest

import (
	"time"

	"moebench/native"
	"moebench/transport/gda"
)

// H200 answers every measurement with figures of the order an H200 host
// gives; Issues counts the issue measurements asked of it.
type H200 struct{ Issues int }

// Device is a 132-SM H200 on CUDA 13.
func (f *H200) Device() native.DeviceInfo {
	return native.DeviceInfo{Name: "Fake H200", Driver: "580.0", CUDADriver: 13000, CUDARuntime: 13000, SMs: 132}
}

// ClockMHz is the H200's boost clock.
func (f *H200) ClockMHz(time.Duration) (float64, error) { return 1980, nil }

// VerifyWQEs checks as many mlx5 WQEs as the library does.
func (f *H200) VerifyWQEs() (int, error) { return 28, nil }

// VerifyEFAWQEs checks as many EFA WQEs as the library does.
func (f *H200) VerifyEFAWQEs() (int, error) { return 33, nil }

// IssueWith is the ordering's issue time, about 99 ns more per 16 B of
// inline payload past the first, and 3 ns more for EFA's fourth store;
// it refuses what the library refuses for EFA.
func (f *H200) IssueWith(c native.IssueConfig) (native.Stats, error) {
	f.Issues++
	base := map[string]float64{"none": 115, "gpu-fence": 547, "fenced-dbrec": 788, "release-gpu": 409, "threadfence": 788, "release-sys": 624, "fence-sys": 767, native.NoDoorbell: 116}[c.Mode]
	if c.InlineBytes > 8 {
		base += float64(gda.InlineChunks(c.InlineBytes)-1) * 99
	}
	if c.Format == native.EFA {
		if c.InlineBytes != 0 || c.Mode == "fenced-dbrec" {
			return native.Stats{}, native.ErrBadArgument
		}
		base += 3 // a fourth 16 B store
	}
	return native.Stats{N: c.Iters, MedianNs: base, ClockMHz: 1980}, nil
}

// Micro is a set of H200 micro-operation times.
func (f *H200) Micro(int) (native.Micro, error) {
	return native.Micro{ClockMHz: 1980, AtomicNs: 145, L2LoadNs: 185, Store16Ns: 11.7, HandoffNs: 522, CQConsumeNs: 182, HostLoadNs: 1100, HostStoreNs: 11.6}, nil
}

// RateDetail grows with the posting threads.
func (f *H200) RateDetail(c native.RateConfig) (native.RateResult, error) {
	return native.RateResult{Mps: float64(c.Threads) * 1.8}, nil
}

// Enqueue is the proxy variant's enqueue.
func (f *H200) Enqueue(v string, _ int) (native.ProxyResult, error) {
	return native.ProxyResult{Stats: native.Stats{MedianNs: map[string]float64{"baseline": 1900, "tuned": 36}[v]}}, nil
}

// HandoffRTT is the proxy variant's round trip.
func (f *H200) HandoffRTT(v string, _ int) (native.ProxyResult, error) {
	return native.ProxyResult{Stats: native.Stats{MedianNs: map[string]float64{"baseline": 4100, "tuned": 2400}[v]}}, nil
}

// WorkerCapacity grows with workers and batch.
func (f *H200) WorkerCapacity(c native.CapacityConfig) (native.CapacityResult, error) {
	return native.CapacityResult{Mps: float64(c.Workers*c.Batch) * 10}, nil
}

// KernelCost is 2 ms a launch, 2.4 ms when the kernel waits for its
// proxy.
func (f *H200) KernelCost(c native.KernelConfig) (native.KernelResult, error) {
	ms := 2.0
	if c.Wait {
		ms = 2.4
	}
	return native.KernelResult{Regs: 31, MaxBlocksPerSM: 8, MedianMs: ms}, nil
}
