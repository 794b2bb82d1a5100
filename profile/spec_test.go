package profile_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"moebench/profile"
)

// fileValues reads a built-in profile's values straight from its JSON
// parts, apart from the loader.
func fileValues(t *testing.T, name string) map[string]float64 {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join("data", name, "*.json"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("profile %s: no parts (%v)", name, err)
	}
	vals := map[string]float64{}
	for _, part := range parts {
		data, err := os.ReadFile(part)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Base      string
			Constants []struct {
				Name  string
				Value float64
			}
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("%s: %v", part, err)
		}
		if f.Base != "" {
			t.Fatalf("%s names base %s: the test wants a profile of its own values", part, f.Base)
		}
		for _, c := range f.Constants {
			vals[c.Name] = c.Value
		}
	}
	return vals
}

// TestSpecsOfPIB checks each spec's fields against p-ib's files: the name
// each field resolves and the unit it is converted to.
func TestSpecsOfPIB(t *testing.T) {
	t.Parallel()
	file := fileValues(t, "p-ib")
	p := profile.MustLoad("p-ib")
	gpu, nic, nv, rec, comp := p.GPU(), p.NIC(), p.NVLink(), p.Recovery(), p.Compute()
	for _, tc := range []struct {
		spec, name string
		got        float64
		scale      float64 // the file's unit to the spec's
	}{
		{"gpu", "gpu.sm_clock_mhz", gpu.ClockMHz, 1},
		{"gpu", "gpu.sms", float64(gpu.SMs), 1},
		{"gpu", "gpu.poll_gap_ns", gpu.PollGapNs, 1},
		{"gpu", "gpu.atomic.cycles", gpu.Atomic.Cycles, 1},
		{"gpu", "gpu.atomic.ns", gpu.Atomic.Ns, 1},
		{"gpu", "gpu.quiet_qp.cycles", gpu.QuietQP.Cycles, 1},
		{"nic", "pcie.dma_read_ns", nic.DMAReadNs, 1},
		{"nic", "pcie.gbps", nic.PCIeBytesPerNs, 1},
		{"nic", "nic.doorbell_ns", nic.DoorbellNs, 1},
		{"nic", "link.mtu_b", float64(nic.MTU), 1},
		{"nic", "fabric.port_buffer_kb", nic.PortBufferBytes, 1.0 / 1024},
		{"nic", "conn.entries", float64(nic.ConnEntries), 1},
		{"nic", "dc.switch_ns", nic.DCSwitchNs, 1},
		{"nic", "emunic.warp_gbs", nic.Emu.WarpBytesPerNs, 1},
		{"nic", "topo.planes_per_nic", nic.Topo.PlanesPerNIC, 1},
		{"nic", "topo.hop_latency_ns", nic.Topo.HopNs, 1},
		{"nvlink", "nvlink.gbs", nv.PortBytesPerNs, 1},
		{"nvlink", "nvlink.latency_ns", nv.LatencyNs, 1},
		{"nvlink", "gpu.peer_warp_gbs", nv.PeerWarpBytesPerNs, 1},
		{"recovery", "nic.retry_cnt", float64(rec.RetryCnt), 1},
		{"recovery", "nic.ack_timeout", float64(rec.AckTimeoutExp), 1},
		{"recovery", "efa.rto_us", rec.RTONs, 1e-3},
		{"recovery", "efa.unresponsive_ms", rec.GiveUpNs, 1e-6},
		{"compute", "gpu.fp8_tflops", comp.FP8.FLOPsPerSec, 1e-12},
		{"compute", "gpu.hbm_gbs", comp.HBMBytesPerSec, 1e-9},
		{"compute", "gemm.bf16.tile_n", float64(comp.BF16.TileN), 1},
		{"compute", "gemm.fp8.launch_us", comp.FP8.LaunchNs, 1e-3},
		{"compute", "gemm.comm_beside", comp.CommBeside, 1},
	} {
		want, ok := file[tc.name]
		if !ok {
			t.Errorf("%s: p-ib's files lack %s", tc.spec, tc.name)
			continue
		}
		if got := tc.got * tc.scale; math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Errorf("%s spec: %s = %v, p-ib's file says %v", tc.spec, tc.name, got, want)
		}
	}
	// Derived fields, against the file's values by hand.
	if want := 1000 / file["nic.msg_rate_mps"]; nic.MsgNs != want {
		t.Errorf("nic spec: MsgNs = %v, want %v", nic.MsgNs, want)
	}
	if want := file["link.gbps"] * file["link.efficiency"] / 8; nic.LinkBytesPerNs != want {
		t.Errorf("nic spec: LinkBytesPerNs = %v, want %v", nic.LinkBytesPerNs, want)
	}
	if want := file["topo.adaptive"] >= 0.5; nic.Topo.Adaptive != want {
		t.Errorf("nic spec: Adaptive = %v, want %v", nic.Topo.Adaptive, want)
	}
}

// TestSpecsRecordReads checks that resolving a spec counts as reading its
// constants, and only its own, so a --set of a name no model builds is
// still told apart.
func TestSpecsRecordReads(t *testing.T) {
	t.Parallel()
	names := []string{"nic.doorbell_ns", "topo.adaptive", "gpu.atomic.cycles", "nvlink.gbs", "efa.rto_us", "gemm.fp8.eff"}
	for _, tc := range []struct {
		spec    string
		resolve func(*profile.Profile)
		read    []string
	}{
		{"none", func(*profile.Profile) {}, nil},
		{"gpu", func(p *profile.Profile) { p.GPU() }, []string{"gpu.atomic.cycles"}},
		{"nic", func(p *profile.Profile) { p.NIC() }, []string{"nic.doorbell_ns", "topo.adaptive"}},
		{"nvlink", func(p *profile.Profile) { p.NVLink() }, []string{"nvlink.gbs"}},
		{"recovery", func(p *profile.Profile) { p.Recovery() }, []string{"efa.rto_us"}},
		{"compute", func(p *profile.Profile) { p.Compute() }, []string{"gemm.fp8.eff"}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			p, err := profile.Load("p-ib")
			if err != nil {
				t.Fatal(err)
			}
			tc.resolve(p)
			var want []string
			for _, n := range names {
				if !slices.Contains(tc.read, n) {
					want = append(want, n)
				}
			}
			if got := p.Unread(names); !slices.Equal(got, want) {
				t.Errorf("unread after %s: %v, want %v", tc.spec, got, want)
			}
		})
	}
}
