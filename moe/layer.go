package moe

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"go.uber.org/zap"

	"moebench/fault"
	"moebench/hw"
	"moebench/internal/field"
	"moebench/internal/hugepage"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"

	"moebench/internal/report"
)

// Mode is DeepEP's kernel family.
type Mode uint8

// The modes. The zero Mode is invalid.
const (
	LL     Mode = iota + 1 // low latency: one write per selection, QP = local expert
	Normal                 // high throughput: deduplicated per rank, chunked, tail atomics
)

// String returns the name ParseMode reads.
func (m Mode) String() string {
	switch m {
	case LL:
		return "ll"
	case Normal:
		return "normal"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode reads "ll" or "normal".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ll", "low-latency":
		return LL, nil
	case "normal", "ht":
		return Normal, nil
	}
	return 0, fmt.Errorf("unknown mode %s (want ll or normal)", report.Quote(s))
}

// DeepEP's launch shapes.
const (
	// warpsPerSM is the LL kernels' block: 32 warps split into
	// ceil(experts/SMs) warp groups (csrc/kernels internode_ll.cu).
	warpsPerSM = 32
	// normalSMs is DeepEP's Buffer.num_sms default for normal mode; its
	// kernels use num_sms/2 channels, one QP each.
	normalSMs = 24
	// defaultChunk is normal mode's RDMA chunk: tokens batched into one
	// write before the remote tail is bumped (DeepEP Config
	// num_max_rdma_chunked_send_tokens; its tuned configs use 8-20).
	defaultChunk = 16
)

// LayerConfig is one layer run's input.
type LayerConfig struct {
	Routing   *Routing
	Mode      Mode
	Transport transport.Transport
	Profile   *profile.Profile
	// NVLink lets same-node peers bypass the NIC (DeepEP's
	// allow_nvlink_for_low_latency_mode; normal mode always does).
	NVLink bool
	// NumSMs is the SMs the kernels use; 0 is DeepEP's choice
	// (LL: ceil(experts / warp groups) over the GPU's SMs; normal: 24).
	NumSMs int
	// Chunk is normal mode's tokens per RDMA write; 0 means 16.
	Chunk      int
	Background Background
	// NoPayload skips the payload checksums (placement and exactly-once
	// are still checked).
	NoPayload bool
	// RanksPerGPU > 1 puts that many consecutive ranks on one GPU, as the
	// native engine's virtual ranks: they share its copy bandwidth, and
	// copies between them are device-memory copies. LL mode only.
	RanksPerGPU int
	Log         *zap.Logger
	// Progress, when set, is told of delivered messages as the simulation
	// runs (in batches of ProgressBatch), so that a long single run can
	// show movement. EstimateCost's Messages bounds the total. Dispatch
	// and combine are simulated side by side: Progress may be called from
	// two goroutines at once.
	Progress func(messages int)
	// InTurn simulates dispatch and then combine instead of side by side:
	// the same result on one core, in about half the peak memory
	// (EstimateCost's InTurn), for layers too large to hold both at once.
	InTurn bool
	// Faults, when not empty, is what goes wrong under the layer: each
	// phase's transport sees the fabric's faults on the phase's clock,
	// with draws of its own, and a slow rank's kernels take longer. A
	// phase whose transport fails stops there (Phase.Failure).
	Faults *fault.Plan

	own ownCauses // the transport's causes, set by RunLayer
}

// ProgressBatch is how many deliveries LayerConfig.Progress hears of at once.
const ProgressBatch = 256

