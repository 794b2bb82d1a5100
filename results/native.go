package results

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/native"
	nativelayer "moebench/native/layer"
)

// Native is run's and sweep's document on the native engine: each
// configuration and layer path measured on the GPUs, the model's
// prediction beside it, and NCCL's all-to-all where asked.
type Native struct {
	Header   report.Header
	Workload string
	Items    []NativeItem
	NCCL     []NCCLItem
}

// Head is the document's header.
func (d *Native) Head() report.Header { return d.Header }

// NativeItem is one native run with the model's prediction beside it.
type NativeItem struct {
	Mode       moe.Mode
	Shape      moe.Shape // as asked: NCCL's baseline of the same shape sits beside it
	QPsPerPeer int
	Background string
	Sets       []string
	Swept      []Knob
	Path       nativelayer.Transport
	M          *nativelayer.Measurement
	Model      *moe.Result
	Err        error // a failed check: the run is reported, the command fails
}

// NCCLItem is NCCL's all-to-all beside one configuration's native runs.
type NCCLItem struct {
	Mode  moe.Mode
	Shape moe.Shape
	GPUs  int
	Swept []Knob
	Stats *nativelayer.A2AStats
}

// Placement says where the ranks ran.
func Placement(m *nativelayer.Measurement) string {
	c := m.Config
	rd := c.Ranks / max(1, c.GPUs)
	where := report.Count(c.Ranks, "rank") + " on " + report.Count(c.GPUs, "GPU")
	if rd > 1 && c.GPUs == 1 {
		where = fmt.Sprintf("%d virtual ranks on 1 GPU", c.Ranks)
	} else if rd > 1 {
		where = fmt.Sprintf("%d GPUs × %d virtual ranks", c.GPUs, rd)
	}
	return fmt.Sprintf("%s, %d SMs each", where, c.SMsPerRank)
}

// nicText names the NIC a run used.
func nicText(m *nativelayer.Measurement) string {
	c := m.Config
	if c.Path == native.PathDirect {
		return "none (direct stores)"
	}
	pace := "unpaced"
	if c.Pace {
		pace = fmt.Sprintf("paced to %.3g GB/s and %.3g M msg/s per rank", c.LineGBs, c.MsgMps)
	}
	return fmt.Sprintf("emulated NIC on %d SMs per GPU, %s", c.NICSMs, pace)
}

func nativePhases(it NativeItem) []struct {
	name  string
	st    *nativelayer.PhaseStats
	model *moe.Phase
} {
	return []struct {
		name  string
		st    *nativelayer.PhaseStats
		model *moe.Phase
	}{{"dispatch", &it.M.Dispatch, &it.Model.Dispatch}, {"combine", &it.M.Combine, &it.Model.Combine}}
}

func ratio(model, measured float64) float64 {
	if measured <= 0 {
		return 0
	}
	return model / measured
}

func correctText(it NativeItem) string {
	r := it.M.Result
	switch {
	case !it.M.Config.Verify:
		return "not checked"
	case it.Err != nil || r.Problems > 0:
		return fmt.Sprintf("NO (%d problems)", r.Problems)
	}
	return fmt.Sprintf("yes (%d)", r.Checked)
}

// WriteJSON is the json format: each run's measured figures where run's
// JSON has the model's, the model's beside them, NCCL's baseline after.
func (d *Native) WriteJSON(w io.Writer) error {
	return report.WriteJSON(w, nativeJSON(d.Header, d.Workload, d.Items, d.NCCL))
}

// WriteCSV is the csv format: a record per run and phase, then NCCL's.
func (d *Native) WriteCSV(w io.Writer) error {
	t := nativeCSV(d.Items)
	ncclCSV(t, d.NCCL)
	return t.WriteCSV(w, &d.Header)
}

