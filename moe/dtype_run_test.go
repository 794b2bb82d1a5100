package moe_test

import (
	"testing"

	"moebench/moe"
	"moebench/transport/preset"
)

// TestNVFP4DispatchMovesItsBytes runs one LL layer of DeepSeek-V3's hidden
// size across two nodes, NVLink off so that every message to another rank
// crosses a NIC, once with FP8 and once with NVFP4 dispatch on the same
// routing. The NIC-bound dispatch moves 16 + 3,584 + 448 = 4,048 B a
// message where FP8 moved 16 + 7,168 + 56 × 4 = 7,408 B, each counted
// from the routing here; the control atomics are the same 8 B in both. Its
// time shrinks by about the same ratio.
func TestNVFP4DispatchMovesItsBytes(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 64, 64, 7168)
	s.TopK = 8
	fp4 := s
	fp4.Dispatch = moe.NVFP4
	fp8Res := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	fp4Res := runLayer(t, fp4, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	// Messages to other ranks, from the routing (layerConfig's seed 7).
	r, err := moe.Generate(s, moe.RoutingSpec{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	var remote int64
	for src, row := range r.Idx {
		for _, e := range row {
			if e >= 0 && int(e)/s.LocalExperts() != src {
				remote++
			}
		}
	}
	const fp8Msg, fp4Msg = 16 + 7168 + 56*4, 16 + 3584 + 448
	ctl8 := fp8Res.Dispatch.ScaleOutBytes - remote*fp8Msg
	ctl4 := fp4Res.Dispatch.ScaleOutBytes - remote*fp4Msg
	t.Logf("%d remote messages; scale-out bytes fp8 %d, nvfp4 %d (control %d, %d); dispatch µs fp8 %.2f (%s), nvfp4 %.2f (%s)",
		remote, fp8Res.Dispatch.ScaleOutBytes, fp4Res.Dispatch.ScaleOutBytes, ctl8, ctl4,
		fp8Res.Dispatch.Time.Max, fp8Res.Dispatch.BoundBy, fp4Res.Dispatch.Time.Max, fp4Res.Dispatch.BoundBy)
	if ctl8 != ctl4 || ctl8 < 0 || ctl8 > remote*8 {
		t.Errorf("beyond the messages, fp8 moved %d B and nvfp4 %d B: want the same few control bytes", ctl8, ctl4)
	}
	if !fp8Res.Correct || !fp4Res.Correct {
		t.Fatalf("checks failed: fp8 %v, nvfp4 %v", fp8Res.Problems, fp4Res.Problems)
	}
	for _, res := range []*moe.Result{fp8Res, fp4Res} {
		if b := res.Dispatch.BoundBy; b != "egress" && b != "nic" && b != "wire" {
			t.Fatalf("%s dispatch bound by %s, want the NIC or its link (the case is for a bandwidth-bound dispatch)", res.Shape.Dispatch, b)
		}
	}
	t8, t4 := fp8Res.Dispatch.Time.Max, fp4Res.Dispatch.Time.Max
	// Launch, cast and the last message's latency do not shrink with the
	// bytes: the time ratio sits a little above the byte ratio.
	if ratio := float64(fp4Msg) / fp8Msg; t4 < 0.95*ratio*t8 || t4 > 1.1*ratio*t8 {
		t.Errorf("nvfp4 dispatch %.2f µs against fp8 %.2f µs: want about the byte ratio %.3f of it (%.2f µs), a little above", t4, t8, ratio, ratio*t8)
	}
}

// TestNVFP4FitsDeepEPsLLBuffer: DeepEP sizes its LL buffer for whichever
// of BF16 and FP8 messages is larger, whatever the dispatch type, and an
// NVFP4 message (16 + 3,584 + 448 = 4,048 B) fits those 14,352 B slots:
// the buffer stays 2 × (send + recv + signal) at hidden 7,168, as for FP8.
func TestNVFP4FitsDeepEPsLLBuffer(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.NVFP4, Combine: moe.BF16}
	send := int64(256 * 128 * 14336)
	recv := int64(256 * 128 * 14352)
	if got, want := moe.LLBufferBytes(s), 2*(send+recv+256*4); got != want {
		t.Errorf("LLBufferBytes = %d, want %d", got, want)
	}
	if m := s.LLDispatchBytes(); m != 4048 || m > 16+7168*2 {
		t.Errorf("NVFP4 message %d B, want 4,048 within a 14,352 B slot", m)
	}
}