// Validate reports the first field that makes the run impossible.
func (c *LayerConfig) Validate() error {
	switch {
	case c.Routing == nil:
		return errors.New("routing: none given")
	case c.Transport == nil:
		return errors.New("transport: none given")
	case c.Profile == nil:
		return errors.New("profile: none given")
	case c.Mode != LL && c.Mode != Normal:
		return field.Errorf("mode", "%v, want ll or normal", c.Mode)
	case c.NumSMs < 0:
		return field.Errorf("num-sms", "%d is negative (0 = DeepEP's choice)", c.NumSMs)
	case c.Chunk < 0:
		return field.Errorf("chunk", "%d is negative (0 = the default)", c.Chunk)
	case c.RanksPerGPU < 0 || (c.RanksPerGPU > 1 && c.Routing.Shape.Ranks%c.RanksPerGPU != 0):
		return fmt.Errorf("ranks per GPU: %d does not divide the ranks", c.RanksPerGPU)
	case c.RanksPerGPU > 1 && c.Mode == Normal && c.Routing.Shape.Domains() > 1:
		return errors.New("ranks per GPU: internode normal mode places one rank on each GPU")
	}
	if err := c.Routing.Shape.Validate(); err != nil {
		return err
	}
	if err := c.validateNodes(); err != nil {
		return err
	}
	if err := c.Routing.Shape.CheckWrites(c.Mode, c.Chunk); err != nil {
		return err
	}
	if sms := int(c.Profile.Get("gpu.sms")); c.NumSMs > sms {
		return field.Errorf("num-sms", "%d exceeds the GPU's %d SMs (gpu.sms)", c.NumSMs, sms)
	}
	if err := c.Background.Validate(); err != nil {
		return field.Errorf("background", "%w", err)
	}
	if err := c.Faults.Validate(c.Routing.Shape.Ranks); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	if s := c.Routing.Shape; c.Mode == LL && int64(s.Physical())*int64(s.Ranks) > math.MaxInt32 {
		// A sending warp keeps its count's index, expert·R + rank, in 32 bits.
		return field.Errorf("experts", "%d experts on %d ranks make %d (expert, rank) counts, more than the %d an LL layer indexes",
			s.Physical(), s.Ranks, int64(s.Physical())*int64(s.Ranks), math.MaxInt32)
	}
	if layer, reserved := Channels(c.Routing.Shape, c.Mode, c.NumSMs, c.Background); layer+reserved > hw.MaxChannel+1 {
		// A message record carries its channel in 16 bits.
		return field.Errorf("experts", "%d channels per rank (%d local experts or channels, %d for the background) exceed the %d a message carries",
			layer+reserved, layer, reserved, hw.MaxChannel+1)
	}
	return nil
}

// CheckWrites reports normal-mode chunks (chunk tokens, 0 the default)
// whose tokens make a write larger than one message carries, for a valid
// shape: an LL message is one token, which Validate bounds. The bound also
// keeps chunk counts within 32 bits. Callers may check it before building
// anything; LayerConfig.Validate checks it too.
func (s Shape) CheckWrites(mode Mode, chunk int) error {
	if mode != Normal {
		return nil
	}
	tb := s.NormalTokenBytes()
	if chunk > hw.MaxMsgBytes/tb {
		return field.Errorf("chunk", "%d tokens of %d B are more than the %d B one message carries (InfiniBand's largest message is 2^31 B; at most %d tokens)",
			chunk, tb, int64(hw.MaxMsgBytes), hw.MaxMsgBytes/tb)
	}
	if chunk > 0 {
		return nil
	}
	chunk = defaultChunk
	if s.Domains() > 1 {
		d, cm := NodeConfigs(s.Ranks, 0)
		chunk = max(d.RDMAChunk, cm.RDMAChunk)
	}
	if chunk > hw.MaxMsgBytes/tb {
		return field.Errorf("hidden", "%d channels make the default chunks of %d tokens of %d B more than the %d B one message carries (InfiniBand's largest message is 2^31 B; give a chunk of at most %d tokens)",
			s.Hidden, chunk, tb, int64(hw.MaxMsgBytes), hw.MaxMsgBytes/tb)
	}
	return nil
}

// Channels is how many transport channels (queues per peer) the layer's
// own traffic uses, and how many more a reserved background needs beyond
// them: ask the transport for at least layer+reserved QPs per peer when
// the background is reserved. LL uses one channel per destination local
// expert, normal mode one per channel (num_sms/2), and across nodes a
// second per channel for the credit returns (DeepEP asks NVSHMEM for at
// least num_sms QPs per peer).
func Channels(s Shape, mode Mode, numSMs int, bg Background) (layer, reserved int) {
	if mode == Normal {
		layer = max(1, normalSMsOr(numSMs)/2)
		if s.Domains() > 1 {
			layer *= 2
		}
	} else {
		layer = s.LocalExperts()
	}
	if bg.Reserved && bg.CTAs > 0 {
		reserved = bg.queues()
	}
	return layer, reserved
}