// WriteText is the table format: measured times beside the model's, the
// measured timeline, per rank (a few runs only), the placement and the
// checks, then NCCL's baseline.
func (d *Native) WriteText(w io.Writer) error {
	h, items, nccl := d.Header, d.Items, d.NCCL
	kc := func(it NativeItem) []string { return nativeKnobVals(it) }
	t := nativeWith(items, []string{"preset", "transport", "phase", "mean µs", "p50 µs", "max µs", "issue done µs", "kernel µs", "algo GB/s", "model µs", "model/measured"},
		[]bool{false, false, false, true, true, true, true, true, true, true, true})
	for _, it := range items {
		for _, ph := range nativePhases(it) {
			st := ph.st
			t.Rows = append(t.Rows, append(kc(it), it.Path.Name(), it.Path.Mechanism(), ph.name, report.Num(st.Ready.Mean), report.Num(st.Ready.P50),
				report.Num(st.Ready.Max), report.Num(st.IssueDone.Mean), report.Num(st.KernelUs), report.Num(st.AlgoGBps),
				report.Num(ph.model.Time.Mean), strconv.FormatFloat(ratio(ph.model.Time.Mean, st.Ready.Mean), 'f', 2, 64)))
		}
	}
	if err := t.WriteText(w, &h); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nMeasured timeline (µs from the launch, mean over ranks): the last post, the send side done (dispatch: its grid sync), every count or flag seen (combine: its grid sync), ready; post ns is one post's issue time:\n\n"); err != nil {
		return err
	}
	tl := nativeWith(items, []string{"preset", "phase", "issue done", "send done", "signals seen", "ready", "post ns", "posts", "copies", "model issue done"},
		[]bool{false, false, true, true, true, true, true, true, true, true})
	for _, it := range items {
		for _, ph := range nativePhases(it) {
			st := ph.st
			tl.Rows = append(tl.Rows, append(kc(it), it.Path.Name(), ph.name, report.Num(st.IssueDone.Mean), report.Num(st.SendDone.Mean),
				report.Num(st.WaitDone.Mean), report.Num(st.Ready.Mean), report.Num(st.PostNs), strconv.FormatInt(st.Posts, 10),
				strconv.FormatInt(st.Copies, 10), report.Num(ph.model.IssueDone.Max)))
		}
	}
	if err := tl.WriteText(w, nil); err != nil {
		return err
	}
	if len(items) <= 4 {
		if _, err := io.WriteString(w, "\nPer rank (µs over the repetitions):\n\n"); err != nil {
			return err
		}
		pr := nativeWith(items, []string{"preset", "phase", "rank", "avg µs", "min µs", "max µs"}, []bool{false, false, true, true, true, true})
		for _, it := range items {
			for _, ph := range nativePhases(it) {
				for r, rs := range ph.st.Ranks {
					pr.Rows = append(pr.Rows, append(kc(it), it.Path.Name(), ph.name, strconv.Itoa(r), report.Num(rs.Mean), report.Num(rs.Min), report.Num(rs.Max)))
				}
			}
		}
		if err := pr.WriteText(w, nil); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\nPlacement, emulated NIC and checks (NIC counts per repetition):\n\n"); err != nil {
		return err
	}
	nt := nativeWith(items, []string{"preset", "placement", "NIC", "queues", "WQEs", "doorbells", "torn reads", "DCI switches", "proxy workers", "buffer MiB/rank", "correct"},
		[]bool{false, false, false, true, true, true, true, true, true, true, false})
	for _, it := range items {
		r := it.M.Result
		reps := int64(max(1, it.M.Config.Reps))
		nt.Rows = append(nt.Rows, append(kc(it), it.Path.Name(), Placement(it.M), nicText(it.M), strconv.Itoa(r.NICQueues),
			strconv.FormatInt(r.WQEs/reps, 10), strconv.FormatInt(r.Doorbells/reps, 10), strconv.FormatInt(r.Torn/reps, 10),
			strconv.FormatInt(r.DCISwitches/reps, 10), strconv.Itoa(r.Workers), report.Num(mib(r.BufferBytes)), correctText(it)))
	}
	if err := nt.WriteText(w, nil); err != nil {
		return err
	}
	for _, it := range items {
		if it.Err != nil {
			if _, err := fmt.Fprintf(w, "! %s: %s\n", it.Path.Name(), it.M.Result.Problem); err != nil {
				return err
			}
		}
	}
	return renderNCCL(w, items, nccl)
}

// nativeWith is a table with the swept knobs' columns first.
func nativeWith(items []NativeItem, cols []string, numeric []bool) *report.Table {
	var kc []string
	if len(items) > 0 {
		for _, k := range items[0].Swept {
			kc = append(kc, k.Name)
		}
	}
	t := &report.Table{Columns: append(slices.Clone(kc), cols...)}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, numeric...)
	return t
}

func nativeKnobVals(it NativeItem) []string {
	var v []string
	for _, k := range it.Swept {
		v = append(v, k.Value)
	}
	return v
}

