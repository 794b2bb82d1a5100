package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport"
)

// jsonPhase is a phase as the run JSON promises it.
type jsonPhase struct {
	MeanUs         float64            `json:"mean_us"`
	MinUs          float64            `json:"min_us"`
	MaxUs          float64            `json:"max_us"`
	P50Us          float64            `json:"p50_us"`
	P99Us          float64            `json:"p99_us"`
	DeliveredUs    moe.Summary        `json:"last_delivered_us"`
	IssueDoneUs    float64            `json:"issue_done_us"`
	AlgoGBps       float64            `json:"algo_gbps"`
	DeepEPGBps     float64            `json:"deepep_algo_gbps"`
	ScaleOutGBps   float64            `json:"scaleout_gbps"`
	NVLinkGBps     float64            `json:"nvlink_gbps"`
	ScaleOutBytes  int64              `json:"scaleout_bytes"`
	NVLinkBytes    int64              `json:"nvlink_bytes"`
	Messages       int64              `json:"messages"`
	BackgroundMsgs int64              `json:"background_messages"`
	Breakdown      map[string]float64 `json:"breakdown"`
	BoundBy        string             `json:"bound_by"`
	// Failure is why the phase failed under the layer's faults, if it did.
	Failure *jsonFailure `json:"failure,omitempty"`
}

type jsonResult struct {
	Engine      string            `json:"engine"`
	Transport   string            `json:"transport"`
	Preset      string            `json:"preset"`
	Workload    string            `json:"workload"`
	Mode        string            `json:"mode"`
	Ranks       int               `json:"ranks"`
	GPUsPerNode int               `json:"gpus_per_node"`
	Tokens      int               `json:"tokens"`
	Experts     int               `json:"experts"`
	TopK        int               `json:"topk"`
	Hidden      int               `json:"hidden"`
	NVLink      bool              `json:"nvlink"`
	NumSMs      int               `json:"num_sms"`
	QPsPerPeer  int               `json:"qps_per_peer_requested"`
	Background  string            `json:"background"`
	Sets        []string          `json:"sets,omitempty"`
	Dispatch    jsonPhase         `json:"dispatch"`
	Combine     jsonPhase         `json:"combine"`
	Resources   moe.Resources     `json:"resources"`
	RouteHash   string            `json:"route_hash"`
	BoundBy     string            `json:"bound_by"`
	Correct     bool              `json:"correct"`
	Problems    []string          `json:"problems,omitempty"`
	Events      uint64            `json:"events"`
	Knobs       map[string]string `json:"swept,omitempty"`
	// Limits is the headroom against each limit the point is under;
	// one with over set was run past only because it was overridden.
	Limits []moe.Usage `json:"limits,omitempty"`

	// The element types of the two paths, as --dispatch-dtype and
	// --combine-dtype name them.
	DispatchDType string `json:"dispatch_dtype"`
	CombineDType  string `json:"combine_dtype"`

	// Faults the layer ran under (--fault's syntax) and their seed, and
	// the failure they caused, if any.
	Faults    string       `json:"faults,omitempty"`
	FaultSeed uint64       `json:"fault_seed,omitempty"`
	Failure   *jsonFailure `json:"failure,omitempty"`
}

func toJSONPhase(p *moe.Phase) jsonPhase {
	return jsonPhase{
		MeanUs: p.Time.Mean, MinUs: p.Time.Min, MaxUs: p.Time.Max, P50Us: p.Time.P50, P99Us: p.Time.P99,
		DeliveredUs: p.Delivered, IssueDoneUs: p.IssueDone.Max, AlgoGBps: p.AlgoGBps, DeepEPGBps: p.DeepEPGBps,
		ScaleOutGBps: p.ScaleOutGBps, NVLinkGBps: p.NVLinkGBps, ScaleOutBytes: p.ScaleOutBytes, NVLinkBytes: p.NVLinkBytes,
		Messages: p.Messages, BackgroundMsgs: p.Background, Breakdown: p.Breakdown.Map(), BoundBy: p.BoundBy,
	}
}