// DefaultNormalSMs is the SMs normal mode takes when none are asked for.
const DefaultNormalSMs = normalSMs

func normalSMsOr(n int) int {
	if n > 0 {
		return n
	}
	return normalSMs
}

// NVLinkCarrier is implemented by transports that carry same-node peers
// over NVLink when the layer allows it (Env.NVLink); normal mode then runs
// DeepEP's intranode kernels, which never touch a NIC.
type NVLinkCarrier interface{ CarriesNVLink() bool }

func carriesNVLink(t transport.Transport) bool {
	c, ok := t.(NVLinkCarrier)
	return ok && c.CarriesNVLink()
}

// ErrQueueDepth marks a run whose transport queues cannot hold what the
// mode keeps in flight (a *DepthError says how much).
var ErrQueueDepth = errors.New("QP depth too small")

// DepthError is an LL layer whose tokens overfill the transport's queues:
// DeepEP's send path never polls completions, so each QP must hold what
// the layer keeps in flight.
type DepthError struct {
	Depth, Need, Tokens int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("%v: the transport's queues hold %d WQEs, LL mode keeps up to 2·(tokens + 1) = %d in flight per QP at %d tokens (DeepEP asserts this: its send path never polls completions)",
		ErrQueueDepth, e.Depth, e.Need, e.Tokens)
}

// Is makes errors.Is(err, ErrQueueDepth) hold.
func (e *DepthError) Is(target error) bool { return target == ErrQueueDepth }

// MaxTokens is the most tokens the queues hold.
func (e *DepthError) MaxTokens() int { return e.Depth/2 - 1 }

// checkDepth applies DeepEP's rule for LL mode: the send path never polls
// completions, so each QP must hold 2·(max tokens + 1) WQEs (one token per
// slot to one expert plus its count, double buffered).
func checkDepth(s Shape, depth int) error {
	need := 2 * (s.Tokens + 1)
	if depth <= 0 || depth >= need {
		return nil
	}
	e := &DepthError{Depth: depth, Need: need, Tokens: s.Tokens}
	return field.Errorf("tokens", "%w; at most %d fit", e, e.MaxTokens())
}

// nicModel gives the NIC's own processing time of an op on an idle NIC,
// from doorbell service to the first byte on the wire, and the causes of
// the transport's own NIC time.
type nicModel struct {
	p   hw.NICParams
	own ownCauses
}

// nicShare is how a delivery's Served→Sent splits before egress queueing.
type nicShare struct {
	floor sim.Time
	own   ownCauses
}

func (n *nicModel) floor(op transport.Op, nvlink bool) nicShare {
	if nvlink {
		return nicShare{own: n.own}
	}
	p := &n.p
	t := p.Doorbell + p.WQE + p.DMARead + p.PCIeTime(64) + p.Tx
	if !op.Atomic && op.Bytes > 8 {
		t += p.DMARead + p.PCIeTime(op.Bytes)
	}
	return nicShare{t, n.own}
}

// gpuModel is the GPU-side compute and copy model shared by both modes.
type gpuModel struct {
	nic     nicModel
	costs   hw.GPUCosts
	kern    kernelCosts
	warpBpp float64 // bytes per picosecond one warp copies
	// mem is the GPUs' copy bandwidth, shared by every copy on a GPU (by
	// the ranks sharing one, and by the transport's copies between them);
	// receive-side copies and the reduction draw on pools of their own.
	mem            *hw.Memory
	recvMem, reduc *hw.Pool
	// slow is each rank's kernel slowdown and slowCosts a slow rank's GPU
	// costs (nil when no rank is slow): see slowRanks.
	slow      []float64
	slowCosts []*hw.GPUCosts
}

