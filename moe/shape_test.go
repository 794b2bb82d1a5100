package moe_test

import (
	"strings"
	"testing"

	"moebench/moe"
)

// v3 is DeepSeek-V3 on EP16 with DeepEP's defaults.
func v3() moe.Shape {
	return moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
}

func TestDType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		want  moe.DType
		bytes int
	}{
		{"fp8", moe.FP8, 1},
		{"bf16", moe.BF16, 2},
		{"fp16", moe.FP16, 2},
		{"fp32", moe.FP32, 4},
		{" BF16 ", moe.BF16, 2},
		// Half a byte an element: no whole-byte size (VectorBytes has it).
		{"NVFP4", moe.NVFP4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := moe.ParseDType(tt.in)
			if err != nil {
				t.Fatalf("ParseDType(%q): %v", tt.in, err)
			}
			if got != tt.want || got.Bytes() != tt.bytes {
				t.Errorf("ParseDType(%q) = %v (%d B), want %v (%d B)", tt.in, got, got.Bytes(), tt.want, tt.bytes)
			}
			if back, err := moe.ParseDType(got.String()); err != nil || back != got {
				t.Errorf("ParseDType(%q) = %v, %v; want %v", got.String(), back, err, got)
			}
		})
	}
	for _, bad := range []string{"", "fp4", "mxfp4", "int8", "e4m3"} {
		if _, err := moe.ParseDType(bad); err == nil || !strings.Contains(err.Error(), "dtype") {
			t.Errorf("ParseDType(%q) error = %v, want one naming the dtype", bad, err)
		}
	}
	if b := moe.DType(0).Bytes(); b != 0 || moe.DType(0).Valid() {
		t.Errorf("zero DType has %d bytes (valid %v), want 0 and invalid", b, moe.DType(0).Valid())
	}
	if moe.DType(6).Valid() {
		t.Error("DType(6) is valid, want one past the last invalid")
	}
}

