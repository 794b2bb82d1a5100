package main

import (
	"os"

	"moebench/internal/report"
	nativelayer "moebench/native/layer"
	"moebench/results"
)

// ncclLibEnv names NCCL's library when --nccl-lib is not given.
const ncclLibEnv = "MOEBENCH_NCCL_LIB"

// ncclItem is NCCL's all-to-all beside one configuration's native runs.
type ncclItem struct {
	cfg   config
	knobs []knob
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
		d.Items = append(d.Items, results.NativeItem{Mode: it.cfg.mode, Shape: it.cfg.shape, QPsPerPeer: it.cfg.knobs.Int("qps-per-peer"),
			Background: it.cfg.bgName, Sets: it.cfg.sets, Swept: sweptOf(it.knobs), Path: it.tr, M: it.m, Model: it.model, Err: it.err})
	}
	for _, n := range nccl {
		d.NCCL = append(d.NCCL, results.NCCLItem{Mode: n.cfg.mode, Shape: n.cfg.shape, GPUs: n.cfg.gpus, Swept: sweptOf(n.knobs), Stats: n.st})
	}
	return d
}

// sweptOf is the swept knobs for a document.
func sweptOf(knobs []knob) []results.Knob {
	var s []results.Knob
	for _, k := range knobs {
		s = append(s, results.Knob{Name: k.name, Value: k.value})
	}
	return s
}