// kernelCosts are the layer kernels' own fixed costs (kernel.* and the
// warp copy's latency), from the profile.
type kernelCosts struct {
	start, cast, gridSync, recvTask, recvToken, reduceToken, warpCopy sim.Time
	// normal mode over NVLink: per chunk sent and received, and the
	// receiving warp's copy rate (bytes per picosecond)
	nvlChunk, nvlRecvChunk sim.Time
	nvlWarpBpp             float64
}

func newGPUModel(cfg *LayerConfig, ranks int) *gpuModel { return newGPUModelOn(cfg, ranks, 1) }

// newGPUModelOn places ranksPerGPU consecutive ranks on each GPU.
func newGPUModelOn(cfg *LayerConfig, ranks, ranksPerGPU int) *gpuModel {
	p := cfg.Profile
	ns := func(name string) sim.Time { return sim.Ns(p.Get(name)) }
	mem := hw.NewMemory(ranks, ranksPerGPU, p.Get("gpu.copy_gbs"), p.Get("gpu.warp_copy_gbs"), ns("gpu.warp_copy_ns"))
	mem.SetQueueWait(p.Get("gpu.copy_queue_wait"))
	g := &gpuModel{
		recvMem: mem.NewPool(p.Get("kernel.recv_gbs")),
		reduc:   mem.NewPool(p.Get("kernel.reduce_gbs")),
		nic:     nicModel{hw.NewNICParams(p), cfg.own},
		costs:   hw.NewGPUCosts(p),
		kern: kernelCosts{
			start: ns("kernel.start_ns"), cast: ns("kernel.cast_ns"), gridSync: ns("kernel.grid_sync_ns"),
			recvTask: ns("kernel.recv_task_ns"), recvToken: ns("kernel.recv_token_ns"),
			reduceToken: ns("kernel.reduce_token_ns"), warpCopy: ns("gpu.warp_copy_ns"),
			nvlChunk: ns("kernel.nvl_chunk_ns"), nvlRecvChunk: ns("kernel.nvl_recv_chunk_ns"),
			nvlWarpBpp: p.Get("kernel.nvl_warp_gbs") / 1000,
		},
		warpBpp: p.Get("gpu.warp_copy_gbs") / 1000,
		mem:     mem,
	}
	g.slowRanks(cfg.Faults, ranks)
	return g
}

func bytesTime(b int64, bpp float64) sim.Time {
	if b <= 0 {
		return 0
	}
	return sim.Time(math.Ceil(float64(b) / bpp))
}

// copy moves bytes on rank's GPU starting at start with `par` warps in
// parallel, each moving its share at the warp rate, while the GPU's copy
// bandwidth is shared by every copy on the GPU in event order (and a
// warp's loads may queue behind those ahead of them: hw.Memory). It
// returns when the copy is done.
func (g *gpuModel) copy(rank int, start sim.Time, bytes int64, perWarp int64) sim.Time {
	return g.copyN(rank, start, bytes, perWarp, 0)
}

// copyN is copy whose warps also pay a fixed latency (their messages'
// first round trips, or per-token work around the copy) before the bytes
// stream at the warp rate. A slow rank's copy and its fixed work take
// its factor times as long (gpuModel.on).
func (g *gpuModel) copyN(rank int, start sim.Time, bytes, perWarp int64, fixed sim.Time) sim.Time {
	if bytes <= 0 {
		return start + g.on(rank, fixed)
	}
	served, end := g.mem.TakeFrom(rank, start, g.bytesOn(rank, bytes))
	return max(g.mem.QueueWait(start, served)+g.on(rank, fixed+bytesTime(perWarp, g.warpBpp)), end)
}

// copyIn is copyN through pool p instead of the GPU's general share.
func (g *gpuModel) copyIn(p *hw.Pool, rank int, start sim.Time, bytes, perWarp int64, fixed sim.Time) sim.Time {
	if bytes <= 0 {
		return start + g.on(rank, fixed)
	}
	served, end := p.TakeFrom(rank, start, g.bytesOn(rank, bytes))
	return max(g.mem.QueueWait(start, served)+g.on(rank, fixed+bytesTime(perWarp, g.warpBpp)), end)
}

