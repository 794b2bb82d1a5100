// Package calib sequences the GPU measurements that calibrate the model's
// GPU side: it checks the WQEs the GPU builds (mlx5 and EFA) against the
// host codecs, times one thread's issue for every doorbell ordering and
// target, the inline payload sweep, micro-operations, posting rates, the
// CPU proxy's enqueue, handoff and worker capacity, and what carrying each
// path costs a caller kernel, and returns them as the measurements Fit
// turns into constants (gda.FitGPU, refined through the model). It also
// times the expert GEMMs, alone and beside a layer (MeasureExperts), and
// fits the model's compute costs to them (FitCompute). Each fit's profile
// fragment carries the record it was fitted to (Fragment, ComputeFragment),
// which reads back for a refit (ParseMeasured, ParseComputeMeasured;
// ReadMeasured, ReadComputeMeasured and ReadLayer from files). GPU,
// Compute and Layer fit a measurement and write its fragment and record
// through Files, both or neither; CompareFile and Compare put a
// measurement beside the model for validate and mech. The native library
// does the timing; this package only decides what is measured, in which
// order, and where each figure goes.
package calib

import (
	"fmt"
	"sort"
	"time"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/native"
	"moebench/transport/gda"
)

// Runner is what the measurements need from the native library;
// *native.Lib implements it, and calibtest has one that answers like an
// H200 host without a GPU.
type Runner interface {
	Device() native.DeviceInfo
	ClockMHz(time.Duration) (float64, error)
	VerifyWQEs() (int, error)
	VerifyEFAWQEs() (int, error)
	IssueWith(native.IssueConfig) (native.Stats, error)
	Micro(iters int) (native.Micro, error)
	RateDetail(native.RateConfig) (native.RateResult, error)
	Enqueue(variant string, iters int) (native.ProxyResult, error)
	HandoffRTT(variant string, iters int) (native.ProxyResult, error)
	WorkerCapacity(native.CapacityConfig) (native.CapacityResult, error)
	KernelCost(native.KernelConfig) (native.KernelResult, error)
}

// Options are a measurement's sizes.
type Options struct {
	// Iters is the timed operations of each single-thread measurement.
	Iters int
	// Quick takes a reduced sweep (a smoke test).
	Quick bool
}

// MinIters and MaxIters bound Options.Iters: enough operations for a
// median, and no more than the native issue kernel's completion queue
// holds (4,096 entries, one an operation, the warm-up's 100 included,
// never wrapped).
const (
	MinIters = 10
	MaxIters = 3900
)

// Check refuses options the suite cannot run, as a field.Error (iters).
func (o Options) Check() error {
	if o.Iters < MinIters || o.Iters > MaxIters {
		return field.Valuef("iters", o.Iters, "want %d..%d", MinIters, MaxIters)
	}
	return nil
}

// Measure runs the whole suite on r, telling progress what it starts.
// Every figure is a median of many operations or launches.
func Measure(r Runner, o Options, progress func(string)) (gda.Measured, error) {
	dev := r.Device()
	m := gda.Measured{
		GPU: dev.Name, Driver: dev.Driver, CUDA: native.CUDAVersion(dev.CUDADriver), SMs: dev.SMs,
		Host: report.LocalHost().String(), DoorbellTarget: native.HostMapped.String(),
		IssueNs: map[string]float64{}, IssueDeviceDoorbellNs: map[string]float64{},
		InlineIssueNs: map[int]float64{}, InlineIssueNoneNs: map[int]float64{},
		EnqueueNs: map[string]float64{}, HandoffRTTNs: map[string]float64{},
	}
	progress(fmt.Sprintf("%s, driver %s, CUDA %s, %d SMs", dev.Name, dev.Driver, m.CUDA, dev.SMs))
	// Let the clock ramp up before anything is timed.
	if _, err := r.ClockMHz(200 * time.Millisecond); err != nil {
		return m, err
	}
	n, err := r.VerifyWQEs()
	if err != nil {
		return m, err
	}
	m.WQEsVerified = n
	progress(fmt.Sprintf("%d GPU-built WQEs match the mlx5 layout", n))
	s := &suite{r: r, o: o, m: &m, progress: progress}
	for _, step := range []func() error{s.issue, s.efaIssue, s.inline, s.micro, s.rates, s.proxy, s.capacity, s.kernels} {
		if err := step(); err != nil {
			return m, err
		}
	}
	m.ClockMHz = median(s.clocks)
	return m, nil
}

