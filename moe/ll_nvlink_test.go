package moe_test

import (
	"testing"

	"moebench/moe"
	"moebench/transport/preset"
)

// LL combine stages a token in the send buffer only for the NIC: a peer
// over NVLink gets the expert's output straight from the warp's one copy.
// A GPU whose copies crawl therefore slows combine's sending far less with
// NVLink (only the rank's own tokens are copied on it) than through the
// NIC (every token is staged).
func TestLLCombineOverNVLinkStagesNothing(t *testing.T) {
	t.Parallel()
	s := layerShape(8, 8, 64, 32, 1024)
	issue := func(nvlink bool, copyGBs string) float64 {
		cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, nvlink)
		if err := cfg.Profile.Set("gpu.copy_gbs", copyGBs); err != nil {
			t.Fatal(err)
		}
		res, err := moe.RunLayer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res.Combine.IssueDone.Mean
	}
	on := issue(true, "1") - issue(true, "2400")
	off := issue(false, "1") - issue(false, "2400")
	t.Logf("copies at 1 GB/s add %.1f µs to combine's sending over NVLink, %.1f µs through the NIC", on, off)
	if on <= 0 || 3*on > off {
		t.Fatalf("copies at 1 GB/s add %.1f µs over NVLink and %.1f µs through the NIC: want NVLink's share, its own tokens, well under the NIC's", on, off)
	}
}