func FuzzParseDType(f *testing.F) {
	for _, s := range []string{"fp8", "bf16", "fp16", "fp32", "nvfp4", "FP8", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := moe.ParseDType(s)
		if err != nil {
			return
		}
		if !d.Valid() || d.VectorBytes(16) == 0 {
			t.Fatalf("ParseDType(%q) = %v with no size", s, d)
		}
		if back, err := moe.ParseDType(d.String()); err != nil || back != d {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}

func TestMessageBytes(t *testing.T) {
	t.Parallel()
	gptOSS := moe.Shape{Experts: 128, TopK: 4, Hidden: 2880, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	bf16 := v3()
	bf16.Dispatch = moe.BF16
	fp32 := v3()
	fp32.Combine = moe.FP32
	tests := []struct {
		name                              string
		s                                 moe.Shape
		scales, dispatch, combine, normal int
	}{
		// DeepEP's figures for hidden 7,168: 7,408 B FP8, 14,352 B BF16,
		// 14,336 B combine.
		{"v3-fp8", v3(), 56, 7408, 14336, 7504},
		{"v3-bf16", bf16, 0, 14352, 14336, 14448},
		{"v3-fp32-combine", fp32, 56, 7408, 28672, 7504},
		// ceil(2880/128) = 23 scales; 2880+8+92+48 = 3028 → 3040.
		{"gpt-oss", gptOSS, 23, 2988, 5760, 3040},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.s.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tt.s.Scales(); got != tt.scales {
				t.Errorf("Scales = %d, want %d", got, tt.scales)
			}
			if got := tt.s.LLDispatchBytes(); got != tt.dispatch {
				t.Errorf("LLDispatchBytes = %d, want %d", got, tt.dispatch)
			}
			if got := tt.s.LLCombineBytes(); got != tt.combine {
				t.Errorf("LLCombineBytes = %d, want %d", got, tt.combine)
			}
			if got := tt.s.NormalTokenBytes(); got != tt.normal || got%16 != 0 {
				t.Errorf("NormalTokenBytes = %d, want %d", got, tt.normal)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	with := func(f func(*moe.Shape)) moe.Shape {
		s := v3()
		f(&s)
		return s
	}
	tests := []struct {
		name string
		s    moe.Shape
		want string // "" for valid; otherwise a substring naming the field
	}{
		{"v3", v3(), ""},
		{"redundant", with(func(s *moe.Shape) { s.PhysicalExperts = 288 }), ""},
		{"one-node-single-gpu", with(func(s *moe.Shape) { s.Ranks, s.GPUsPerNode = 1, 1 }), ""},
		{"no-experts", with(func(s *moe.Shape) { s.Experts = 0 }), "experts: 0"},
		{"negative-physical", with(func(s *moe.Shape) { s.PhysicalExperts = -1 }), "experts: -1 is negative"},
		{"physical-below-logical", with(func(s *moe.Shape) { s.PhysicalExperts = 128 }), "experts: 128 is fewer"},
		{"uneven-physical", with(func(s *moe.Shape) { s.PhysicalExperts = 280 }), "280 physical experts cannot be placed evenly on 16 ranks"},
		{"topk-zero", with(func(s *moe.Shape) { s.TopK = 0 }), "topk: 0"},
		{"topk-above-experts", with(func(s *moe.Shape) { s.TopK = 300 }), "topk: 300 exceeds"},
		{"tokens-zero", with(func(s *moe.Shape) { s.Tokens = 0 }), "tokens: 0"},
		{"tokens-negative", with(func(s *moe.Shape) { s.Tokens = -4 }), "tokens: -4"},
		{"ranks-zero", with(func(s *moe.Shape) { s.Ranks = 0 }), "ranks: 0"},
		{"gpus-zero", with(func(s *moe.Shape) { s.GPUsPerNode = 0 }), "gpus-per-node"},
		{"partial-node", with(func(s *moe.Shape) { s.Ranks = 12 }), "ranks: 12 ranks do not fill whole nodes of 8"},
		{"part-of-a-node", with(func(s *moe.Shape) { s.Ranks, s.Experts = 1, 8 }), "ranks: 1 rank, fewer than one node of 8 GPUs"},
		{"hidden-zero", with(func(s *moe.Shape) { s.Hidden = 0 }), "hidden: 0"},
		{"hidden-unaligned-fp8", with(func(s *moe.Shape) { s.Hidden = 7000 + 4 }), "hidden: 7004 fp8"},
		{"hidden-unaligned-bf16", with(func(s *moe.Shape) { s.Hidden, s.Dispatch = 7172, moe.BF16 }), "hidden: 7172 bf16"},
		{"no-dispatch-dtype", with(func(s *moe.Shape) { s.Dispatch = 0 }), "dispatch-dtype"},
		{"no-combine-dtype", with(func(s *moe.Shape) { s.Combine = 9 }), "combine-dtype"},
		{"nvfp4", with(func(s *moe.Shape) { s.Dispatch = moe.NVFP4 }), ""},
		{"nvfp4-4096", with(func(s *moe.Shape) { s.Dispatch, s.Hidden = moe.NVFP4, 4096 }), ""},
		{"nvfp4-combine", with(func(s *moe.Shape) { s.Combine = moe.NVFP4 }), "combine-dtype: nvfp4 is a dispatch type only"},
		// 2,880 fills whole 16 B of values (1,440 B) but not of scales
		// (180 B); 7,168+16 fills neither the scales nor the message.
		{"nvfp4-gpt-oss", with(func(s *moe.Shape) { s.Dispatch, s.Hidden = moe.NVFP4, 2880 }), "hidden: 2880 nvfp4 channels, want a multiple of 256"},
		{"nvfp4-unaligned", with(func(s *moe.Shape) { s.Dispatch, s.Hidden = moe.NVFP4, 7184 }), "hidden: 7184 nvfp4"},
		{"nvfp4-odd", with(func(s *moe.Shape) { s.Dispatch, s.Hidden = moe.NVFP4, 7 }), "hidden: 7 nvfp4"},
		{"too-large", with(func(s *moe.Shape) { s.Tokens = 1 << 27 }), "tokens: 16 ranks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.s.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestDispatchTokenBytes holds each dispatch type's per-token bytes to the
// formats' arithmetic: FP8 one byte a channel and a float32 per 128
// channels; BF16 two bytes a channel; NVFP4 half a byte a channel and one
// e4m3 byte per 16 channels (its float32 global scale is per tensor, not
// per token). LL adds the 16 B header; normal mode adds 8 B source meta
// and top-8 × (8 B id + 4 B weight) = 96 B, rounded up to 16 B.
func TestDispatchTokenBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		d              moe.DType
		hidden         int
		scales, vector int
		ll, normal     int
	}{
		{"fp8-7168", moe.FP8, 7168, 56, 7168 + 56*4, 16 + 7392, 7504},     // 7392+104 = 7496 → 7504
		{"bf16-7168", moe.BF16, 7168, 0, 7168 * 2, 16 + 14336, 14448},     // 14336+104 = 14440 → 14448
		{"nvfp4-7168", moe.NVFP4, 7168, 448, 3584 + 448, 16 + 4032, 4144}, // 4032+104 = 4136 → 4144
		{"fp8-4096", moe.FP8, 4096, 32, 4096 + 32*4, 16 + 4224, 4336},     // 4224+104 = 4328 → 4336
		{"bf16-4096", moe.BF16, 4096, 0, 4096 * 2, 16 + 8192, 8304},       // 8192+104 = 8296 → 8304
		{"nvfp4-4096", moe.NVFP4, 4096, 256, 2048 + 256, 16 + 2304, 2416}, // 2304+104 = 2408 → 2416
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := v3()
			s.Dispatch, s.Hidden = tt.d, tt.hidden
			if err := s.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := [4]int{s.Scales(), s.DispatchVectorBytes(), s.LLDispatchBytes(), s.NormalTokenBytes()}
			want := [4]int{tt.scales, tt.vector, tt.ll, tt.normal}
			if got != want {
				t.Errorf("scales, vector, LL message, normal token = %v, want %v", got, want)
			}
			if s.LLDispatchBytes()%16 != 0 {
				t.Errorf("LL message of %d B is not whole 16 B units", s.LLDispatchBytes())
			}
		})
	}
}
