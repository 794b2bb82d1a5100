package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// P-GB200 is an NVL72 rack: run on it, 72 ranks on hosts of 4 are one
// NVLink domain and send nothing through NICs; 144 ranks are two racks,
// which send through NICs less than hosts of 4 would without the rack.
func TestGB200RackIsOneNVLinkDomain(t *testing.T) {
	t.Parallel()
	scaleOut := func(ranks string, more ...string) (int64, string) {
		args := append([]string{"run", "--profile", "p-gb200", "--ranks", ranks, "--gpus-per-node", "4", "--experts", "288",
			"--tokens", "32", "--hidden", "1024", "--transport", "mini-gda", "--format", "json"}, more...)
		out, stderr, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		var doc struct {
			Header  struct{ Notes []string } `json:"header"`
			Results []struct {
				NVLink   bool `json:"nvlink"`
				Dispatch struct {
					ScaleOut int64 `json:"scaleout_bytes"`
				} `json:"dispatch"`
				Combine struct {
					ScaleOut int64 `json:"scaleout_bytes"`
				} `json:"combine"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		r := doc.Results[0]
		if !r.NVLink {
			t.Errorf("%v: NVLink off; LL uses it where the NVLink domain spans hosts", args)
		}
		return r.Dispatch.ScaleOut + r.Combine.ScaleOut, strings.Join(doc.Header.Notes, "\n")
	}
	if b, h := scaleOut("72"); b != 0 || !strings.Contains(h, "EP72 = 18 nodes × 4 GPUs, one NVLink domain") {
		t.Errorf("one rack: %d B through NICs, want none; header:\n%s", b, h)
	}
	racks, h := scaleOut("144")
	if racks == 0 || !strings.Contains(h, "EP144 = 36 nodes × 4 GPUs, 2 NVLink domains of 72 GPUs") {
		t.Errorf("two racks: %d B through NICs, want some; header:\n%s", racks, h)
	}
	// Under uniform routing 72 of a token's 144 destination ranks are in
	// the other rack; with hosts of 4 as the domain 140 are off its host.
	hosts, _ := scaleOut("144", "--set", "nvlink.domain_gpus=0", "--nvlink")
	if lo, hi := float64(hosts)*0.45, float64(hosts)*0.56; float64(racks) < lo || float64(racks) > hi {
		t.Errorf("two racks send %d B through NICs, hosts of 4 %d: want about 72/140 of it", racks, hosts)
	}
}