// suite is one Measure's state: what it fills and the SM clocks the
// issue measurements saw.
type suite struct {
	r        Runner
	o        Options
	m        *gda.Measured
	progress func(string)
	clocks   []float64
}

// timeIssue times one thread's mlx5 issue of an 8 B (or inline) write.
func (s *suite) timeIssue(mode string, t native.DoorbellTarget, inline int) (native.Stats, error) {
	st, err := s.r.IssueWith(native.IssueConfig{Mode: mode, Target: t, InlineBytes: inline, Iters: s.o.Iters, Warmup: 100, GapNs: 3000})
	if err != nil {
		return st, fmt.Errorf("issue %s (%s doorbell, %d B inline): %w", mode, t, inline, err)
	}
	return st, nil
}

// issue times every ordering mode on both doorbell targets, and the WQE
// alone.
func (s *suite) issue() error {
	s.progress("issue per ordering mode, both doorbell targets")
	for _, mode := range native.OrderingModes {
		for _, t := range []native.DoorbellTarget{native.HostMapped, native.DeviceMemory} {
			st, err := s.timeIssue(mode, t, 8)
			if err != nil {
				return err
			}
			s.clocks = append(s.clocks, st.ClockMHz)
			if t == native.HostMapped {
				s.m.IssueNs[mode] = st.MedianNs
			} else {
				s.m.IssueDeviceDoorbellNs[mode] = st.MedianNs
			}
		}
	}
	st, err := s.timeIssue(native.NoDoorbell, native.HostMapped, 8)
	if err != nil {
		return err
	}
	s.m.IssueNoDoorbellNs = st.MedianNs
	return nil
}

// efaIssue checks the GPU's EFA WQEs against the host encoder, then times
// one thread posting them as EFA DP Direct does, per ordering mode and
// doorbell target, beside mlx5 with the same pointer payload.
func (s *suite) efaIssue() error {
	m := s.m
	n, err := s.r.VerifyEFAWQEs()
	if err != nil {
		return err
	}
	m.EFAWQEsVerified = n
	s.progress(fmt.Sprintf("%d GPU-built WQEs match the EFA layout; EFA DP Direct issue per ordering mode", n))
	m.EFAIssueNs, m.EFAIssueDeviceDoorbellNs, m.PointerIssueNs = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, mode := range native.EFAOrderingModes {
		// mlx5 with the same pointer payload, host-mapped doorbell.
		st, err := s.r.IssueWith(native.IssueConfig{Mode: mode, Target: native.HostMapped, Iters: s.o.Iters, Warmup: 100, GapNs: 3000})
		if err != nil {
			return fmt.Errorf("issue %s (pointer payload): %w", mode, err)
		}
		m.PointerIssueNs[mode] = st.MedianNs
	}
	for _, mode := range append(append([]string(nil), native.EFAOrderingModes...), native.NoDoorbell) {
		for _, t := range []native.DoorbellTarget{native.HostMapped, native.DeviceMemory} {
			if mode == native.NoDoorbell && t == native.DeviceMemory {
				continue
			}
			st, err := s.r.IssueWith(native.IssueConfig{Mode: mode, Target: t, Iters: s.o.Iters, Warmup: 100, GapNs: 3000, Format: native.EFA})
			if err != nil {
				return fmt.Errorf("EFA issue %s (%s doorbell): %w", mode, t, err)
			}
			switch {
			case mode == native.NoDoorbell:
				m.EFAIssueNoDoorbellNs = st.MedianNs
			case t == native.HostMapped:
				m.EFAIssueNs[mode] = st.MedianNs
			default:
				m.EFAIssueDeviceDoorbellNs[mode] = st.MedianNs
			}
		}
	}
	return nil
}