type nativeJSONPhase struct {
	Phase
	SendDoneUs float64                 `json:"send_done_us"`
	WaitDoneUs float64                 `json:"signals_seen_us"`
	KernelUs   float64                 `json:"kernel_us"`
	PostNs     float64                 `json:"post_ns"`
	Copies     int64                   `json:"copies"`
	Ranks      []nativelayer.RankStats `json:"ranks"`
}

type nativeJSONResult struct {
	Run
	Dispatch  nativeJSONPhase    `json:"dispatch"`
	Combine   nativeJSONPhase    `json:"combine"`
	NIC       string             `json:"nic"`
	Placement string             `json:"placement"`
	Measured  []string           `json:"measured"`
	Model     nativeModel        `json:"model"`
	Native    native.LayerResult `json:"native"`
	Config    native.LayerConfig `json:"native_config"`
	Device    native.DeviceInfo  `json:"device"`
}

type nativeModel struct {
	Profile  string `json:"profile"`
	Dispatch Phase  `json:"dispatch"`
	Combine  Phase  `json:"combine"`
}

func nativePhaseJSON(st *nativelayer.PhaseStats) nativeJSONPhase {
	return nativeJSONPhase{
		Phase: Phase{MeanUs: st.Ready.Mean, MinUs: st.Ready.Min, MaxUs: st.Ready.Max, P50Us: st.Ready.P50, P99Us: st.Ready.P99,
			DeliveredUs: st.WaitDone, IssueDoneUs: st.IssueDone.Max, AlgoGBps: st.AlgoGBps, Messages: st.Posts,
			Breakdown: map[string]float64{}},
		SendDoneUs: st.SendDone.Mean, WaitDoneUs: st.WaitDone.Mean, KernelUs: st.KernelUs, PostNs: st.PostNs,
		Copies: st.Copies, Ranks: st.Ranks,
	}
}

