package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// nicsRun runs EP16's LL layer (2 nodes × 8 GPUs, NVLink off, mini-gda,
// DeepSeek-V3's 128 tokens a rank, top-8 of 256 experts) at hidden with
// sets, and returns its dispatch's mean time over ranks (µs) and the
// resources it reports.
func nicsRun(t *testing.T, hidden string, sets ...string) (float64, map[string]float64) {
	t.Helper()
	args := []string{"--transport", "mini-gda", "--ranks", "16", "--gpus-per-node", "8", "--hidden", hidden, "--no-payload-check", "--format", "json"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, _, err := layerCLI(t, runCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			Dispatch struct {
				MeanUs float64 `json:"mean_us"`
			} `json:"dispatch"`
			Resources map[string]float64 `json:"resources"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
		t.Fatalf("%v, %d results:\n%s", err, len(doc.Results), out)
	}
	return doc.Results[0].Dispatch.MeanUs, doc.Results[0].Resources
}

// A NIC-bound LL dispatch moves in the time splitting its traffic implies.
// Each rank sends about 128 tokens × 8 experts × 15/16 remote = 960
// messages of 7,408 B (FP8 at hidden 7,168, two 4 KiB packets of 42 B
// headers), and 240 expert counts of 8 B: 960 × 7,492 B + 240 × 50 B at
// P-IB's 24.8 GB/s is W = 290.5 µs on the wire. n NICs of a GPU each take
// a link of the whole rate, so the wire part is W/n while the fixed part
// (kernel start, casts, latencies) does not split: one NIC takes 3W/4
// longer than four, two W/4 longer. The tolerance, 6%, covers routing's
// draw (ranks send a few per cent more or less than the mean) and the
// stripes: a QP per destination local expert on link (expert mod 4)
// carries as many tokens as routing sends that expert. Two planes of one
// NIC at the same link.gbps each run at half the rate: the wire part
// stays W, give or take that spread over the planes.
func TestSeveralNICsSplitTheWire(t *testing.T) {
	t.Parallel()
	const w = (960*(7408+2*42) + 240*(8+42)) / 24.8 / 1000
	one, r1 := nicsRun(t, "7168")
	two, _ := nicsRun(t, "7168", "topo.nics_per_gpu=2")
	four, r4 := nicsRun(t, "7168", "topo.nics_per_gpu=4")
	planes, _ := nicsRun(t, "7168", "topo.planes_per_nic=2")
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"one NIC less four", one - four, 3 * w / 4},
		{"two NICs less four", two - four, w / 4},
		{"two planes less one", planes - one, 0},
	} {
		if math.Abs(c.got-c.want) > 0.06*w {
			t.Errorf("%s: %.1f µs, want %.1f ± %.1f (W = %.1f µs on the wire; dispatch %.1f, %.1f, %.1f µs on 1, 2, 4 NICs, %.1f on 2 planes)",
				c.what, c.got, c.want, 0.06*w, w, one, two, four, planes)
		}
	}
	// QPs per NIC: 16 peers × 16 local experts a rank, over four NICs.
	if r1["qps_per_nic"] != 256 || r4["qps_per_nic"] != 64 {
		t.Errorf("QPs per NIC %v on one NIC and %v on four, want 256 and 64", r1["qps_per_nic"], r4["qps_per_nic"])
	}
}

// A message-rate-bound dispatch: at 5 M messages/s (nic.msg_rate_mps)
// each of a rank's 1,200 messages (960 tokens, 240 counts) takes 200 ns
// of its NIC's pipeline, 240 µs in all, far beyond their wire time at
// hidden 1,024. Four NICs have a pipeline each and save three quarters of
// it, 180 µs; two planes share their NIC's and save nothing. Tolerance 5%
// of the pipeline time: routing's draw, and the fixed part, which does
// not split.
func TestNICsHaveAPipelineEach(t *testing.T) {
	t.Parallel()
	const pipe = 1200 * 0.2
	rate := "nic.msg_rate_mps=5"
	one, _ := nicsRun(t, "1024", rate)
	four, _ := nicsRun(t, "1024", rate, "topo.nics_per_gpu=4")
	planes, _ := nicsRun(t, "1024", rate, "topo.planes_per_nic=2")
	if d := one - four; math.Abs(d-0.75*pipe) > 0.05*pipe {
		t.Errorf("four NICs save %.1f µs of one's %.1f, want %.1f ± %.1f", d, one, 0.75*pipe, 0.05*pipe)
	}
	if d := planes - one; math.Abs(d) > 0.05*pipe {
		t.Errorf("two planes take %.1f µs more than one, want their shared pipeline's same time ± %.1f", d, 0.05*pipe)
	}
}

// A GPU cannot both share a NIC and have several: the run says which
// constants clash.
func TestSharedAndSeveralNICsRefused(t *testing.T) {
	t.Parallel()
	_, _, err := layerCLI(t, runCmd, append([]string{"--transport", "mini-gda", "--set", "topo.gpus_per_nic=2", "--set", "topo.nics_per_gpu=2"}, small...)...)
	if err == nil || !strings.Contains(err.Error(), "topo.gpus_per_nic") || !strings.Contains(err.Error(), "topo.nics_per_gpu") {
		t.Errorf("error %v, want one naming topo.gpus_per_nic and topo.nics_per_gpu", err)
	}
}
