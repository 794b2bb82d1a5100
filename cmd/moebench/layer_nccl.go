package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"moebench/internal/report"
	"moebench/native"
	nativelayer "moebench/native/layer"
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

// directOf is the direct path's measurement of the configuration, if run.
func directOf(items []nativeItem, c config) *nativelayer.Measurement {
	for _, it := range items {
		if it.tr.Direct && it.cfg.shape == c.shape {
			return it.m
		}
	}
	return nil
}

// renderNCCL is the table of NCCL's all-to-all at each configuration's
// per-peer bytes, with the direct path's time over it where it ran.
func renderNCCL(w io.Writer, items []nativeItem, nccl []ncclItem) error {
	if len(nccl) == 0 {
		return nil
	}
	st := nccl[0].st
	if _, err := fmt.Fprintf(w, "\nNCCL all-to-all at the same per-peer bytes (NCCL %s, %s; one rank per GPU; per all-to-all, the slowest GPU's time):\n\n",
		ncclVersion(st.Dispatch.Version), st.Dispatch.Lib); err != nil {
		return err
	}
	var kc []string
	for _, k := range nccl[0].knobs {
		kc = append(kc, k.name)
	}
	t := &report.Table{Columns: append(kc, "phase", "NCCL µs", "min µs", "max µs", "algo GB/s", "direct µs", "direct / NCCL")}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, false, true, true, true, true, true, true)
	for _, n := range nccl {
		var vals []string
		for _, k := range n.knobs {
			vals = append(vals, k.value)
		}
		d := directOf(items, n.cfg)
		for _, ph := range []struct {
			name string
			r    native.A2AResult
			gbps float64
		}{{"dispatch", n.st.Dispatch, n.st.DispatchGBps}, {"combine", n.st.Combine, n.st.CombineGBps}} {
			dir, rat := "—", "—"
			if d != nil {
				us := d.Dispatch.Ready.Mean
				if ph.name == "combine" {
					us = d.Combine.Ready.Mean
				}
				dir, rat = report.Num(us), strconv.FormatFloat(ratio(us, ph.r.MeanUs), 'f', 2, 64)
			}
			t.Rows = append(t.Rows, append(append([]string(nil), vals...), ph.name, report.Num(ph.r.MeanUs), report.Num(ph.r.MinUs),
				report.Num(ph.r.MaxUs), report.Num(ph.gbps), dir, rat))
		}
	}
	return t.WriteText(w, nil)
}

// ncclVersion turns ncclGetVersion's 22803 into 2.28.3.
func ncclVersion(v int) string {
	if v < 10000 {
		return strconv.Itoa(v)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// ncclJSON is one configuration's NCCL baseline in JSON.
type ncclJSON struct {
	Ranks  int                   `json:"ranks"`
	GPUs   int                   `json:"gpus"`
	Tokens int                   `json:"tokens"`
	Mode   string                `json:"mode"`
	NCCL   *nativelayer.A2AStats `json:"nccl"`
}

func ncclJSONOf(nccl []ncclItem) []ncclJSON {
	var out []ncclJSON
	for _, n := range nccl {
		out = append(out, ncclJSON{Ranks: n.cfg.shape.Ranks, GPUs: n.cfg.gpus, Tokens: n.cfg.shape.Tokens, Mode: n.cfg.mode.String(), NCCL: n.st})
	}
	return out
}

// ncclCSV adds the baseline's rows to the native CSV: engine nccl, the
// all-to-all's times in the measured columns.
func ncclCSV(t *report.Table, nccl []ncclItem) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	col := make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		col[c] = i
	}
	for _, n := range nccl {
		s := n.cfg.shape
		for _, ph := range []struct {
			name string
			r    native.A2AResult
			gbps float64
		}{{"dispatch", n.st.Dispatch, n.st.DispatchGBps}, {"combine", n.st.Combine, n.st.CombineGBps}} {
			row := make([]string, len(t.Columns))
			set := func(name, v string) { row[col[name]] = v }
			set("engine", "nccl")
			set("mode", n.cfg.mode.String())
			set("preset", nativelayer.NCCLName)
			set("transport", "nccl")
			set("ranks", strconv.Itoa(s.Ranks))
			set("gpus", strconv.Itoa(n.cfg.gpus))
			set("tokens", strconv.Itoa(s.Tokens))
			set("experts", strconv.Itoa(s.Physical()))
			set("topk", strconv.Itoa(s.TopK))
			set("hidden", strconv.Itoa(s.Hidden))
			set("phase", ph.name)
			set("mean_us", f(ph.r.MeanUs))
			set("min_us", f(ph.r.MinUs))
			set("max_us", f(ph.r.MaxUs))
			set("algo_gbps", f(ph.gbps))
			t.Rows = append(t.Rows, row)
		}
	}
}