func renderLayer(w io.Writer, format string, h report.Header, items []item) error {
	if len(items) > 0 && items[0].cfg.fault.seeds > 0 {
		return renderTails(w, format, h, items)
	}
	switch format {
	case "json":
		doc := struct {
			Header  report.Header `json:"header"`
			Results []jsonResult  `json:"results"`
		}{Header: h, Results: []jsonResult{}}
		for _, it := range items {
			r, s := it.res, it.res.Shape
			jr := jsonResult{
				Engine: "model", Transport: it.preset.Mechanism, Preset: it.preset.Name, Workload: workloadOf(h), Mode: r.Mode.String(),
				Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, Tokens: s.Tokens, Experts: s.Physical(), TopK: s.TopK, Hidden: s.Hidden,
				NVLink: r.NVLink, NumSMs: r.NumSMs, QPsPerPeer: it.cfg.knobs.Int("qps-per-peer"), Background: it.cfg.bgName, Sets: it.cfg.sets,
				Dispatch: toJSONPhase(&r.Dispatch), Combine: toJSONPhase(&r.Combine), Resources: r.Resources,
				RouteHash: r.RouteHash, BoundBy: r.BoundBy, Correct: r.Correct, Problems: r.Problems, Events: r.Events,
				DispatchDType: s.Dispatch.String(), CombineDType: s.Combine.String(), Limits: it.limits,
			}
			if jr.Faults = faultsOf(r); jr.Faults != "" {
				jr.FaultSeed, jr.Failure = r.Faults.Seed, failureOf(r)
				jr.Dispatch.Failure, jr.Combine.Failure = toJSONFailure("dispatch", r.Dispatch.Failure), toJSONFailure("combine", r.Combine.Failure)
			}
			if len(it.knobs) > 0 {
				jr.Knobs = map[string]string{}
				for _, k := range it.knobs {
					jr.Knobs[k.name] = k.value
				}
			}
			doc.Results = append(doc.Results, jr)
		}
		return report.WriteJSON(w, doc)
	case "csv":
		return csvTable(items).WriteCSV(w, &h)
	}
	if err := mainTable(items).WriteText(w, &h); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nCritical path by cause (µs, mean over ranks; the largest bounds the phase):\n\n"); err != nil {
		return err
	}
	if err := breakdownTable(items).WriteText(w, nil); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nResources and checks:\n\n"); err != nil {
		return err
	}
	if err := resourceTable(items).WriteText(w, nil); err != nil {
		return err
	}
	if t := limitTable(items); len(t.Rows) > 0 {
		if _, err := io.WriteString(w, "\nHeadroom against each limit (GPU memory, NIC queues, the library's own):\n\n"); err != nil {
			return err
		}
		if err := t.WriteText(w, nil); err != nil {
			return err
		}
	}
	for _, it := range items {
		for _, p := range it.res.Problems {
			if _, err := fmt.Fprintf(w, "! %s: %s\n", it.preset.Name, p); err != nil {
				return err
			}
		}
	}
	return failureLines(w, items)
}

// workloadOf recovers the workload name from the header's description.
func workloadOf(h report.Header) string {
	if len(h.Extra) == 0 {
		return ""
	}
	var name string
	fmt.Sscanf(h.Extra[0], "workload %s", &name)
	if n := len(name); n > 0 && name[n-1] == ':' {
		name = name[:n-1]
	}
	return name
}

func knobCols(items []item) []string {
	var c []string
	if len(items) > 0 {
		for _, k := range items[0].knobs {
			c = append(c, k.name)
		}
	}
	return c
}

func knobVals(it item) []string {
	var v []string
	for _, k := range it.knobs {
		v = append(v, k.value)
	}
	return v
}

func withKnobs(items []item, cols []string, numeric []bool) *report.Table {
	kc := knobCols(items)
	t := &report.Table{Columns: append(append([]string{}, kc...), cols...)}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, numeric...)
	return t
}

func phases(r *moe.Result) []struct {
	name string
	p    *moe.Phase
} {
	return []struct {
		name string
		p    *moe.Phase
	}{{"dispatch", &r.Dispatch}, {"combine", &r.Combine}}
}

func mainTable(items []item) *report.Table {
	t := withKnobs(items, []string{"preset", "transport", "phase", "mean µs", "p50 µs", "p99 µs", "max µs", "issue done µs", "algo GB/s", "DeepEP algo GB/s", "scale-out GB/s", "NVLink GB/s", "bound by"},
		[]bool{false, false, false, true, true, true, true, true, true, true, true, true, false})
	for _, it := range items {
		for _, ph := range phases(it.res) {
			p := ph.p
			t.Rows = append(t.Rows, append(knobVals(it), it.preset.Name, it.preset.Mechanism, ph.name,
				report.Num(p.Time.Mean), report.Num(p.Time.P50), report.Num(p.Time.P99), report.Num(p.Time.Max),
				report.Num(p.IssueDone.Max), report.Num(p.AlgoGBps), report.Num(p.DeepEPGBps), report.Num(p.ScaleOutGBps), report.Num(p.NVLinkGBps), boundOrFailed(p)))
		}
	}
	return t
}

