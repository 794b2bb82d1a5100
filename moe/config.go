package moe

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"moebench/fault"
	"moebench/hw"
	"moebench/internal/field"
	"moebench/profile"
	"moebench/transport"
)

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
	case !c.Mode.valid():
		return field.Errorf("mode", "%v, want ll or normal", c.Mode)
	case c.NumSMs < 0:
		return field.Errorf("num-sms", "%d is negative (0 = DeepEP's choice)", c.NumSMs)
	case c.Chunk < 0:
		return field.Errorf("chunk", "%d is negative (0 = the default)", c.Chunk)
	case c.RanksPerGPU < 0 || (c.RanksPerGPU > 1 && c.Routing.Shape.Ranks%c.RanksPerGPU != 0):
		return fmt.Errorf("ranks per GPU: %d does not divide the ranks", c.RanksPerGPU)
	case c.RanksPerGPU > 1 && c.Mode.spec().oneRankPerGPU(c.Routing.Shape):
		return errors.New("ranks per GPU: internode normal mode places one rank on each GPU")
	}
	if err := c.Routing.Shape.Validate(); err != nil {
		return err
	}
	m := c.Mode.spec()
	if err := m.checkShape(c); err != nil {
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
	if err := m.checkScale(c); err != nil {
		return err
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
	return mode.spec().writes(s, chunk)
}

// Channels is how many transport channels (queues per peer) the layer's
// own traffic uses, and how many more a reserved background needs beyond
// them: ask the transport for at least layer+reserved QPs per peer when
// the background is reserved. LL uses one channel per destination local
// expert, normal mode one per channel (num_sms/2), and across nodes a
// second per channel for the credit returns (DeepEP asks NVSHMEM for at
// least num_sms QPs per peer).
func Channels(s Shape, mode Mode, numSMs int, bg Background) (layer, reserved int) {
	layer = mode.spec().channels(s, numSMs)
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
