package main

import (
	"os"

	"moebench/internal/report"
	nativelayer "moebench/native/layer"
	"moebench/results"
	"moebench/sweep"
)

// ncclLibEnv names NCCL's library when --nccl-lib is not given.
const ncclLibEnv = "MOEBENCH_NCCL_LIB"

// ncclItem is NCCL's all-to-all beside one configuration's native runs.
type ncclItem struct {
	cfg   sweep.Point
	knobs []results.Knob
	st    *nativelayer.A2AStats
}

func ncclLib(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(ncclLibEnv)
}

// nativeDoc is the document of the native engine's runs and NCCL's
// baseline beside them.
func nativeDoc(h report.Header, workload string, items []nativeItem, nccl []ncclItem) *results.Native {
	d := &results.Native{Header: h, Workload: workload}
	for _, it := range items {
		d.Items = append(d.Items, results.NativeItem{Mode: it.cfg.Mode, Shape: it.cfg.Shape, QPsPerPeer: it.cfg.Knobs.Int("qps-per-peer"),
			Background: it.cfg.BackgroundName, Sets: it.cfg.Sets, Swept: it.knobs, Path: it.tr, M: it.m, Model: it.model, Err: it.err})
	}
	for _, n := range nccl {
		d.NCCL = append(d.NCCL, results.NCCLItem{Mode: n.cfg.Mode, Shape: n.cfg.Shape, GPUs: n.cfg.GPUs, Swept: n.knobs, Stats: n.st})
	}
	return d
}
