package moe

import (
	"errors"
	"fmt"
	"strings"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/internal/report"
)

// DType is the element type of a dispatched or combined hidden vector.
type DType uint8

// The element types DeepEP moves. The zero DType is invalid so that a Shape
// with an unset dtype fails validation instead of silently meaning FP8.
const (
	FP8   DType = iota + 1 // float8 e4m3, with one float32 scale per 128 channels
	BF16                   // bfloat16
	FP16                   // IEEE half
	FP32                   // IEEE single
	NVFP4                  // 4-bit e2m1, two a byte, one e4m3 scale per 16 channels; dispatch only
)

// Bytes is the size of one element in whole bytes, or 0 for an invalid
// DType and for NVFP4, whose elements are half a byte: size vectors with
// VectorBytes.
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

// Valid reports whether d is one of the element types above.
func (d DType) Valid() bool { return d >= FP8 && d <= NVFP4 }

// VectorBytes is the size of n elements without their scales: n/2 for
// NVFP4 (two values a byte; n even, as Validate's 16-channel blocks make
// it), n × Bytes otherwise.
func (d DType) VectorBytes(n int) int {
	if d == NVFP4 {
		return n / 2
	}
	return n * d.Bytes()
}

// ScaleGroup is the number of channels that share one float32 FP8 scale
// (DeepEP's per-token, per-128-channel quantization).
const ScaleGroup = 128

// NVFP4Block is the number of channels that share one e4m3 NVFP4 scale,
// and NVFP4Align the hidden sizes NVFP4 dispatch takes. NVIDIA's NVFP4
// scales each block of 16 e2m1 values by one FP8 e4m3 byte and the whole
// tensor by one float32 (the NVFP4 blog; ModelOpt's group_size 16, the
// e4m3 weight_scale and the float32 weight_scale_2). The kernels that
// dispatch it (DeepEP's low-latency NVFP4 dispatch, deepseek-ai/DeepEP#341,
// csrc/kernels/internode_ll.cu; TensorRT-LLM's low_latency_dispatch_fp4,
// fused_moe_wide_ep.py) send per token hidden/2 B of values and hidden/16
// B of block scales after the 16 B header, copying both in 16 B (int4)
// units and asserting the message a whole number of them: hidden must be a
// multiple of 256. The global scale does not travel: it is one calibrated
// float32 per tensor that every rank holds (DeepEP reads x_global_scale
// once for the whole dispatch), so it adds no bytes to a message.
const (
	NVFP4Block = 16
	NVFP4Align = 256
)

// ScaleCount is the number of scales n channels carry: ceil(n/128)
// float32s for FP8, n/16 e4m3 bytes for NVFP4, none otherwise.
func (d DType) ScaleCount(n int) int {
	switch d {
	case FP8:
		return (n + ScaleGroup - 1) / ScaleGroup
	case NVFP4:
		return n / NVFP4Block
	}
	return 0
}

// ScaleBytes is the size of the scales n channels carry: 4 B a float32
// FP8 scale, 1 B an e4m3 NVFP4 one.
func (d DType) ScaleBytes(n int) int {
	if d == NVFP4 {
		return d.ScaleCount(n)
	}
	return d.ScaleCount(n) * scaleElementBytes
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
	case NVFP4:
		return "nvfp4"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ParseDType reads "fp8", "bf16", "fp16", "fp32" or "nvfp4"
// (case-insensitive).
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
	case "nvfp4":
		return NVFP4, nil
	}
	return 0, fmt.Errorf("unknown dtype %s (want fp8, bf16, fp16, fp32 or nvfp4)", report.Quote(s))
}

// maxSelections bounds Ranks×Tokens×TopK so that a mistyped shape fails
// validation instead of exhausting memory in Generate or a layout.
const maxSelections = 1 << 30

// Shape is the size of one MoE layer under expert parallelism.
type Shape struct {
	Experts         int // logical (model) experts
	PhysicalExperts int // experts after redundant replicas; 0 means Experts
	TopK            int // experts selected per token
	Hidden          int // hidden size (channels per token)
	Tokens          int // tokens per rank (DeepEP's max tokens per rank)
	Ranks           int // expert-parallel ranks (GPUs)
	GPUsPerNode     int // ranks per node (host)
	// NVLDomain is the GPUs of one NVLink domain, a whole number of nodes
	// (an NVL72 rack: 72 GPUs over 18 hosts); 0 means the node. Peers in
	// one domain use NVLink, and DeepEP's RDMA ranks are domains.
	NVLDomain int
	Dispatch  DType // element type on the dispatch path
	Combine   DType // element type on the combine path
}

