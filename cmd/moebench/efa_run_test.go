package main

import (
	"encoding/json"
	"testing"

	"moebench/profile"
)

// Each EFA preset runs DeepSeek-V3's decode at EP32 on P-B200-EFA, names
// what binds it, and takes at least the floor that cause sets, worked out
// from the profile's constants: one proxy worker posts every message of
// its rank in turn (deepep-v1-efa); the link carries every byte
// (uccl-ep-efa); two SRD QPs a device handle a doorbell per message, one
// after another on each (deepep-v2-efa).
func TestEFAPresetsNameTheirBound(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("three layers at EP32; the race detector adds nothing to what the plain run checks")
	}
	p := profile.MustLoad("p-b200-efa")
	const ranks = 32
	host := func(n string) float64 { return p.Get(n+".cycles")*1000/p.Get("proxy.cpu_cold_mhz") + p.Get(n+".ns") }
	perWR := host("proxy.ring_poll") + host("proxy.desc_consume") + host("proxy.post_chain") + host("proxy.post_wr") + 300 // the preset's libfabric cost
	linkBytesPerUs := p.Get("link.gbps") * p.Get("link.efficiency") / 8 * 1000
	for _, tc := range []struct {
		preset, bound string
		floor         func(msgs, bytes float64) float64 // µs, from a rank's messages and bytes
	}{
		{"deepep-v1-efa", "queue", func(msgs, _ float64) float64 { return msgs * perWR / 1000 }},
		{"uccl-ep-efa", "egress", func(_, bytes float64) float64 { return bytes / linkBytesPerUs }},
		{"deepep-v2-efa", "queue", func(msgs, _ float64) float64 { return msgs / 2 * p.Get("nic.doorbell_ns") / 1000 }},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			t.Parallel()
			out, stderr, err := runCLI(t, "run", "--profile", "p-b200-efa", "--ranks", "32", "--preset", tc.preset, "--tokens", "128", "--format", "json")
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var doc struct {
				Results []struct {
					Correct  bool `json:"correct"`
					Dispatch struct {
						Mean     float64            `json:"mean_us"`
						BoundBy  string             `json:"bound_by"`
						Messages float64            `json:"messages"`
						Bytes    float64            `json:"scaleout_bytes"`
						Causes   map[string]float64 `json:"breakdown"`
					}
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			r := doc.Results[0]
			if !r.Correct {
				t.Fatal("the layer's checks failed")
			}
			d := r.Dispatch
			if d.BoundBy != tc.bound {
				t.Errorf("dispatch bound by %q, want %q (breakdown %v)", d.BoundBy, tc.bound, d.Causes)
			}
			if f := tc.floor(d.Messages/ranks, d.Bytes/ranks); d.Mean < f {
				t.Errorf("dispatch %.1f µs, below the %.1f µs that %s alone takes", d.Mean, f, tc.bound)
			}
			if d.Causes["flag_wait"] <= 0 {
				t.Errorf("no flag_wait on the critical path (%v): every count waits for its data's completion", d.Causes)
			}
		})
	}
}
