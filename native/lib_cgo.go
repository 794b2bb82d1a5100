//go:build cgo

package native

/*
#cgo CFLAGS: -I${SRCDIR}/include
#include <stdlib.h>
#include "moebench_native.h"

// Trampolines: cgo cannot call C function pointers directly.
static int32_t call_abi(void *f) { return ((mbn_abi_version_fn)f)(); }
static const char *call_last_error(void *f) { return ((mbn_last_error_fn)f)(); }
static int32_t call_init(void *f, int32_t d, mbn_device_info *o) { return ((mbn_init_fn)f)(d, o); }
static int32_t call_clock(void *f, int32_t us, double *o) { return ((mbn_clock_mhz_fn)f)(us, o); }
static int32_t call_issue(void *f, const mbn_issue_config *c, mbn_stats *o) { return ((mbn_issue_fn)f)(c, o); }
static int32_t call_build(void *f, const mbn_wqe_params *p, int32_t n, int32_t mode, int32_t target,
                          const uint8_t *payload, uint8_t *sq, size_t sq_len, uint8_t *rec, uint8_t *db) {
	return ((mbn_build_wqes_fn)f)(p, n, mode, target, payload, sq, sq_len, rec, db);
}
static int32_t call_micro(void *f, int32_t iters, mbn_micro_result *o) { return ((mbn_micro_fn)f)(iters, o); }
static int32_t call_rate(void *f, const mbn_rate_config *c, mbn_rate_result *o) { return ((mbn_rate_fn)f)(c, o); }
static int32_t call_enqueue(void *f, const mbn_enqueue_config *c, mbn_proxy_result *o) { return ((mbn_enqueue_fn)f)(c, o); }
static int32_t call_rtt(void *f, const mbn_enqueue_config *c, mbn_proxy_result *o) { return ((mbn_handoff_rtt_fn)f)(c, o); }
static int32_t call_capacity(void *f, const mbn_capacity_config *c, mbn_capacity_result *o) { return ((mbn_worker_capacity_fn)f)(c, o); }
static int32_t call_kernel(void *f, const mbn_kernel_config *c, mbn_kernel_result *o) { return ((mbn_kernel_cost_fn)f)(c, o); }
static int32_t call_devices(void *f, int32_t *o) { return ((mbn_device_count_fn)f)(o); }
static int32_t call_layer(void *f, const mbn_layer_config *c, const mbn_layer_routing *r, mbn_rank_phase *t, mbn_layer_result *o) {
	return ((mbn_layer_fn)f)(c, r, t, o);
}
static int32_t call_a2a(void *f, const mbn_a2a_config *c, mbn_a2a_result *o) { return ((mbn_nccl_a2a_fn)f)(c, o); }
static int32_t call_gemm(void *f, const mbn_gemm_config *c, mbn_gemm_result *o) { return ((mbn_gemm_fn)f)(c, o); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"
)

// Lib is an opened native library bound to one GPU. Its methods are safe
// for concurrent use; the library runs one experiment at a time.
type Lib struct {
	mu     sync.Mutex
	dl     *dynLib
	info   DeviceInfo
	closed bool
	fn     struct {
		abi, lastErr, init, clock, issue, build, micro, rate, enqueue, rtt, capacity, kernel, devices, layer, a2a, gemm unsafe.Pointer
	}
}

// Open loads the native library at path ("" means DefaultPath()) and
// initializes GPU 0. Errors wrap ErrLibraryNotLoaded when the library is
// missing or unusable and ErrNoGPU when it loads but finds no GPU.
func Open(path string) (*Lib, error) {
	if path == "" {
		path = DefaultPath()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("native library not found at %s: build it with `make native` on a CUDA host (%w)", path, ErrLibraryNotLoaded)
	}
	dl, err := dlOpen(path)
	if err != nil {
		return nil, fmt.Errorf("%w: loading %s: %v", ErrLibraryNotLoaded, path, err)
	}
	l := &Lib{dl: dl}
	for _, s := range []struct {
		name string
		p    *unsafe.Pointer
	}{
		{"mbn_abi_version", &l.fn.abi}, {"mbn_last_error", &l.fn.lastErr}, {"mbn_init", &l.fn.init},
		{"mbn_clock_mhz", &l.fn.clock}, {"mbn_issue", &l.fn.issue}, {"mbn_build_wqes", &l.fn.build},
		{"mbn_micro", &l.fn.micro}, {"mbn_rate", &l.fn.rate}, {"mbn_enqueue", &l.fn.enqueue},
		{"mbn_handoff_rtt", &l.fn.rtt}, {"mbn_worker_capacity", &l.fn.capacity}, {"mbn_kernel_cost", &l.fn.kernel},
		{"mbn_device_count", &l.fn.devices}, {"mbn_layer", &l.fn.layer}, {"mbn_nccl_a2a", &l.fn.a2a},
		{"mbn_gemm", &l.fn.gemm},
	} {
		if *s.p, err = dl.sym(s.name); err != nil {
			dl.close()
			return nil, fmt.Errorf("%w: %v (rebuild it with `make native`)", ErrLibraryNotLoaded, err)
		}
	}
	if v := int(C.call_abi(l.fn.abi)); v != C.MBN_ABI_VERSION {
		dl.close()
		return nil, fmt.Errorf("%w: %s has ABI version %d, this moebench needs %d (rebuild it with `make native`)",
			ErrLibraryNotLoaded, path, v, C.MBN_ABI_VERSION)
	}
	var ci C.mbn_device_info
	if rc := C.call_init(l.fn.init, 0, &ci); rc != C.MBN_OK {
		err := l.errorFor("init", rc)
		// The CUDA runtime inside may have registered exit handlers; keep
		// the library mapped.
		return nil, err
	}
	l.info = DeviceInfo{
		Name:            C.GoString(&ci.name[0]),
		Driver:          C.GoString(&ci.driver[0]),
		CUDADriver:      int(ci.cuda_driver),
		CUDARuntime:     int(ci.cuda_runtime),
		SMs:             int(ci.sms),
		CCMajor:         int(ci.cc_major),
		CCMinor:         int(ci.cc_minor),
		L2Bytes:         int(ci.l2_bytes),
		MemBytes:        int64(ci.mem_bytes),
		RegsPerSM:       int(ci.regs_per_sm),
		MaxThreadsPerSM: int(ci.max_threads_per_sm),
		CanMapHost:      ci.can_map_host != 0,
	}
	return l, nil
}

// Close marks the library closed. The shared object stays mapped: the CUDA
// runtime linked into it registers process-exit handlers.
func (l *Lib) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return l.dl.path }

// Device describes the GPU.
func (l *Lib) Device() DeviceInfo { return l.info }

// errorFor turns a return code into an error; the caller holds l.mu (or
// is Open, before l escapes).
func (l *Lib) errorFor(what string, rc C.int32_t) error {
	msg := C.GoString(C.call_last_error(l.fn.lastErr))
	var sentinel error
	switch rc {
	case C.MBN_ERR_NO_GPU:
		sentinel = ErrNoGPU
	case C.MBN_ERR_ARG:
		sentinel = ErrBadArgument
	case C.MBN_ERR_TIMEOUT:
		sentinel = ErrTimeout
	case C.MBN_ERR_CHECK:
		sentinel = ErrCheck
	}
	if sentinel != nil {
		return fmt.Errorf("native %s: %w: %s", what, sentinel, msg)
	}
	return fmt.Errorf("native %s: %s (code %d)", what, msg, int(rc))
}

func (l *Lib) call(what string, f func() C.int32_t) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("native %s: %w: library closed", what, ErrLibraryNotLoaded)
	}
	if rc := f(); rc != C.MBN_OK {
		return l.errorFor(what, rc)
	}
	return nil
}

// ClockMHz measures the effective SM clock: clock64 ticks per globaltimer
// microsecond while one thread spins for d.
func (l *Lib) ClockMHz(d time.Duration) (float64, error) {
	var mhz C.double
	us := C.int32_t(d.Microseconds())
	err := l.call("clock", func() C.int32_t { return C.call_clock(l.fn.clock, us, &mhz) })
	return float64(mhz), err
}

func statsFrom(s *C.mbn_stats) Stats {
	return Stats{
		N: int(s.n), MedianNs: float64(s.median_ns), P10Ns: float64(s.p10_ns), P90Ns: float64(s.p90_ns),
		MeanNs: float64(s.mean_ns), MinNs: float64(s.min_ns), MedianCycles: float64(s.median_cycles),
		ClockMHz: float64(s.clock_mhz), OverheadCycles: float64(s.overhead_cycles), MedianGTNs: float64(s.median_gt_ns),
	}
}

// Issue measures one thread's issue time for an 8 B-class RDMA write with
// the given ordering and doorbell target; inlineBytes 0 uses a pointer
// payload. It runs 100 warm-up operations and a 3 µs gap before each one
// (about when the CQE of the previous put would arrive).
func (l *Lib) Issue(mode string, target DoorbellTarget, inlineBytes, iters int) (Stats, error) {
	return l.IssueWith(IssueConfig{Mode: mode, Target: target, InlineBytes: inlineBytes, Iters: iters, Warmup: 100, GapNs: 3000})
}

// IssueWith is Issue with every knob.
func (l *Lib) IssueWith(c IssueConfig) (Stats, error) {
	m, err := orderingCode(c.Mode)
	if err != nil {
		return Stats{}, err
	}
	if err := c.checkFormat(); err != nil {
		return Stats{}, err
	}
	cfg := C.mbn_issue_config{
		mode: C.int32_t(m), target: C.int32_t(c.Target), inline_bytes: C.int32_t(c.InlineBytes),
		iters: C.int32_t(c.Iters), warmup: C.int32_t(c.Warmup), gap_ns: C.int32_t(c.GapNs),
		wqe_format: C.int32_t(c.Format),
	}
	var out C.mbn_stats
	err = l.call("issue", func() C.int32_t { return C.call_issue(l.fn.issue, &cfg, &out) })
	return statsFrom(&out), err
}

// BuildWQEs has one GPU thread post count WQEs with the given ordering and
// returns the send queue, doorbell record and last doorbell it stored, for
// checking against the host decoder. For inline WQEs payload holds
// p.Length bytes.
func (l *Lib) BuildWQEs(p WQEParams, count int, mode string, target DoorbellTarget, payload []byte) (Posted, error) {
	m, err := orderingCode(mode)
	if err != nil {
		return Posted{}, err
	}
	if p.Inline && len(payload) < int(p.Length) {
		return Posted{}, fmt.Errorf("native build_wqes: %w: payload has %d bytes, length is %d", ErrBadArgument, len(payload), p.Length)
	}
	if p.SQBBs == 0 || p.SQBBs > 65536 {
		return Posted{}, fmt.Errorf("native build_wqes: %w: sq_bbs %d out of range", ErrBadArgument, p.SQBBs)
	}
	cp := C.mbn_wqe_params{
		raddr: C.uint64_t(p.RemoteAddr), laddr: C.uint64_t(p.LocalAddr), qpn: C.uint32_t(p.QPN),
		rkey: C.uint32_t(p.RKey), lkey: C.uint32_t(p.LKey), imm: C.uint32_t(p.Imm), length: C.uint32_t(p.Length),
		sq_bbs: C.uint32_t(p.SQBBs), start_pi: C.uint32_t(p.StartPI), opmod: C.uint32_t(p.Opmod),
		fm_ce_se: C.uint32_t(p.FmCeSe), wqe_format: C.uint32_t(p.Format), ah: C.uint32_t(p.AH),
	}
	if p.Inline {
		cp.use_inline = 1
	}
	out := Posted{SQ: make([]byte, int(p.SQBBs)*BasicBlock)}
	// C copies of the buffers: the call must not hold Go pointers.
	csq := C.malloc(C.size_t(len(out.SQ)))
	defer C.free(csq)
	var cpay unsafe.Pointer
	if p.Inline {
		cpay = C.CBytes(payload[:p.Length])
		defer C.free(cpay)
	}
	var rec [4]C.uint8_t
	var db [8]C.uint8_t
	err = l.call("build_wqes", func() C.int32_t {
		return C.call_build(l.fn.build, &cp, C.int32_t(count), C.int32_t(m), C.int32_t(target),
			(*C.uint8_t)(cpay), (*C.uint8_t)(csq), C.size_t(len(out.SQ)), &rec[0], &db[0])
	})
	if err != nil {
		return Posted{}, err
	}
	copy(out.SQ, C.GoBytes(csq, C.int(len(out.SQ))))
	for i := range rec {
		out.DBRec[i] = byte(rec[i])
	}
	for i := range db {
		out.Doorbell[i] = byte(db[i])
	}
	return out, nil
}

// Micro measures the micro-operations of one thread (iters per chain).
func (l *Lib) Micro(iters int) (Micro, error) {
	var out C.mbn_micro_result
	err := l.call("micro", func() C.int32_t { return C.call_micro(l.fn.micro, C.int32_t(iters), &out) })
	return Micro{
		ClockMHz: float64(out.clock_mhz), AtomicNs: float64(out.atomic_ns), L2LoadNs: float64(out.l2_load_ns),
		Store16Ns: float64(out.store16_ns), HandoffNs: float64(out.handoff_ns), CQConsumeNs: float64(out.cq_consume_ns),
		HostLoadNs: float64(out.host_load_ns), HostStoreNs: float64(out.host_store_ns),
		TimerOverheadCycles: float64(out.timer_overhead_cycles),
	}, err
}

// Rate returns the posting rate (M msg/s) of one configuration.
func (l *Lib) Rate(cfg RateConfig) (float64, error) {
	r, err := l.RateDetail(cfg)
	return r.Mps, err
}

// RateDetail is Rate with the run's size and time.
func (l *Lib) RateDetail(cfg RateConfig) (RateResult, error) {
	st, err := styleCode(cfg.Style)
	if err != nil {
		return RateResult{}, err
	}
	c := C.mbn_rate_config{
		threads: C.int32_t(cfg.Threads), qps: C.int32_t(cfg.QPs), blocks: C.int32_t(cfg.Blocks),
		per_doorbell: C.int32_t(cfg.PerDoorbell), style: C.int32_t(st), target: C.int32_t(cfg.Target),
		inline_bytes: C.int32_t(cfg.InlineBytes), wqes_per_thread: C.int32_t(cfg.WQEsPerThread),
	}
	var out C.mbn_rate_result
	err = l.call("rate", func() C.int32_t { return C.call_rate(l.fn.rate, &c, &out) })
	return RateResult{
		Mps: float64(out.mmsg_per_s), ElapsedMs: float64(out.elapsed_ms), WQEs: int64(out.wqes),
		Doorbells: int64(out.doorbells), WQEsPerThread: int(out.wqes_per_thread),
	}, err
}

func (l *Lib) proxy(what string, f unsafe.Pointer, variant string, iters int) (ProxyResult, error) {
	v, err := enqueueCode(variant)
	if err != nil {
		return ProxyResult{}, err
	}
	c := C.mbn_enqueue_config{variant: C.int32_t(v), iters: C.int32_t(iters), warmup: 100, gap_ns: 3000, ring_entries: 1024}
	var out C.mbn_proxy_result
	err = l.call(what, func() C.int32_t {
		if what == "handoff_rtt" {
			return C.call_rtt(f, &c, &out)
		}
		return C.call_enqueue(f, &c, &out)
	})
	return ProxyResult{Stats: statsFrom(&out.stats), Consumed: int64(out.consumed), Torn: int64(out.torn)}, err
}

// Enqueue measures the GPU-side proxy enqueue ("baseline" or "tuned") of
// one thread while a CPU worker thread consumes the host ring.
func (l *Lib) Enqueue(variant string, iters int) (ProxyResult, error) {
	return l.proxy("enqueue", l.fn.enqueue, variant, iters)
}

// HandoffRTT measures GPU enqueue -> CPU worker -> completion counter in
// mapped host memory -> GPU observes it.
func (l *Lib) HandoffRTT(variant string, iters int) (ProxyResult, error) {
	return l.proxy("handoff_rtt", l.fn.rtt, variant, iters)
}

// WorkerCapacity measures how many descriptors per second CPU workers
// consume from GPU-fed rings.
func (l *Lib) WorkerCapacity(cfg CapacityConfig) (CapacityResult, error) {
	c := C.mbn_capacity_config{
		workers: C.int32_t(cfg.Workers), batch: C.int32_t(cfg.Batch), rings: C.int32_t(cfg.Rings),
		per_ring: C.int32_t(cfg.PerRing), ring_entries: C.int32_t(cfg.RingEntries),
	}
	var out C.mbn_capacity_result
	err := l.call("worker_capacity", func() C.int32_t { return C.call_capacity(l.fn.capacity, &c, &out) })
	return CapacityResult{
		Mps: float64(out.mdesc_per_s), ElapsedMs: float64(out.elapsed_ms), Consumed: int64(out.consumed),
		Batches: int64(out.batches), MeanBatch: float64(out.mean_batch), Torn: int64(out.torn),
	}, err
}

// KernelCost runs one enclosing-kernel configuration.
func (l *Lib) KernelCost(cfg KernelConfig) (KernelResult, error) {
	caller, err := indexOf(Callers, cfg.Caller, "caller")
	if err != nil {
		return KernelResult{}, err
	}
	path, err := indexOf(Paths, cfg.Path, "path")
	if err != nil {
		return KernelResult{}, err
	}
	c := C.mbn_kernel_config{
		caller: C.int32_t(caller), path: C.int32_t(path), msgs_per_block: C.int32_t(cfg.MsgsPerBlock),
		blocks: C.int32_t(cfg.Blocks), threads: C.int32_t(cfg.Threads), reps: C.int32_t(cfg.Reps),
	}
	if cfg.Wait {
		c.wait = 1
	}
	var out C.mbn_kernel_result
	err = l.call("kernel_cost", func() C.int32_t { return C.call_kernel(l.fn.kernel, &c, &out) })
	return KernelResult{
		Regs: int(out.regs), MaxBlocksPerSM: int(out.max_blocks_per_sm), LocalBytes: int(out.local_bytes),
		MedianMs: float64(out.median_ms), MinMs: float64(out.min_ms), Messages: int64(out.messages),
	}, err
}

// DeviceCount is the number of CUDA devices on this host.
func (l *Lib) DeviceCount() (int, error) {
	var n C.int32_t
	err := l.call("device_count", func() C.int32_t { return C.call_devices(l.fn.devices, &n) })
	return int(n), err
}

// NCCLAllToAll times NCCL's all-to-all over the first len(c.Bytes) GPUs,
// one rank each, at the given per-peer bytes.
func (l *Lib) NCCLAllToAll(c A2AConfig) (A2AResult, error) {
	g := len(c.Bytes)
	if err := c.check(); err != nil {
		return A2AResult{}, err
	}
	flat := C.calloc(C.size_t(g*g), 8)
	defer C.free(flat)
	b := unsafe.Slice((*int64)(flat), g*g)
	for s, row := range c.Bytes {
		copy(b[s*g:], row)
	}
	var lib *C.char
	if c.Lib != "" {
		lib = C.CString(c.Lib)
		defer C.free(unsafe.Pointer(lib))
	}
	cfg := C.mbn_a2a_config{gpus: C.int32_t(g), warmup: C.int32_t(c.Warmup), reps: C.int32_t(c.Reps),
		bytes: (*C.int64_t)(flat), lib: lib}
	var out C.mbn_a2a_result
	err := l.call("nccl_a2a", func() C.int32_t { return C.call_a2a(l.fn.a2a, &cfg, &out) })
	return A2AResult{MeanUs: float64(out.mean_us), MinUs: float64(out.min_us), MaxUs: float64(out.max_us),
		Version: int(out.version), Lib: C.GoString(&out.lib[0])}, err
}

// Layer runs DeepEP-style low-latency dispatch and combine on the GPUs
// (see LayerConfig) and returns every repetition's per-rank timings and
// what the checks found. A verification failure returns the result with
// an error wrapping ErrCheck.
func (l *Lib) Layer(cfg LayerConfig, rt LayerRouting) (LayerResult, error) {
	lc, err := newLayerCall(cfg, rt)
	if err != nil {
		return LayerResult{}, err
	}
	defer lc.free()
	callErr := l.call("layer", func() C.int32_t { return C.call_layer(l.fn.layer, lc.c, lc.r, lc.times, lc.out) })
	return lc.result(callErr)
}

// GEMM times an expert group's GEMM or activation through cuBLASLt.
func (l *Lib) GEMM(c GEMMConfig) (GEMMResult, error) {
	return l.gemm(c, nil)
}

// GEMMBeside runs c's GEMM back to back while the layer runs beside it,
// and times the GEMM calls that ran wholly within the layer's
// repetitions. The layer's error, if any, is returned with its result.
func (l *Lib) GEMMBeside(c GEMMConfig, cfg LayerConfig, rt LayerRouting) (BesideResult, error) {
	lc, err := newLayerCall(cfg, rt)
	if err != nil {
		return BesideResult{}, err
	}
	defer lc.free()
	g, gerr := l.gemm(c, lc)
	if gerr != nil {
		return BesideResult{GEMM: g}, gerr
	}
	var layerErr error
	if lc.rc != C.MBN_OK {
		l.mu.Lock()
		layerErr = l.errorFor("layer beside a GEMM", lc.rc)
		l.mu.Unlock()
	}
	res, lerr := lc.result(layerErr)
	return BesideResult{GEMM: g, Layer: res}, lerr
}

func (l *Lib) gemm(c GEMMConfig, beside *layerCall) (GEMMResult, error) {
	if err := c.check(); err != nil {
		return GEMMResult{}, err
	}
	cfg := (*C.mbn_gemm_config)(C.calloc(1, C.size_t(unsafe.Sizeof(C.mbn_gemm_config{}))))
	defer C.free(unsafe.Pointer(cfg))
	*cfg = C.mbn_gemm_config{op: C.int32_t(c.Op), dtype: C.MBN_GEMM_BF16, groups: C.int32_t(c.Groups),
		tokens: C.int32_t(c.Tokens), k: C.int32_t(c.K), n: C.int32_t(c.N), sm_target: C.int32_t(c.SMTarget),
		warmup: C.int32_t(c.Warmup), reps: C.int32_t(c.Reps), inner: C.int32_t(c.Inner)}
	if c.FP8 {
		cfg.dtype = C.MBN_GEMM_FP8
	}
	if c.Lib != "" {
		cfg.lib = C.CString(c.Lib)
		defer C.free(unsafe.Pointer(cfg.lib))
	}
	if beside != nil {
		cfg.layer, cfg.routing, cfg.times, cfg.layer_out = beside.c, beside.r, beside.times, beside.out
	}
	var out C.mbn_gemm_result
	err := l.call("gemm", func() C.int32_t { return C.call_gemm(l.fn.gemm, cfg, &out) })
	if beside != nil {
		beside.rc = out.layer_rc
	}
	return GEMMResult{MeanUs: float64(out.mean_us), MinUs: float64(out.min_us), MaxUs: float64(out.max_us),
		Flops: float64(out.flops), Bytes: float64(out.bytes), Calls: int64(out.calls),
		WeightCopies: int64(out.wcopies), Version: int(out.version), Lib: C.GoString(&out.lib[0])}, err
}

// layerCall is a layer's arguments and results in C memory: the call
// must not hold Go pointers into Go memory, and a GEMM run beside the
// layer passes them on inside its own arguments.
type layerCall struct {
	cfg   LayerConfig
	c     *C.mbn_layer_config
	r     *C.mbn_layer_routing
	out   *C.mbn_layer_result
	times *C.mbn_rank_phase
	nrec  int
	rc    C.int32_t
	bufs  []unsafe.Pointer
}

func (lc *layerCall) alloc(n int) unsafe.Pointer {
	p := C.calloc(C.size_t(max(n, 1)), 1)
	lc.bufs = append(lc.bufs, p)
	return p
}

func (lc *layerCall) free() {
	for _, p := range lc.bufs {
		C.free(p)
	}
	lc.bufs = nil
}

func newLayerCall(cfg LayerConfig, rt LayerRouting) (*layerCall, error) {
	if err := cfg.check(rt); err != nil {
		return nil, err
	}
	ord, err := orderingCode(cfg.Ordering)
	if err != nil && (cfg.Path == PathGDA || cfg.Path == PathDC || cfg.Path == PathEFA) {
		return nil, fmt.Errorf("native layer: %w: %v", ErrBadArgument, err)
	}
	hand, err := indexOf(Handoffs, cfg.Handoff, "handoff")
	if err != nil && cfg.Path == PathProxy {
		return nil, fmt.Errorf("native layer: %w: %v", ErrBadArgument, err)
	}
	b := func(v bool) C.int32_t {
		if v {
			return 1
		}
		return 0
	}
	lc := &layerCall{cfg: cfg}
	lc.c = (*C.mbn_layer_config)(lc.alloc(int(unsafe.Sizeof(C.mbn_layer_config{}))))
	*lc.c = C.mbn_layer_config{
		path: C.int32_t(cfg.Path), ranks: C.int32_t(cfg.Ranks), gpus: C.int32_t(cfg.GPUs), tokens: C.int32_t(cfg.Tokens),
		hidden: C.int32_t(cfg.Hidden), topk: C.int32_t(cfg.TopK), experts: C.int32_t(cfg.Experts), fp8: b(cfg.FP8),
		sms_per_rank: C.int32_t(cfg.SMsPerRank), nic_sms: C.int32_t(cfg.NICSMs), bg_sms: C.int32_t(cfg.BackgroundSMs),
		qps_per_peer: C.int32_t(cfg.QPsPerPeer), sq_bbs: C.int32_t(cfg.SQBBs), ordering: C.int32_t(ord),
		per_doorbell: C.int32_t(cfg.PerDoorbell), dcis: C.int32_t(cfg.DCIs), workers: C.int32_t(cfg.Workers),
		rings: C.int32_t(cfg.Rings), batch: C.int32_t(cfg.Batch), handoff: C.int32_t(hand), ring_entries: C.int32_t(cfg.RingEntries),
		bg_warps: C.int32_t(cfg.BgWarps), bg_bytes: C.int32_t(cfg.BgBytes), bg_channel0: C.int32_t(cfg.BgChannel0),
		bg_channels: C.int32_t(cfg.BgChannels), bg_head_us: C.int32_t(cfg.BgHeadUs), pace: b(cfg.Pace),
		warmup: C.int32_t(cfg.Warmup), reps: C.int32_t(cfg.Reps), flush_l2: b(cfg.FlushL2), verify: b(cfg.Verify),
		timeout_ms: C.int32_t(cfg.Timeout.Milliseconds()), line_gbs: C.double(cfg.LineGBs), msg_mps: C.double(cfg.MsgMps),
		reserved_ring0: C.int32_t(cfg.ReservedRing0), mode: b(cfg.Normal), chunk: C.int32_t(cfg.Chunk),
		buf_tokens: C.int32_t(cfg.BufTokens),
	}
	ntok := lc.alloc(4 * len(rt.TokensPerRank))
	idx := lc.alloc(4 * len(rt.TopK))
	wts := lc.alloc(4 * len(rt.Weights))
	exp := lc.alloc(4 * len(rt.Expected))
	copy(unsafe.Slice((*int32)(ntok), len(rt.TokensPerRank)), rt.TokensPerRank)
	copy(unsafe.Slice((*int32)(idx), len(rt.TopK)), rt.TopK)
	copy(unsafe.Slice((*float32)(wts), len(rt.Weights)), rt.Weights)
	copy(unsafe.Slice((*int32)(exp), len(rt.Expected)), rt.Expected)
	lc.r = (*C.mbn_layer_routing)(lc.alloc(int(unsafe.Sizeof(C.mbn_layer_routing{}))))
	*lc.r = C.mbn_layer_routing{tokens_per_rank: (*C.int32_t)(ntok), topk_idx: (*C.int32_t)(idx),
		topk_weights: (*C.float)(wts), expected_counts: (*C.int32_t)(exp)}
	lc.nrec = cfg.Reps * 2 * cfg.Ranks
	lc.times = (*C.mbn_rank_phase)(lc.alloc(int(unsafe.Sizeof(C.mbn_rank_phase{})) * lc.nrec))
	lc.out = (*C.mbn_layer_result)(lc.alloc(int(unsafe.Sizeof(C.mbn_layer_result{}))))
	return lc, nil
}

// result reads the layer's figures back; callErr is the call's outcome.
func (lc *layerCall) result(callErr error) (LayerResult, error) {
	out, cfg := lc.out, lc.cfg
	res := LayerResult{
		WarpGroups: int(out.warp_groups), WarpsPerGroup: int(out.warps_per_group), Workers: int(out.workers),
		NICQueues: int(out.nic_queues), WQEs: int64(out.wqes), CQEs: int64(out.cqes), NICBytes: int64(out.nic_bytes),
		Doorbells: int64(out.doorbells), Torn: int64(out.torn), DCISwitches: int64(out.dci_switches),
		Descriptors: int64(out.descriptors), BgPosts: int64(out.bg_posts), Checked: int64(out.checked),
		Problems: int64(out.problems), Problem: C.GoString(&out.problem[0]), BufferBytes: int64(out.buffer_bytes),
		QueueBytes: int64(out.queue_bytes), ClockMHz: float64(out.clock_mhz), SetupMs: float64(out.setup_ms),
		RunMs: float64(out.run_ms),
	}
	if callErr != nil && !errors.Is(callErr, ErrCheck) {
		return res, callErr
	}
	recs := unsafe.Slice(lc.times, lc.nrec)
	res.Times = make([][2][]RankPhase, cfg.Reps)
	for rep := range cfg.Reps {
		for ph := range 2 {
			row := make([]RankPhase, cfg.Ranks)
			for rank := range row {
				x := &recs[(rep*2+ph)*cfg.Ranks+rank]
				row[rank] = RankPhase{IssueDoneNs: float64(x.issue_done_ns), SendDoneNs: float64(x.send_done_ns),
					WaitDoneNs: float64(x.wait_done_ns), ReadyNs: float64(x.ready_ns), KernelNs: float64(x.kernel_ns),
					PostNs: float64(x.post_ns), Posts: int64(x.posts), Copies: int64(x.copies)}
			}
			res.Times[rep][ph] = row
		}
	}
	return res, callErr
}
