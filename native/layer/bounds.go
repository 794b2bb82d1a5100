package layer

import (
	"fmt"
	"math"
	"strings"
)

// datasheet is what bounds a fitted constant on one GPU: its datasheet's
// rates and the SM's own limits.
type datasheet struct {
	match     string  // a substring of the device's name
	hbmGBs    float64 // HBM bandwidth
	nvlinkGBs float64 // NVLink bandwidth per GPU per direction
	pcieGBs   float64 // PCIe bandwidth per direction
	clockMHz  float64 // the SMs' boost clock
	source    string
}

// datasheets are the GPUs calibrate --layer can fit on, most specific name
// first. H100, H800 and H200 are one die (GH100: its SMs, L1 and L2 alike);
// they differ in memory, NVLink and clock.
var datasheets = []datasheet{
	{"H100 PCIe", 2000, 300, 64, 1755, "H100 PCIe datasheet: HBM2e 2.0 TB/s, NVLink bridge 600 GB/s bidirectional, PCIe Gen5 x16 128 GB/s bidirectional, boost 1755 MHz"},
	{"H200", 4800, 450, 64, 1980, "H200 SXM datasheet: HBM3e 4.8 TB/s, NVLink 4 900 GB/s bidirectional, PCIe Gen5 x16 128 GB/s bidirectional, boost 1980 MHz"},
	{"H800", 3350, 200, 64, 1980, "H800 SXM datasheet: HBM3 3.35 TB/s, NVLink 400 GB/s bidirectional, PCIe Gen5 x16 128 GB/s bidirectional, boost 1980 MHz"},
	{"H100", 3350, 450, 64, 1980, "H100 SXM datasheet: HBM3 3.35 TB/s, NVLink 4 900 GB/s bidirectional, PCIe Gen5 x16 128 GB/s bidirectional, boost 1980 MHz"},
}

// The SM's own limits (GH100), beside the datasheet's.
const (
	// l2HitNs is a dependent load that hits L2: calibrate's gpu.l2_load on
	// an H200 (native/testdata/h200-calibration.json, 185 ns).
	l2HitNs = 185
	// warpRegBytes is the most a warp can have in flight: every one of a
	// thread's 255 registers (4 B) waiting on a load, 32 lanes.
	warpRegBytes = 255 * 4 * 32
	// smBytesPerClock is what one SM's L1 moves per clock (GH100: 128 B).
	smBytesPerClock = 128
	// warpFloorBytes over warpFloorNs is the slowest a streaming warp goes:
	// one 16 B vector per lane in flight per HBM round trip, at most 2 µs
	// however loaded the memory.
	warpFloorBytes, warpFloorNs = 512, 2000
	// wqeBytes is one send-queue WQE line (ctrl, raddr and data segments
	// fit one 64 B line).
	wqeBytes = 64
)

// bound is what physics or a datasheet allows one fitted constant.
type bound struct {
	lo, hi float64
	source string // why: the datasheet rate or the mechanism behind each side
}

// lookupDatasheet finds the GPU named name.
func lookupDatasheet(name string) (datasheet, error) {
	for _, d := range datasheets {
		if strings.Contains(name, d.match) {
			return d, nil
		}
	}
	var known []string
	for _, d := range datasheets {
		known = append(known, d.match)
	}
	return datasheet{}, fmt.Errorf("no datasheet bounds for %q (known: %s): a fit without them can return constants the GPU cannot have",
		name, strings.Join(known, ", "))
}