func nativeJSON(h report.Header, workload string, items []NativeItem, nccl []NCCLItem) any {
	doc := struct {
		Header  report.Header      `json:"header"`
		Results []nativeJSONResult `json:"results"`
		NCCL    []ncclJSON         `json:"nccl_all_to_all,omitempty"`
	}{Header: h, Results: []nativeJSONResult{}, NCCL: ncclJSONOf(nccl)}
	for _, it := range items {
		s, r := it.Model.Shape, it.M.Result
		jr := nativeJSONResult{
			Run: Run{Engine: "native", Transport: it.Path.Mechanism(), Preset: it.Path.Name(), Workload: workload, Mode: it.Mode.String(),
				Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, Tokens: s.Tokens, Experts: s.Physical(), TopK: s.TopK, Hidden: s.Hidden,
				NVLink: it.Path.Direct, NumSMs: it.M.Config.SMsPerRank, QPsPerPeer: it.QPsPerPeer, Background: it.Background, Sets: it.Sets,
				Resources: moe.Resources{BufferBytesPerRank: r.BufferBytes}, RouteHash: it.Model.RouteHash,
				Correct: it.Err == nil && r.Problems == 0, Events: 0, DispatchDType: s.Dispatch.String(), CombineDType: s.Combine.String()},
			Dispatch: nativePhaseJSON(&it.M.Dispatch), Combine: nativePhaseJSON(&it.M.Combine),
			NIC: nicText(it.M), Placement: Placement(it.M),
			Measured: []string{"mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "send_done_us", "signals_seen_us", "kernel_us", "post_ns", "algo_gbps", "ranks"},
			Model:    nativeModel{Profile: it.Model.Transport, Dispatch: PhaseOf(&it.Model.Dispatch), Combine: PhaseOf(&it.Model.Combine)},
			Native:   r, Config: it.M.Config, Device: it.M.Device,
		}
		if r.Problem != "" {
			jr.Problems = []string{r.Problem}
		}
		if len(it.Swept) > 0 {
			jr.Knobs = map[string]string{}
			for _, k := range it.Swept {
				jr.Knobs[k.Name] = k.Value
			}
		}
		doc.Results = append(doc.Results, jr)
	}
	return doc
}

func nativeCSV(items []NativeItem) *report.Table {
	cols := []string{"engine", "mode", "preset", "transport", "ranks", "gpus", "sms_per_rank", "nic_sms", "tokens", "experts", "topk", "hidden", "background", "sets",
		"phase", "mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "send_done_us", "signals_seen_us", "kernel_us", "post_ns", "algo_gbps",
		"model_mean_us", "model_issue_done_us", "model_over_measured", "wqes", "doorbells", "torn_reads", "dci_switches", "route_hash", "correct"}
	t := &report.Table{Columns: cols}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, it := range items {
		s, r, c := it.Model.Shape, it.M.Result, it.M.Config
		for _, ph := range nativePhases(it) {
			st := ph.st
			t.Rows = append(t.Rows, []string{"native", it.Mode.String(), it.Path.Name(), it.Path.Mechanism(), strconv.Itoa(s.Ranks), strconv.Itoa(c.GPUs), strconv.Itoa(c.SMsPerRank),
				strconv.Itoa(c.NICSMs), strconv.Itoa(s.Tokens), strconv.Itoa(s.Physical()), strconv.Itoa(s.TopK), strconv.Itoa(s.Hidden),
				it.Background, strings.Join(it.Sets, ";"), ph.name,
				f(st.Ready.Mean), f(st.Ready.Min), f(st.Ready.Max), f(st.Ready.P50), f(st.Ready.P99), f(st.IssueDone.Mean), f(st.SendDone.Mean),
				f(st.WaitDone.Mean), f(st.KernelUs), f(st.PostNs), f(st.AlgoGBps), f(ph.model.Time.Mean), f(ph.model.IssueDone.Max),
				f(ratio(ph.model.Time.Mean, st.Ready.Mean)), strconv.FormatInt(r.WQEs, 10), strconv.FormatInt(r.Doorbells, 10),
				strconv.FormatInt(r.Torn, 10), strconv.FormatInt(r.DCISwitches, 10), it.Model.RouteHash,
				strconv.FormatBool(it.Err == nil && r.Problems == 0)})
		}
	}
	return t
}

// directOf is the direct path's measurement of the configuration, if run.
func directOf(items []NativeItem, s moe.Shape) *nativelayer.Measurement {
	for _, it := range items {
		if it.Path.Direct && it.Shape == s {
			return it.M
		}
	}
	return nil
}

// renderNCCL is the table of NCCL's all-to-all at each configuration's
// per-peer bytes, with the direct path's time over it where it ran.
func renderNCCL(w io.Writer, items []NativeItem, nccl []NCCLItem) error {
	if len(nccl) == 0 {
		return nil
	}
	st := nccl[0].Stats
	if _, err := fmt.Fprintf(w, "\nNCCL all-to-all at the same per-peer bytes (NCCL %s, %s; one rank per GPU; per all-to-all, the slowest GPU's time):\n\n",
		ncclVersion(st.Dispatch.Version), st.Dispatch.Lib); err != nil {
		return err
	}
	var kc []string
	for _, k := range nccl[0].Swept {
		kc = append(kc, k.Name)
	}
	t := &report.Table{Columns: append(kc, "phase", "NCCL µs", "min µs", "max µs", "algo GB/s", "direct µs", "direct / NCCL")}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, false, true, true, true, true, true, true)
	for _, n := range nccl {
		var vals []string
		for _, k := range n.Swept {
			vals = append(vals, k.Value)
		}
		d := directOf(items, n.Shape)
		for _, ph := range []struct {
			name string
			r    native.A2AResult
			gbps float64
		}{{"dispatch", n.Stats.Dispatch, n.Stats.DispatchGBps}, {"combine", n.Stats.Combine, n.Stats.CombineGBps}} {
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

func ncclJSONOf(nccl []NCCLItem) []ncclJSON {
	var out []ncclJSON
	for _, n := range nccl {
		out = append(out, ncclJSON{Ranks: n.Shape.Ranks, GPUs: n.GPUs, Tokens: n.Shape.Tokens, Mode: n.Mode.String(), NCCL: n.Stats})
	}
	return out
}

// ncclCSV adds the baseline's rows to the native CSV: engine nccl, the
// all-to-all's times in the measured columns.
func ncclCSV(t *report.Table, nccl []NCCLItem) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	col := make(map[string]int, len(t.Columns))
	for i, c := range t.Columns {
		col[c] = i
	}
	for _, n := range nccl {
		s := n.Shape
		for _, ph := range []struct {
			name string
			r    native.A2AResult
			gbps float64
		}{{"dispatch", n.Stats.Dispatch, n.Stats.DispatchGBps}, {"combine", n.Stats.Combine, n.Stats.CombineGBps}} {
			row := make([]string, len(t.Columns))
			set := func(name, v string) { row[col[name]] = v }
			set("engine", "nccl")
			set("mode", n.Mode.String())
			set("preset", nativelayer.NCCLName)
			set("transport", "nccl")
			set("ranks", strconv.Itoa(s.Ranks))
			set("gpus", strconv.Itoa(n.GPUs))
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