// Validate reports the first field that makes the shape unusable. Every
// other method assumes a valid shape.
func (s Shape) Validate() error {
	switch {
	case s.Experts < 1:
		return field.Errorf("experts", "%d, want at least 1", s.Experts)
	case s.PhysicalExperts < 0:
		return field.Errorf("experts", "%d is negative (0 means the same as experts)", s.PhysicalExperts)
	case s.Physical() < s.Experts:
		return field.Errorf("experts", "%d is fewer than the %d logical experts", s.Physical(), s.Experts)
	case s.TopK < 1:
		return field.Errorf("topk", "%d, want at least 1", s.TopK)
	case s.TopK > s.Experts:
		return field.Errorf("topk", "%d exceeds the %d experts (a token picks distinct experts)", s.TopK, s.Experts)
	case s.Tokens < 1:
		return field.Errorf("tokens", "%d per rank, want at least 1", s.Tokens)
	case s.Ranks < 1:
		return field.Errorf("ranks", "%d, want at least 1", s.Ranks)
	case s.GPUsPerNode < 1:
		return field.Errorf("gpus-per-node", "%d, want at least 1", s.GPUsPerNode)
	case s.Ranks < s.GPUsPerNode:
		return field.Errorf("ranks", "%s, fewer than one node of %d GPUs (give fewer GPUs per node)", report.Count(s.Ranks, "rank"), s.GPUsPerNode)
	case s.Ranks%s.GPUsPerNode != 0:
		return field.Errorf("ranks", "%d ranks do not fill whole nodes of %d GPUs", s.Ranks, s.GPUsPerNode)
	case s.NVLDomain < 0:
		return fmt.Errorf("nvlink domain: %d GPUs is negative (0 means the node)", s.NVLDomain)
	case s.NVLDomain%s.GPUsPerNode != 0:
		return fmt.Errorf("nvlink domain: %d GPUs is not a whole number of nodes of %d GPUs", s.NVLDomain, s.GPUsPerNode)
	case s.Ranks > s.NVLDomain && s.NVLDomain > 0 && s.Ranks%s.NVLDomain != 0:
		hint := ""
		if d := domainShare(s.Ranks, s.NVLDomain, s.GPUsPerNode); d > 0 {
			hint = fmt.Sprintf(", or an NVLink domain of %d: %d domains of %d GPUs", d, s.Ranks/d, d)
		}
		return field.Errorf("ranks", "%d ranks do not fill whole NVLink domains of %d GPUs (give a multiple of %d ranks%s)", s.Ranks, s.NVLDomain, s.NVLDomain, hint)
	case s.Physical()%s.Ranks != 0:
		return field.Errorf("experts", "%d physical experts cannot be placed evenly on %d ranks", s.Physical(), s.Ranks)
	case s.Physical()/s.Ranks > hw.MaxChannel+1:
		// LL sends to each local expert on a channel of its own.
		return field.Errorf("experts", "%d per rank, more than the %d channels a message carries", s.Physical()/s.Ranks, hw.MaxChannel+1)
	case s.Hidden < 1:
		return field.Errorf("hidden", "%d, want at least 1", s.Hidden)
	}
	if err := s.validateDTypes(); err != nil {
		return err
	}
	// A token travels in one message (LL) or whole within one (normal
	// mode's chunks): its bytes must fit a message, which also keeps every
	// product of hidden below from overflowing.
	if s.tokenBytes() > hw.MaxMsgBytes {
		return field.Errorf("hidden", "%d channels make a token of more than the %d B one message carries (InfiniBand's largest message is 2^31 B)", s.Hidden, int64(hw.MaxMsgBytes))
	}
	// Kernels copy hidden vectors in 16-byte (int4) units. FP8 scales are
	// ceil(hidden/128) float32s, the last group possibly partial, so hidden
	// need not be a multiple of 128 (gpt-oss has 2,880). NVFP4's values and
	// block scales are each copied in such units (see NVFP4Align).
	if s.Dispatch == NVFP4 && s.Hidden%NVFP4Align != 0 {
		return field.Errorf("hidden", "%d nvfp4 channels, want a multiple of %d: the kernels copy a token's 4-bit values (hidden/2 B) and its e4m3 scales, one per %d channels (hidden/%d B), in whole 16 B units",
			s.Hidden, NVFP4Align, NVFP4Block, NVFP4Block)
	}
	if b := s.Dispatch.VectorBytes(s.Hidden); b%16 != 0 {
		return field.Errorf("hidden", "%d %s channels are %d B, not a multiple of 16 B", s.Hidden, s.Dispatch, b)
	}
	if b := s.Hidden * s.Combine.Bytes(); b%16 != 0 {
		return field.Errorf("hidden", "%d %s channels are %d B, not a multiple of 16 B", s.Hidden, s.Combine, b)
	}
	if int64(s.Ranks)*int64(s.Tokens)*int64(s.TopK) > maxSelections {
		return field.Errorf("tokens", "%d ranks × %d tokens × top-%d exceeds %d selections", s.Ranks, s.Tokens, s.TopK, maxSelections)
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
	if !s.Dispatch.Valid() {
		errs = append(errs, field.Errorf("dispatch-dtype", "%s is unset or unknown", s.Dispatch))
	}
	switch {
	case s.Combine == NVFP4:
		// Combine sends expert outputs back to be weighted and summed:
		// DeepEP and TensorRT-LLM send them in bf16 (or fp8 in
		// TensorRT-LLM's low-precision combine), never block-scaled FP4.
		errs = append(errs, field.Errorf("combine-dtype", "nvfp4 is a dispatch type only; combine sends bf16, fp16 or fp32"))
	case !s.Combine.Valid():
		errs = append(errs, field.Errorf("combine-dtype", "%s is unset or unknown", s.Combine))
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

// Nodes is the number of nodes (hosts).
func (s Shape) Nodes() int { return s.Ranks / s.GPUsPerNode }

// NodeOf is the node that hosts rank.
func (s Shape) NodeOf(rank int) int { return rank / s.GPUsPerNode }

// DomainGPUs is the ranks of one NVLink domain: NVLDomain, or a node's,
// and no more than the ranks there are.
func (s Shape) DomainGPUs() int {
	d := s.GPUsPerNode
	if s.NVLDomain > 0 {
		d = s.NVLDomain
	}
	return max(1, min(d, s.Ranks))
}

// Domains is the number of NVLink domains: DeepEP's RDMA ranks, between
// which traffic crosses NICs.
func (s Shape) Domains() int { return s.Ranks / s.DomainGPUs() }

// Hosts is the shape's hosts, and its NVLink domains where they span
// hosts, as headers say it: "18 nodes × 4 GPUs, one NVLink domain".
func (s Shape) Hosts() string {
	out := fmt.Sprintf("%d nodes × %d GPUs", s.Nodes(), s.GPUsPerNode)
	switch d := s.DomainGPUs(); {
	case d <= s.GPUsPerNode:
	case s.Domains() == 1:
		out += ", one NVLink domain"
	default:
		out += fmt.Sprintf(", %d NVLink domains of %d GPUs", s.Domains(), d)
	}
	return out
}

// DomainOf is the NVLink domain of rank.
func (s Shape) DomainOf(rank int) int { return rank / s.DomainGPUs() }

// domainShare suggests an NVLink domain for ranks that do not fill whole
// domains of d GPUs: the ranks split evenly over as many domains as they
// need, rounded up to whole nodes of g, or 0 if no split divides them.
func domainShare(ranks, d, g int) int {
	for n := (ranks + d - 1) / d; n <= ranks/g; n++ {
		if ranks%n == 0 && (ranks/n)%g == 0 && ranks/n <= d {
			return ranks / n
		}
	}
	return 0
}

// Scales is the number of scales per token on the dispatch path:
// ceil(hidden/128) float32s for FP8, hidden/16 e4m3 bytes for NVFP4, 0
// otherwise.
func (s Shape) Scales() int { return s.Dispatch.ScaleCount(s.Hidden) }

// DispatchVectorBytes is one token's hidden vector on the dispatch path
// with its scales: 7,392 B at hidden 7,168 FP8 (7,168 + 56 × 4), 4,032 B
// NVFP4 (3,584 + 448), 14,336 B BF16.
func (s Shape) DispatchVectorBytes() int {
	return s.Dispatch.VectorBytes(s.Hidden) + s.Dispatch.ScaleBytes(s.Hidden)
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
// header + the hidden vector in the dispatch type + its scales
// (ceil(hidden/128) float32s for FP8, hidden/16 e4m3 bytes for NVFP4).
// 7,408 B at hidden 7,168 FP8; 4,048 B NVFP4; 14,352 B BF16.
func (s Shape) LLDispatchBytes() int {
	return LLHeaderBytes + s.DispatchVectorBytes()
}

// LLCombineBytes is the size of one low-latency combine message: the bare
// hidden vector, 14,336 B at hidden 7,168 BF16.
func (s Shape) LLCombineBytes() int { return s.Hidden * s.Combine.Bytes() }

// NormalTokenBytes is the per-token size in normal (high-throughput) mode
// buffers:
//
//	align16(hidden vector + 8 B source meta + scale bytes
//	        + topk×8 B ids + topk×4 B weights)
//
// after DeepEP's get_num_bytes_per_token. Its V1 internode kernels stored
// ids as int (4 B); later versions use topk_idx_t, int64 as at the API,
// which is what this counts. 7,504 B at hidden 7,168 FP8 top-8. NVFP4
// travels as TensorRT-LLM hands it to DeepEP's normal dispatch: the packed
// values as the vector and the e4m3 block scales viewed as float32 scales
// (fused_moe_wide_ep.py), hidden/2 + hidden/16 B: 4,144 B at 7,168 top-8.
func (s Shape) NormalTokenBytes() int {
	n := s.DispatchVectorBytes() + SourceMetaBytes + s.TopK*(TopKIDBytes+TopKWeightBytes)
	return (n + normalAlignment - 1) / normalAlignment * normalAlignment
}