// bounds are every fitted constant's bounds on the GPU of ds, where the
// fastest measured phase took shortestNs: no cost paid once per event can
// exceed it.
func bounds(ds datasheet, shortestNs float64) map[string]bound {
	warpHi := warpRegBytes / float64(l2HitNs) // B/ns = GB/s
	warpLo := float64(warpFloorBytes) / warpFloorNs
	smHi := smBytesPerClock * ds.clockMHz / 1000
	ceil := math.Ceil(shortestNs)
	phase := fmt.Sprintf("at most the fastest measured phase (%.0f ns)", ceil)
	warpSrc := fmt.Sprintf("one warp: at least %d B in flight per %d ns HBM round trip; at most its registers (%d B) in flight per %d ns L2 hit (gpu.l2_load on H200)",
		warpFloorBytes, warpFloorNs, warpRegBytes, l2HitNs)
	copySrc := fmt.Sprintf("at least one warp's floor; at most half the HBM's %.0f GB/s, a copy reads and writes each byte (%s)", ds.hbmGBs, ds.source)
	l2 := func(what string) bound {
		return bound{l2HitNs, ceil, fmt.Sprintf("at least one dependent L2 round trip (%s: %d ns, gpu.l2_load on H200); %s", what, l2HitNs, phase)}
	}
	onChip := func(what string, cycles float64) bound {
		return bound{cycles * 1000 / ds.clockMHz, ceil, fmt.Sprintf("at least %.0f cycles at %.0f MHz (%s); %s", cycles, ds.clockMHz, what, phase)}
	}
	return map[string]bound{
		// Kernel side.
		"kernel.start_ns":        l2("a block's first load of its arguments"),
		"kernel.cast_ns":         onChip("a 128-value amax: five warp shuffles of 4 cycles", 20),
		"kernel.grid_sync_ns":    l2("the arrival's atomic, then the wait's poll"),
		"kernel.recv_task_ns":    l2("the count a peer wrote"),
		"kernel.recv_token_ns":   onChip("one dependent L1 load of the token's header", 30),
		"kernel.reduce_token_ns": onChip("one dependent L1 load of the token's weights", 30),
		"kernel.recv_gbs":        {warpLo, ds.hbmGBs / 2, copySrc},
		"kernel.reduce_gbs":      {warpLo, ds.hbmGBs, fmt.Sprintf("at least one warp's floor; at most the HBM's %.0f GB/s, each byte counted crosses it once (%s)", ds.hbmGBs, ds.source)},
		"gpu.warp_copy_ns":       l2("a copy's first loads"),
		"gpu.warp_copy_gbs":      {warpLo, warpHi, warpSrc},
		"gpu.copy_gbs":           {warpLo, ds.hbmGBs / 2, copySrc},
		"gpu.peer_copy_ns":       l2("a copy's first loads"),
		"gpu.peer_warp_gbs":      {warpLo, warpHi, warpSrc},
		"gpu.peer_latency_ns":    l2("the receiver's poll of the last store"),
		"gpu.copy_queue_wait":    {0.001, 1, "a share of a copy's wait in the GPU's memory queue: none of it (overlapped) to all of it (after)"},
		// The emulated NIC: warps of its own SMs.
		"emunic.poll_ns":    l2("the NIC warp's poll of the doorbell"),
		"emunic.wqe_ns":     l2("a WQE another SM wrote"),
		"emunic.drain_ns":   l2("the first WQE read"),
		"emunic.copy_ns":    l2("the payload's first loads"),
		"emunic.latency_ns": l2("the destination's poll of the last store"),
		"emunic.atomic_ns":  l2("a device-scope atomic"),
		"emunic.warp_gbs":   {warpLo, warpHi, warpSrc},
		"emunic.sm_gbs":     {warpLo, smHi, fmt.Sprintf("at least one warp's floor; at most one SM's L1: %d B per clock at %.0f MHz", smBytesPerClock, ds.clockMHz)},
		// Host memory, PCIe and the proxy's CPU workers.
		"emunic.host_wqe_ns":   {wqeBytes / ds.pcieGBs, ceil, fmt.Sprintf("at least a %d B WQE at PCIe's %.0f GB/s (%s); %s", wqeBytes, ds.pcieGBs, ds.source, phase)},
		"emunic.host_drain_ns": {wqeBytes / ds.pcieGBs, ceil, fmt.Sprintf("at least a %d B line at PCIe's %.0f GB/s (%s); %s", wqeBytes, ds.pcieGBs, ds.source, phase)},
		"pcie.host_read_mps": {1e3 / warpFloorNs, ds.pcieGBs * 1e3 / wqeBytes, fmt.Sprintf("at least one load in flight per %d ns round trip; at most %d B completions at PCIe's %.0f GB/s (%s)",
			warpFloorNs, wqeBytes, ds.pcieGBs, ds.source)},
		"proxy.desc_flight_ns": {100, ceil, "at least 100 ns: a posted write crosses the GPU's PCIe link and the root complex before a CPU load can see it (a round trip is 1.15 µs, gpu.host_load on H200); " + phase},
		"proxy.post_chain.ns":  {10, ceil, "at least 10 ns: the store fence that drains the doorbell record before the UAR store; " + phase},
		"proxy.post_wr.ns":     {1, ceil, "at least 1 ns: a WQE's 64 B line taken from the NIC's last read is an ownership miss (≥ 20 ns), overlapped over at most 16 line-fill buffers; " + phase},
		// Normal mode's chunks.
		"kernel.nvl_chunk_ns":      l2("the fence before the tail store"),
		"kernel.nvl_recv_chunk_ns": l2("the tail a peer wrote"),
		"kernel.nvl_warp_gbs":      {warpLo, warpHi, warpSrc},
		// NVLink between GPUs.
		"nvlink.gbs":        {warpLo, ds.nvlinkGBs, fmt.Sprintf("at least one warp's floor; at most NVLink's %.0f GB/s per direction (%s)", ds.nvlinkGBs, ds.source)},
		"nvlink.warp_gbs":   {warpLo, min(warpHi, ds.nvlinkGBs), warpSrc + fmt.Sprintf(", and NVLink's %.0f GB/s", ds.nvlinkGBs)},
		"nvlink.latency_ns": l2("the peer's poll"),
		"nvlink.copy_ns":    l2("a copy's first loads"),
	}
}
