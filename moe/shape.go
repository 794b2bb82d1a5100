package moe

import (
	"errors"
	"fmt"
	"strings"

	"moebench/hw"
	"moebench/internal/report"
)

// DType is the element type of a dispatched or combined hidden vector.
type DType uint8

// The element types DeepEP moves. The zero DType is invalid so that a Shape
// with an unset dtype fails validation instead of silently meaning FP8.
const (
	FP8  DType = iota + 1 // float8 e4m3, with one float32 scale per 128 channels
	BF16                  // bfloat16
	FP16                  // IEEE half
	FP32                  // IEEE single
)

// Bytes is the size of one element, or 0 for an invalid DType.
func (d DType) Bytes() int {
	switch d {
	case FP8:
		return 1
	case BF16, FP16:
		return 2
	case FP32:
		return 4
	}
	return 0
}

// String returns the name ParseDType accepts.
func (d DType) String() string {
	switch d {
	case FP8:
		return "fp8"
	case BF16:
		return "bf16"
	case FP16:
		return "fp16"
	case FP32:
		return "fp32"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ParseDType reads "fp8", "bf16", "fp16" or "fp32" (case-insensitive).
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp8":
		return FP8, nil
	case "bf16":
		return BF16, nil
	case "fp16":
		return FP16, nil
	case "fp32":
		return FP32, nil
	}
	return 0, fmt.Errorf("unknown dtype %s (want fp8, bf16, fp16 or fp32)", report.Quote(s))
}

// ScaleGroup is the number of channels that share one float32 FP8 scale
// (DeepEP's per-token, per-128-channel quantization).
const ScaleGroup = 128

// maxSelections bounds Ranks×Tokens×TopK so that a mistyped shape fails
// validation instead of exhausting memory in Generate or a layout.
const maxSelections = 1 << 30

// Shape is the size of one MoE layer under expert parallelism.
type Shape struct {
	Experts         int   // logical (model) experts
	PhysicalExperts int   // experts after redundant replicas; 0 means Experts
	TopK            int   // experts selected per token
	Hidden          int   // hidden size (channels per token)
	Tokens          int   // tokens per rank (DeepEP's max tokens per rank)
	Ranks           int   // expert-parallel ranks (GPUs)
	GPUsPerNode     int   // ranks per node; same-node peers use NVLink
	Dispatch        DType // element type on the dispatch path
	Combine         DType // element type on the combine path
}

// Validate reports the first field that makes the shape unusable. Every
// other method assumes a valid shape.
func (s Shape) Validate() error {
	switch {
	case s.Experts < 1:
		return fmt.Errorf("experts: %d, want at least 1", s.Experts)
	case s.PhysicalExperts < 0:
		return fmt.Errorf("physical experts: %d is negative (0 means the same as experts)", s.PhysicalExperts)
	case s.Physical() < s.Experts:
		return fmt.Errorf("physical experts: %d is fewer than the %d logical experts", s.Physical(), s.Experts)
	case s.TopK < 1:
		return fmt.Errorf("top-k: %d, want at least 1", s.TopK)
	case s.TopK > s.Experts:
		return fmt.Errorf("top-k: %d exceeds the %d experts (a token picks distinct experts)", s.TopK, s.Experts)
	case s.Tokens < 1:
		return fmt.Errorf("tokens: %d per rank, want at least 1", s.Tokens)
	case s.Ranks < 1:
		return fmt.Errorf("ranks: %d, want at least 1", s.Ranks)
	case s.GPUsPerNode < 1:
		return fmt.Errorf("gpus per node: %d, want at least 1", s.GPUsPerNode)
	case s.Ranks < s.GPUsPerNode:
		return fmt.Errorf("ranks: %s, fewer than one node of %d GPUs (give fewer GPUs per node)", report.Count(s.Ranks, "rank"), s.GPUsPerNode)
	case s.Ranks%s.GPUsPerNode != 0:
		return fmt.Errorf("ranks: %d ranks do not fill whole nodes of %d GPUs", s.Ranks, s.GPUsPerNode)
	case s.Physical()%s.Ranks != 0:
		return fmt.Errorf("physical experts: %d physical experts cannot be placed evenly on %d ranks", s.Physical(), s.Ranks)
	case s.Physical()/s.Ranks > hw.MaxChannel+1:
		// LL sends to each local expert on a channel of its own.
		return fmt.Errorf("physical experts: %d per rank, more than the %d channels a message carries", s.Physical()/s.Ranks, hw.MaxChannel+1)
	case s.Hidden < 1:
		return fmt.Errorf("hidden: %d, want at least 1", s.Hidden)
	}
	if err := s.validateDTypes(); err != nil {
		return err
	}
	// A token travels in one message (LL) or whole within one (normal
	// mode's chunks): its bytes must fit a message, which also keeps every
	// product of hidden below from overflowing.
	if s.tokenBytes() > hw.MaxMsgBytes {
		return fmt.Errorf("hidden: %d channels make a token of more than the %d B one message carries (InfiniBand's largest message is 2^31 B)", s.Hidden, int64(hw.MaxMsgBytes))
	}
	// Kernels copy hidden vectors in 16-byte (int4) units. FP8 scales are
	// ceil(hidden/128) float32s, the last group possibly partial, so hidden
	// need not be a multiple of 128 (gpt-oss has 2,880).
	if b := s.Hidden * s.Dispatch.Bytes(); b%16 != 0 {
		return fmt.Errorf("hidden: %d %s channels are %d B, not a multiple of 16 B", s.Hidden, s.Dispatch, b)
	}
	if b := s.Hidden * s.Combine.Bytes(); b%16 != 0 {
		return fmt.Errorf("hidden: %d %s channels are %d B, not a multiple of 16 B", s.Hidden, s.Combine, b)
	}
	if int64(s.Ranks)*int64(s.Tokens)*int64(s.TopK) > maxSelections {
		return fmt.Errorf("tokens: %d ranks × %d tokens × top-%d exceeds %d selections", s.Ranks, s.Tokens, s.TopK, maxSelections)
	}
	return nil
}