// pollDetect is when a polling warp observes a value visible at v: polls
// are one L2 load plus the loop gap apart; on average the value lands half
// a period before the next poll, which then takes one load.
func (g *gpuModel) pollDetect(v sim.Time) sim.Time {
	return v + (g.costs.L2Load+g.costs.PollGap)/2 + g.costs.L2Load
}

// warpPool holds the sending warps of a phase in one slice, so that
// Warp.ID indexes the workload's own state, which sits beside the warp:
// a warp's every step touches both, and a million warps do not fit in
// cache.
type warpPool[S any] struct {
	a []pooled[S]
}

type pooled[S any] struct {
	w  transport.Warp
	st S
}

func (p *warpPool[S]) init(n int) {
	p.a = hugepage.MakeTouched[pooled[S]](n)
}

// RunLayer simulates dispatch and then combine, each from a common start
// as DeepEP times its kernels, and checks the results.
func RunLayer(cfg LayerConfig) (*Result, error) {
	if err := cfg.onProfile(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	var err error
	if cfg.own, err = ownCausesOf(cfg.Transport); err != nil {
		return nil, err
	}
	s := cfg.Routing.Shape
	res := &Result{
		Transport: cfg.Transport.Name(),
		Mode:      cfg.Mode,
		Shape:     s,
		NVLink:    cfg.NVLink,
		RouteHash: cfg.Routing.Hash(),
	}
	setPhaseFaults(&cfg, res)
	if flaps(cfg.Faults) {
		// Combine's start on the layer's clock is dispatch's end.
		cfg.InTurn = true
	}
	log := cfg.Log.With(zap.String("transport", res.Transport), zap.String("mode", cfg.Mode.String()),
		zap.Int("ranks", s.Ranks), zap.String("route", res.RouteHash))
	log.Debug("layer start", zap.Int("tokens", s.Tokens), zap.Int("experts", s.Physical()), zap.Int("topk", s.TopK),
		zap.String("background", cfg.Background.String()))
	wall := time.Now()
	switch cfg.Mode {
	case LL:
		err = runLL(&cfg, res)
		// DeepEP's LL tests count what AlgoGBps counts: every selection's
		// message over the phase time.
		res.Dispatch.DeepEPGBps, res.Combine.DeepEPGBps = res.Dispatch.AlgoGBps, res.Combine.AlgoGBps
	case Normal:
		err = runNormal(&cfg, res)
	}
	if err != nil {
		log.Debug("layer failed", zap.Error(err))
		return nil, err
	}
	for _, ph := range []struct {
		name string
		p    *Phase
	}{{"dispatch", &res.Dispatch}, {"combine", &res.Combine}} {
		log.Debug("phase done", zap.String("phase", ph.name), zap.Float64("mean_us", ph.p.Time.Mean),
			zap.Int64("messages", ph.p.Messages), zap.Uint64("events", ph.p.Events), zap.String("bound_by", ph.p.BoundBy))
	}
	log.Info("layer simulated", zap.Uint64("events", res.Events), zap.Duration("wall", time.Since(wall)))
	if phase, f := res.Failed(); f != nil {
		// A result the faults asked for, not a fault of the run's.
		log.Info("layer failed under faults", zap.String("phase", phase), zap.Error(f))
	}
	if res.ProblemCount > 0 {
		log.Warn("layer checks failed", zap.Int("problems", res.ProblemCount), zap.Strings("first", res.Problems))
	}
	if res.Resources.ConnKnee == 0 {
		res.Resources.ConnKnee = ConnKnee(cfg.Profile)
	}
	var sum Breakdown
	for c := range sum {
		sum[c] = res.Dispatch.Breakdown[c] + res.Combine.Breakdown[c]
	}
	if sum.Total() > 0 {
		res.BoundBy = sum.Largest().String()
	}
	res.Correct = len(res.Problems) == 0
	return res, nil
}

// ConnKnee is the profile's onset of NIC connection-context pressure
// (conn.knee_connections, or the context cache's conn.entries), or 0 when
// the profile has neither.
func ConnKnee(p *profile.Profile) int {
	for _, name := range []string{"conn.knee_connections", "conn.entries"} {
		if _, declared := profile.Lookup(name); !declared {
			continue
		}
		if c, ok := p.Constant(name); ok {
			return int(c.Value)
		}
	}
	return 0
}

// openPhase builds a fresh engine and connection for one phase: each
// kernel starts from idle queues, as after the barrier DeepEP's tests put
// between timed runs. The transport is handed the layer's faults as ph
// sees them (faultEnv).
func openPhase(cfg *LayerConfig, ph *Phase, delivered func(*sim.Engine, transport.Delivery)) (*sim.Engine, transport.Conn, error) {
	return openPhaseOn(cfg, ph, delivered, nil, nil)
}

// openPhaseOn is openPhase whose transport copies between ranks of one GPU
// through mem, the GPU's bandwidth the layer's own copies take too.
func openPhaseOn(cfg *LayerConfig, ph *Phase, delivered func(*sim.Engine, transport.Delivery), prefetch func(tag int64), mem *hw.Memory) (*sim.Engine, transport.Conn, error) {
	if report := cfg.Progress; report != nil {
		inner, n := delivered, 0
		delivered = func(e *sim.Engine, d transport.Delivery) {
			if n++; n == ProgressBatch {
				report(n)
				n = 0
			}
			inner(e, d)
		}
	}
	e := &sim.Engine{}
	s := cfg.Routing.Shape
	env := &transport.Env{E: e, Profile: cfg.Profile, Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, NVLDomain: s.DomainGPUs(),
		NVLink: cfg.NVLink, Delivered: delivered, PrefetchDelivery: prefetch, Log: cfg.Log}
	if cfg.RanksPerGPU > 1 {
		env.Mem = mem
	}
	faultEnv(env, ph, cfg.Background.origin())
	conn, err := cfg.Transport.Open(env)
	if err != nil {
		return nil, nil, fmt.Errorf("transport %s: %w", cfg.Transport.Name(), err)
	}
	return e, conn, nil
}

// problemList collects correctness problems, capped like the oracles'.
type problemList struct {
	list []string
	n    int
}

func (p *problemList) add(format string, args ...any) {
	p.n++
	if len(p.list) < maxReported {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problemList) addErr(err error) {
	if err != nil {
		p.n++
		p.list = append(p.list, err.Error())
	}
}

// bothPhases runs dispatch and combine, which share nothing they write,
// side by side on two goroutines, or one after the other in turn (combine
// not at all once dispatch failed). free, when not nil, is closed once
// dispatch no longer needs its core: at once in turn, else when it ends.
func bothPhases(inTurn bool, free chan struct{}, dispatch func() error, combine func()) {
	done := func() {
		if free != nil {
			close(free)
		}
	}
	if inTurn {
		done()
		if dispatch() == nil {
			// Dispatch's state is garbage now: collect it before combine
			// grows, rather than let the heap reach twice dispatch's peak,
			// and return it to the system: combine's slabs are mapped
			// beside the heap (sim.Slab), not made from what it keeps.
			debug.FreeOSMemory()
			combine()
		}
		return
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer done()
		dispatch()
	}()
	combine()
	<-finished
}

// runPhases runs a normal layer's dispatch and combine through
// bothPhases, each with a problem list of its own, merged into probs in
// that order; the error is dispatch's first, as a serial run's would be.
func runPhases(inTurn bool, probs *problemList, dispatch, combine func(*problemList) (transport.Resources, error)) (r1, r2 transport.Resources, err error) {
	var (
		probs2     problemList
		err1, err2 error
	)
	bothPhases(inTurn, nil, func() error {
		r1, err1 = dispatch(probs)
		return err1
	}, func() {
		r2, err2 = combine(&probs2)
	})
	if err = cmp.Or(err1, err2); err == nil {
		probs.merge(&probs2)
	}
	return r1, r2, err
}

// merge appends q's problems after p's.
func (p *problemList) merge(q *problemList) {
	for _, s := range q.list {
		if len(p.list) < maxReported {
			p.list = append(p.list, s)
		}
	}
	p.n += q.n
}

func (p *problemList) out() []string {
	if p.n > len(p.list) {
		return append(p.list, fmt.Sprintf("and %d more", p.n-len(p.list)))
	}
	return p.list
}