func breakdownTable(items []item) *report.Table {
	cols := append([]string{"preset", "phase"}, moe.CauseNames()...)
	num := []bool{false, false}
	for range moe.CauseNames() {
		num = append(num, true)
	}
	t := withKnobs(items, cols, num)
	for _, it := range items {
		for _, ph := range phases(it.res) {
			row := append(knobVals(it), it.preset.Name, ph.name)
			for _, v := range ph.p.Breakdown.Values() {
				row = append(row, report.Num(v))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

func resourceTable(items []item) *report.Table {
	// The kinds the items' mechanisms declare, after the connection
	// figures (0 where a transport holds none); any other a mechanism
	// holds, by name, after the memory.
	var mechs []string
	for _, it := range items {
		mechs = append(mechs, it.preset.Mechanism)
	}
	held := heldNames(mechs)
	var own []string
	for _, it := range items {
		for k := range it.res.Resources.Own {
			if !slices.Contains(own, k) && !slices.Contains(held, k) {
				own = append(own, k)
			}
		}
	}
	slices.Sort(own)
	t := withKnobs(items, []string{"preset", "QPs/NIC", "active conns/NIC", "knee", "queue MiB/rank", "buffer MiB/rank", "route hash", "correct"},
		[]bool{false, true, true, true, true, true, false, false})
	at := len(t.Columns) - 4 // before the queue memory
	t.Columns = slices.Insert(t.Columns, at, held...)
	for range held {
		t.Numeric = slices.Insert(t.Numeric, at, true)
	}
	at = len(t.Columns) - 2 // before the route hash
	t.Columns = slices.Insert(t.Columns, at, own...)
	for range own {
		t.Numeric = slices.Insert(t.Numeric, at, true)
	}
	for _, it := range items {
		r := it.res.Resources
		knee := "—"
		if r.ConnKnee > 0 {
			knee = strconv.Itoa(r.ConnKnee)
		}
		ok := "yes"
		if !it.res.Correct {
			ok = fmt.Sprintf("NO (%d problems)", it.res.ProblemCount)
		}
		row := append(knobVals(it), it.preset.Name, strconv.Itoa(r.QPsPerNIC), strconv.Itoa(r.ActiveConnPerNIC), knee)
		for _, k := range held {
			row = append(row, strconv.Itoa(r.Own[k]))
		}
		row = append(row, report.Num(mib(r.QueueBytesPerRank)), report.Num(mib(r.BufferBytesPerRank)))
		for _, k := range own {
			v := "—"
			if n, ok := r.Own[k]; ok {
				v = strconv.Itoa(n)
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, append(row, it.res.RouteHash, ok))
	}
	return t
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// heldNames are the kinds of resource the mechanisms named declare
// (transport.HeldBy), a report's columns beyond the common ones.
func heldNames(mechs []string) []string {
	n := []string{}
	for _, d := range transport.HeldBy(mechs) {
		n = append(n, d.Name)
	}
	return n
}

// csvTable has one record per (run, phase) with every figure at full
// precision.
func csvTable(items []item) *report.Table {
	cols := []string{"preset", "transport", "mode", "ranks", "gpus_per_node", "tokens", "experts", "topk", "hidden", "nvlink"}
	var fields []transport.Knob
	for _, k := range transport.AllKnobs() {
		if k.Field != "" {
			fields = append(fields, k)
			cols = append(cols, k.Field)
		}
	}
	cols = append(cols, "background", "sets",
		"phase", "mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "algo_gbps", "deepep_algo_gbps", "scaleout_gbps", "nvlink_gbps", "messages", "bound_by")
	for _, c := range moe.CauseNames() {
		cols = append(cols, "breakdown_"+c+"_us")
	}
	cols = append(cols, "qps_per_nic", "active_connections_per_nic", "connection_knee", "route_hash", "correct")
	t := &report.Table{Columns: cols}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, it := range items {
		r, s := it.res, it.res.Shape
		for _, ph := range phases(r) {
			p := ph.p
			sets := ""
			for i, x := range it.cfg.sets {
				if i > 0 {
					sets += ";"
				}
				sets += x
			}
			row := []string{it.preset.Name, it.preset.Mechanism, r.Mode.String(), strconv.Itoa(s.Ranks), strconv.Itoa(s.GPUsPerNode),
				strconv.Itoa(s.Tokens), strconv.Itoa(s.Physical()), strconv.Itoa(s.TopK), strconv.Itoa(s.Hidden), strconv.FormatBool(r.NVLink)}
			for _, k := range fields {
				row = append(row, knobValue(k, it.cfg.knobs))
			}
			row = append(row, it.cfg.bgName, sets, ph.name,
				f(p.Time.Mean), f(p.Time.Min), f(p.Time.Max), f(p.Time.P50), f(p.Time.P99), f(p.IssueDone.Max), f(p.AlgoGBps), f(p.DeepEPGBps),
				f(p.ScaleOutGBps), f(p.NVLinkGBps), strconv.FormatInt(p.Messages, 10), boundOrFailed(p))
			for _, v := range p.Breakdown.Values() {
				row = append(row, f(v))
			}
			row = append(row, strconv.Itoa(r.Resources.QPsPerNIC), strconv.Itoa(r.Resources.ActiveConnPerNIC), strconv.Itoa(r.Resources.ConnKnee),
				r.RouteHash, strconv.FormatBool(r.Correct))
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}