// tokenBytes is the largest message one token makes on either path, in
// 64 bits, or just Hidden where that alone exceeds a message.
func (s Shape) tokenBytes() int64 {
	if s.Hidden > hw.MaxMsgBytes || s.TopK > hw.MaxMsgBytes {
		return int64(max(s.Hidden, s.TopK))
	}
	return int64(max(s.LLDispatchBytes(), s.LLCombineBytes(), s.NormalTokenBytes()))
}

func (s Shape) validateDTypes() error {
	var errs []error
	if s.Dispatch.Bytes() == 0 {
		errs = append(errs, fmt.Errorf("dispatch dtype: %s is unset or unknown", s.Dispatch))
	}
	if s.Combine.Bytes() == 0 {
		errs = append(errs, fmt.Errorf("combine dtype: %s is unset or unknown", s.Combine))
	}
	return errors.Join(errs...)
}

// Physical is the number of physical experts (PhysicalExperts, or Experts
// when PhysicalExperts is 0).
func (s Shape) Physical() int {
	if s.PhysicalExperts == 0 {
		return s.Experts
	}
	return s.PhysicalExperts
}

// LocalExperts is the number of physical experts each rank hosts.
func (s Shape) LocalExperts() int { return s.Physical() / s.Ranks }

// Nodes is the number of nodes (RDMA ranks in DeepEP's terms).
func (s Shape) Nodes() int { return s.Ranks / s.GPUsPerNode }

// NodeOf is the node that hosts rank.
func (s Shape) NodeOf(rank int) int { return rank / s.GPUsPerNode }

// Scales is the number of float32 scales per token on the dispatch path:
// ceil(hidden/128) for FP8, 0 otherwise.
func (s Shape) Scales() int {
	if s.Dispatch != FP8 {
		return 0
	}
	return (s.Hidden + ScaleGroup - 1) / ScaleGroup
}

// Header and metadata sizes of DeepEP's messages (csrc/kernels: LL dispatch
// header = source token index + 3 reserved ints; internode SourceMeta =
// src_rdma_rank + is_token_in_nvl_rank_bits, two ints).
const (
	LLHeaderBytes     = 16
	SourceMetaBytes   = 8
	TopKIDBytes       = 8 // topk_idx is int64 at the API (DeepEP's topk_idx_t)
	TopKWeightBytes   = 4 // topk_weights is float32
	normalAlignment   = 16
	scaleElementBytes = 4
)

// LLDispatchBytes is the size of one low-latency dispatch message: 16 B
// header + hidden × dispatch bytes + ceil(hidden/128) float32 scales for
// FP8. 7,408 B at hidden 7,168 FP8; 14,352 B for BF16.
func (s Shape) LLDispatchBytes() int {
	return LLHeaderBytes + s.Hidden*s.Dispatch.Bytes() + s.Scales()*scaleElementBytes
}

// LLCombineBytes is the size of one low-latency combine message: the bare
// hidden vector, 14,336 B at hidden 7,168 BF16.
func (s Shape) LLCombineBytes() int { return s.Hidden * s.Combine.Bytes() }

// NormalTokenBytes is the per-token size in normal (high-throughput) mode
// buffers:
//
//	align16(hidden×dispatch bytes + 8 B source meta + scales×4 B
//	        + topk×8 B ids + topk×4 B weights)
//
// after DeepEP's get_num_bytes_per_token. Its V1 internode kernels stored
// ids as int (4 B); later versions use topk_idx_t, int64 as at the API,
// which is what this counts. 7,504 B at hidden 7,168 FP8 top-8.
func (s Shape) NormalTokenBytes() int {
	n := s.Hidden*s.Dispatch.Bytes() + SourceMetaBytes + s.Scales()*scaleElementBytes +
		s.TopK*(TopKIDBytes+TopKWeightBytes)
	return (n + normalAlignment - 1) / normalAlignment * normalAlignment
}
