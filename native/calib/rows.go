package calib

import (
	"moebench/microbench"
	"moebench/native"
)

// InlineSizes is the payload sweep of Fig. 3.
var InlineSizes = []int{8, 16, 28, 32, 60, 92, 124, 220}

// RateRow is one posting-rate configuration with the paper's P-IB figure
// (Table 5; 0 where the paper has none).
type RateRow struct {
	Config native.RateConfig
	Paper  float64
}

// RateRows are the posting rates Measure times, in order: Table 5's
// configurations, then key ones with the doorbell in device memory.
func RateRows(quick bool) []RateRow {
	var rows []RateRow
	for _, t := range microbench.Table5() {
		rows = append(rows, RateRow{native.RateConfig{Threads: t.Threads, QPs: t.QPs, Blocks: t.SMs, PerDoorbell: t.PerDoorbell,
			Style: t.Style.String(), InlineBytes: 8}, t.Mps})
	}
	if quick {
		rows = []RateRow{rows[0], rows[5], rows[11]}
	}
	// The same key configurations with the doorbell in device memory.
	for _, i := range []int{0, 2, 6, 11} {
		if i >= len(rows) {
			continue
		}
		d := rows[i]
		d.Config.Target = native.DeviceMemory
		d.Paper = 0
		rows = append(rows, d)
	}
	return rows
}

func capacityRows(quick bool) []native.CapacityConfig {
	if quick {
		return []native.CapacityConfig{{Workers: 1, Batch: 1}, {Workers: 1, Batch: 16}}
	}
	var rows []native.CapacityConfig
	for _, w := range []int{1, 2, 4, 8} {
		for _, b := range []int{1, 4, 16} {
			rows = append(rows, native.CapacityConfig{Workers: w, Batch: b})
		}
	}
	return rows
}

func kernelRows(quick bool) []native.KernelConfig {
	var rows []native.KernelConfig
	for _, caller := range native.Callers {
		rows = append(rows,
			native.KernelConfig{Caller: caller, Path: "absent"},
			native.KernelConfig{Caller: caller, Path: "gda"},
			native.KernelConfig{Caller: caller, Path: "gda", MsgsPerBlock: 4},
			native.KernelConfig{Caller: caller, Path: "gda", MsgsPerBlock: 16},
			native.KernelConfig{Caller: caller, Path: "proxy"},
			native.KernelConfig{Caller: caller, Path: "proxy", MsgsPerBlock: 4},
			native.KernelConfig{Caller: caller, Path: "proxy", MsgsPerBlock: 16},
			native.KernelConfig{Caller: caller, Path: "proxy", MsgsPerBlock: 4, Wait: true},
			native.KernelConfig{Caller: caller, Path: "proxy", MsgsPerBlock: 16, Wait: true},
		)
	}
	// Eight blocks per SM, where residency decides (the paper's 27%).
	for _, p := range native.Paths {
		rows = append(rows, native.KernelConfig{Caller: "stream", Path: p, Blocks: 1056})
	}
	if quick {
		rows = []native.KernelConfig{rows[0], rows[1], rows[7], rows[9], rows[10]}
	}
	for i := range rows {
		if quick {
			rows[i].Reps = 3
		}
	}
	return rows
}