// inline sweeps the inline payload (Fig. 3) with and without ordering.
func (s *suite) inline() error {
	s.progress("inline payload sweep")
	for _, b := range InlineSizes {
		for _, mode := range []string{"gpu-fence", "none"} {
			st, err := s.timeIssue(mode, native.HostMapped, b)
			if err != nil {
				return err
			}
			s.clocks = append(s.clocks, st.ClockMHz)
			if mode == "none" {
				s.m.InlineIssueNoneNs[b] = st.MedianNs
			} else {
				s.m.InlineIssueNs[b] = st.MedianNs
			}
		}
	}
	return nil
}

func (s *suite) micro() error {
	s.progress("micro-operations")
	mi, err := s.r.Micro(4096)
	if err != nil {
		return err
	}
	m := s.m
	m.AtomicNs, m.L2LoadNs, m.Store16Ns, m.HandoffNs, m.CQConsumeNs = mi.AtomicNs, mi.L2LoadNs, mi.Store16Ns, mi.HandoffNs, mi.CQConsumeNs
	m.HostLoadNs, m.HostStoreNs = mi.HostLoadNs, mi.HostStoreNs
	return nil
}

func (s *suite) rates() error {
	s.progress("posting rates")
	for _, row := range RateRows(s.o.Quick) {
		res, err := s.r.RateDetail(row.Config)
		if err != nil {
			return fmt.Errorf("rate %+v: %w", row.Config, err)
		}
		c := row.Config
		p := gda.RatePoint{Threads: c.Threads, QPs: c.QPs, SMs: c.Blocks, PerDoorbell: c.PerDoorbell, Style: c.Style, Mps: res.Mps}
		if c.Style == "coop" {
			p.PerDoorbell = 32
		}
		if c.Target != native.HostMapped {
			p.Target = c.Target.String()
		}
		s.m.Rates = append(s.m.Rates, p)
	}
	return nil
}

func (s *suite) proxy() error {
	s.progress("proxy enqueue and handoff round trip (CPU worker thread)")
	for _, v := range native.EnqueueVariants {
		e, err := s.r.Enqueue(v, s.o.Iters)
		if err != nil {
			return fmt.Errorf("enqueue %s: %w", v, err)
		}
		rt, err := s.r.HandoffRTT(v, s.o.Iters)
		if err != nil {
			return fmt.Errorf("handoff %s: %w", v, err)
		}
		s.m.EnqueueNs[v], s.m.HandoffRTTNs[v] = e.Stats.MedianNs, rt.Stats.MedianNs
	}
	return nil
}

func (s *suite) capacity() error {
	s.progress("CPU worker capacity")
	for _, c := range capacityRows(s.o.Quick) {
		res, err := s.r.WorkerCapacity(c)
		if err != nil {
			return fmt.Errorf("worker capacity %d x %d: %w", c.Workers, c.Batch, err)
		}
		s.m.WorkerCapacity = append(s.m.WorkerCapacity, gda.CapacityPoint{Workers: c.Workers, Batch: c.Batch, Mps: res.Mps})
	}
	return nil
}

// kernels times caller kernels with each path inside, and what the path
// costs against the same kernel without it.
func (s *suite) kernels() error {
	s.progress("enclosing kernel: registers, occupancy, throughput")
	absent := map[string]float64{}
	for _, c := range kernelRows(s.o.Quick) {
		res, err := s.r.KernelCost(c)
		if err != nil {
			return fmt.Errorf("kernel %+v: %w", c, err)
		}
		blocks := c.Blocks
		if blocks == 0 {
			blocks = 528
		}
		key := fmt.Sprintf("%s/%d", c.Caller, blocks)
		p := gda.KernelCostPoint{Caller: c.Caller, Path: c.Path, Wait: c.Wait, Msgs: c.MsgsPerBlock, Blocks: blocks, Regs: res.Regs, MaxBlocksPerSM: res.MaxBlocksPerSM, Ms: res.MedianMs}
		if c.Path == "absent" {
			absent[key] = res.MedianMs
		}
		if a, ok := absent[key]; ok && res.MedianMs > 0 {
			p.LossPct = (1 - a/res.MedianMs) * 100
		}
		s.m.KernelCost = append(s.m.KernelCost, p)
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
