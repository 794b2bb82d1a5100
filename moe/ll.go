package moe

import (
	"errors"
	"fmt"

	"moebench/internal/field"
	"moebench/transport"
)

// Low-latency mode, message by message as DeepEP V1's internode_ll.cu
// kernels send it (deepep.md):
//
// Dispatch. SM s of a rank casts tokens s, s+S, ... to FP8 with all its
// warps, then warp j posts the token's j-th selection as one write of
// LLDispatchBytes to the expert's rank on channel = destination local
// expert. After the token loop, warp group g of SM s posts, for each
// expert it is responsible for (e = s·G+g, ...), one count atomic on the
// same channel with Flush, once every write of that expert has been
// posted. After a grid sync the receiving warp groups poll the count of
// their (local expert, source) block and copy its tokens into the packed
// layout; a rank is ready when every block is packed.
//
// Combine. Warp group g of SM s, for each (local expert, destination rank)
// block it is responsible for, sends every token it received in dispatch
// back as one LLCombineBytes write (each warp copies its tokens into the
// send buffer first), then one flag atomic for the expert. A rank waits
// for every expert's flag, the grid sync, then reduces top-k.

// LLLaunch is the low-latency kernels' launch for a shape: SMs per rank,
// warp groups per SM and warps per group. numSMs 0 is DeepEP's choice on
// a GPU of deviceSMs SMs; the native engine launches the same.
func LLLaunch(s Shape, numSMs, deviceSMs int) (sms, groups, warpsPerGroup int) {
	l := llLaunch(s, numSMs, deviceSMs)
	return l.S, l.G, l.wpg
}

// LLBeyondDeepEP reports whether a shape's LL launch needs a warp group to
// serve more than one expert: DeepEP's kernels give each expert its own
// warp group and refuse more than 32 groups per SM (num_warps_per_group =
// 32 / groups must be positive), so at most 32 × SMs experts, 4,224 on a
// 132-SM GPU. Past that the model lets each warp group serve its experts
// in turn, a launch the library itself does not make; limit is the most
// experts the launch gives a warp group each.
func LLBeyondDeepEP(s Shape, numSMs, deviceSMs int) (limit int, beyond bool) {
	l := llLaunch(s, numSMs, deviceSMs)
	return l.S * l.G, s.Physical() > l.S*l.G
}

func llLaunch(s Shape, numSMs, deviceSMs int) launchShape {
	e := s.Physical()
	var S, G int
	if numSMs > 0 {
		S = numSMs
		G = min(warpsPerSM, (e+S-1)/S)
	} else {
		G = (e + deviceSMs - 1) / deviceSMs
		G = min(G, warpsPerSM)
		S = (e + G - 1) / G
		S = min(S, deviceSMs)
	}
	return launchShape{S: S, G: G, wpg: warpsPerSM / G}
}

// LLBufferBytes is DeepEP's low-latency buffer per rank
// (get_low_latency_rdma_size_hint): double-buffered send, receive and
// signalling areas, each message slot sized for BF16 or FP8 dispatch,
// whichever is larger.
func LLBufferBytes(s Shape) int64 {
	e, t := int64(s.Physical()), int64(s.Tokens)
	h := int64(s.Hidden)
	scales := (h + ScaleGroup - 1) / ScaleGroup
	dmsg := int64(LLHeaderBytes) + max(h*2, h+scales*4)
	cmsg := h * 2
	send := max(t*dmsg, e*t*cmsg)
	recv := max(e*t*dmsg, e*t*cmsg)
	signal := e * 4
	return 2 * (send + recv + signal)
}

// dataOp is a write of bytes from src to (dst, local expert ch).
func dataOp(src, dst, ch, bytes int, tag int64) transport.Op {
	return transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: bytes, Tag: tag}
}

// ctlOp is a count or flag atomic from src to (dst, local expert ch): an
// 8 B fetch-add that flushes.
func ctlOp(src, dst, ch int, tag int64) transport.Op {
	return transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: 8, Atomic: true, Flush: true, Tag: tag}
}

// llBytes is each rank's algorithm-bandwidth numerator: its valid
// selections × the message size.
func llBytes(l *LLLayout, msg int) []int64 {
	out := make([]int64, l.Shape.Ranks)
	for r := range out {
		out[r] = int64(l.Start[r+1]-l.Start[r]) * int64(msg)
	}
	return out
}

// llBuffer is DeepEP's LL buffer (LLBufferBytes).
func llBuffer(s Shape, _ int) (int64, float64, string) {
	return LLBufferBytes(s), llBound(s), fmt.Sprintf("DeepEP's LL buffer for %d experts × %d tokens × hidden %d", s.Physical(), s.Tokens, s.Hidden)
}

// precheckLL refuses top-k beyond a kernel block's warps, and queues that
// cannot hold what LL keeps in flight (checkDepth).
func precheckLL(s Shape, cfg *LayerConfig) error {
	if s.TopK > warpsPerSM {
		return field.Errorf("topk", "%d exceeds the %d warps an LL kernel block posts from", s.TopK, warpsPerSM)
	}
	return checkDepth(s, cfg.Transport.QueueDepth())
}

// runLL runs both LL phases and the checks.
func runLL(cfg *LayerConfig, res *Result) error {
	s := cfg.Routing.Shape
	if s.TopK > warpsPerSM {
		return field.Errorf("topk", "%d exceeds the %d warps an LL kernel block posts from", s.TopK, warpsPerSM)
	}
	l := cfg.Routing.LL()
	blocks := l.Blocks() // read by both phases, so built before either starts
	g := newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU)
	res.NumSMs = llLaunch(s, cfg.NumSMs, g.costs.SMs).S
	// Dispatch and combine are simulated from their own start, each on its
	// own engine, so they run side by side on two cores, or in turn when
	// memory is short; each is deterministic, and so is the result.
	// Combine's checks take the core dispatch leaves (see combineCheck).
	free := make(chan struct{})
	var (
		probs, probs2 problemList
		r1, r2        transport.Resources
		err1, err     error
	)
	dispatch := func() error {
		var check *DispatchCheck
		r1, check, err1 = runLLDispatch(cfg, l, blocks, g, &probs, &res.Dispatch)
		if err1 == nil {
			// A failed dispatch left slots unfilled; what it delivered is
			// still checked.
			probs.addErr(check.err(res.Dispatch.Failure == nil))
		}
		return err1
	}
	combine := func() {
		g2 := newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU)
		r2, err = runLLCombine(cfg, l, blocks, g2, &probs2, &res.Combine, free)
	}
	bothPhases(cfg.InTurn, free, dispatch, combine)
	if err1 != nil {
		return err1
	}
	if err != nil {
		return err
	}
	probs.merge(&probs2)
	res.Events = res.Dispatch.Events + res.Combine.Events
	res.Resources = Resources{Resources: r1.Max(r2), BufferBytesPerRank: LLBufferBytes(s)}
	res.Problems, res.ProblemCount = probs.out(), probs.n
	// DeepEP's LL tests count what AlgoGBps counts: every selection's
	// message over the phase time.
	res.Dispatch.DeepEPGBps, res.Combine.DeepEPGBps = res.Dispatch.AlgoGBps, res.Combine.AlgoGBps
	return nil
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
