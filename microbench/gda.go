package microbench

import (
	"fmt"

	"moebench/profile"
	"moebench/transport/gda"
	"moebench/transport/preset"
)

func us(t interface{ Us() float64 }) float64 { return t.Us() }

// gb200 reports whether p is the paper's GB200 platform, whose columns of
// Tables 3 and 4 then serve as the comparison.
func gb200(p *profile.Profile) bool { return p.Name == "p-gb200" }

// pibOnly keeps a P-IB paper value on P-IB and drops it elsewhere, so that
// another platform's rows are not compared with P-IB's measurements.
func pibOnly(p *profile.Profile, rows []Row) []Row {
	if p.Name != "p-ib" {
		for i := range rows {
			rows[i].Paper, rows[i].Source = nan, ""
		}
	}
	return rows
}

func singleOp(p *profile.Profile) (rows []Row, err error) {
	type sc = struct {
		name             string
		inline           bool
		order            gda.Ordering
		issue, putc, rtt float64
	}
	cases := []sc{
		{"mini-gda, inline", true, gda.OrderGPUFence, 0.70, 4.03, 6.85},
		{"mini-gda, non-inline", false, gda.OrderGPUFence, 0.70, 4.64, nan},
		{"mini-gda, unordered (unsafe)", true, gda.OrderNone, 0.19, 3.46, nan},
	}
	src := "Table 3"
	if !gb200(p) && p.Name != "p-ib" {
		defer func() { rows = pibOnly(p, rows) }()
	}
	if gb200(p) {
		src = "Table 3, P-GB200"
		cases = []sc{
			{"mini-gda, inline", true, gda.OrderGPUFence, 0.77, 5.70, 8.64},
			{"mini-gda, non-inline", false, gda.OrderGPUFence, 0.80, 6.62, nan},
			{"mini-gda, unordered (unsafe)", true, gda.OrderNone, 0.16, 5.09, nan},
		}
	}
	for _, c := range cases {
		r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: c.order, Payload: 8, Inline: c.inline})
		if err != nil {
			return nil, fmt.Errorf("single-op %s: %w", c.name, err)
		}
		rows = append(rows,
			Row{"single-op", c.name, "issue", "µs", c.issue, us(r.Issue), src},
			Row{"single-op", c.name, "put+completion", "µs", c.putc, us(r.PutC), src},
			Row{"single-op", c.name, "RTT", "µs", c.rtt, us(r.RTT), src},
		)
		if c.name == "mini-gda, inline" && !gb200(p) {
			rows = append(rows, Row{"single-op", c.name, "doorbell to CQE observed", "µs", 3.30, us(r.CQEWait), "§4.1"})
		}
	}
	return rows, nil
}

func ordering(p *profile.Profile) (rows []Row, err error) {
	paper := Table4(false)
	src := "Table 4"
	if !gb200(p) && p.Name != "p-ib" {
		defer func() { rows = pibOnly(p, rows) }()
	}
	if gb200(p) {
		src = "Table 4, P-GB200"
		paper = Table4(true)
	}
	for _, m := range gda.OrderingModes() {
		r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: m, Payload: 8, Inline: true})
		if err != nil {
			return nil, fmt.Errorf("ordering %s: %w", m, err)
		}
		rows = append(rows,
			Row{"ordering", m.String(), "issue", "µs", paper[m].Issue, us(r.Issue), src},
			Row{"ordering", m.String(), "put+completion", "µs", paper[m].PutC, us(r.PutC), src},
		)
	}
	return rows, nil
}

func inline(p *profile.Profile) ([]Row, error) {
	one := func(size int, inl bool) (gda.SingleResult, error) {
		return gda.SingleOp(p, gda.SingleConfig{Ordering: gda.OrderGPUFence, Payload: size, Inline: inl})
	}
	var rows []Row
	ptr, err := one(8, false)
	if err != nil {
		return nil, err
	}
	rows = append(rows, Row{"inline", "pointer, 8 B", "issue", "µs", nan, us(ptr.Issue), ""},
		Row{"inline", "pointer, 8 B", "put+completion", "µs", nan, us(ptr.PutC), ""})
	res := map[int]gda.SingleResult{}
	for _, size := range []int{8, 16, 28, 32, 60, 92, 124, 220} {
		r, err := one(size, true)
		if err != nil {
			return nil, err
		}
		res[size] = r
		lay := gda.WriteLayout(size, true, 0)
		c := fmt.Sprintf("inline %d B (%d B WQE)", size, lay.BBs*64)
		rows = append(rows, Row{"inline", c, "issue", "µs", nan, us(r.Issue), ""},
			Row{"inline", c, "put+completion", "µs", nan, us(r.PutC), ""})
	}
	chunks := func(n int) int { return gda.WriteLayout(n, true, 0).Segments }
	slope := (res[220].Issue - res[8].Issue).Us() / float64(chunks(220)-chunks(8))
	rows = append(rows,
		Row{"inline", "8-220 B", "issue slope per 16 B chunk", "µs", 0.1, slope, "Fig. 3a / §4.1"},
		Row{"inline", "8 B inline vs pointer", "put+completion saving", "µs", 0.61, (ptr.PutC - res[8].PutC).Us(), "§4.1"},
		Row{"inline", "92 B inline vs 8 B pointer", "put+completion ratio (saving gone)", "ratio", 1.0, res[92].PutC.Us() / ptr.PutC.Us(), "§4.1 / Fig. 3a"},
	)
	return pibOnly(p, rows), nil
}

func rate(p *profile.Profile) ([]Row, error) {
	var rows []Row
	for _, k := range Table5() {
		if k.CalibrateOnly {
			continue
		}
		v, err := gda.Rate(p, gda.RateConfig{Threads: k.Threads, QPs: k.QPs, SMs: k.SMs, PerDoorbell: k.PerDoorbell, Style: k.Style,
			Ordering: gda.OrderGPUFence, Payload: 8, Inline: true, Depth: 1024})
		if err != nil {
			return nil, fmt.Errorf("rate %s: %w", k.Name, err)
		}
		rows = append(rows, Row{"rate", k.Name, "message rate", "M msg/s", k.Mps, v, "Table 5"})
	}
	nv, err := nvshmemRate(p)
	if err != nil {
		return nil, err
	}
	rows = append(rows, nv...)
	return pibOnly(p, rows), nil
}

// nvshmemRate is Table 5's NVSHMEM 3.7.2 rows through the nvshmem-ibgda
// preset's mechanism: __threadfence ordering, the public put's library
// cost, 32 WQEs per doorbell, and warp-coalesced reservation (NVSHMEM's
// IBGDA path reserves a warp's same-destination puts with one atomic), one
// 256-thread CTA per QP.
func nvshmemRate(p *profile.Profile) ([]Row, error) {
	ps, err := preset.Get("nvshmem-ibgda")
	if err != nil {
		return nil, err
	}
	c, ok := ps.Config.(gda.Config)
	if !ok {
		return nil, fmt.Errorf("preset %s: configures no GDA", ps.Name)
	}
	var rows []Row
	for _, k := range Table5NVSHMEM() {
		v, err := gda.Rate(p, gda.RateConfig{Threads: k.Threads, QPs: k.QPs, SMs: k.SMs, PerDoorbell: c.PerDoorbell, Style: k.Style,
			Ordering: c.Ordering, Payload: 8, Inline: true, Depth: c.Depth, LibCycles: c.LibCycles, LibNs: c.LibNs})
		if err != nil {
			return nil, fmt.Errorf("rate %s: %w", k.Name, err)
		}
		rows = append(rows, Row{"rate", k.Name, "message rate", "M msg/s", k.Mps, v, "Table 5"})
	}
	return rows, nil
}

func completionScope(p *profile.Profile) ([]Row, error) {
	var rows []Row
	get := func(qps int, quiet bool) (float64, error) {
		r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: gda.OrderGPUFence, Payload: 8, Inline: true, QPs: qps, Quiet: quiet})
		return r.PutC.Us(), err
	}
	base := map[bool]float64{}
	for _, quiet := range []bool{true, false} {
		name := "per-QP completion"
		if quiet {
			name = "PE-wide quiet"
		}
		for _, q := range []int{1, 2, 4, 8, 16, 32} {
			v, err := get(q, quiet)
			if err != nil {
				return nil, err
			}
			if q == 1 {
				base[quiet] = v
			}
			rows = append(rows, Row{"completion-scope", fmt.Sprintf("%s, %d QPs", name, q), "put+completion", "µs", nan, v, ""})
		}
	}
	if p.Name == "p-roce" {
		// Table 7: the growth of an all-QP quiet over its one-QP value.
		// The paper's base is NVSHMEM's put (18.02 µs), the model's is
		// mini-gda's, so the comparison is of the added time per QP.
		for _, k := range []struct {
			qps   int
			paper float64
		}{{2, 0.76}, {4, 1.76}, {8, 2.94}, {16, 6.75}, {32, 16.83}} {
			v, err := get(k.qps, true)
			if err != nil {
				return nil, err
			}
			rows = append(rows, Row{"completion-scope", fmt.Sprintf("PE-wide quiet, %d vs 1 QPs", k.qps), "put+completion added", "µs", k.paper, v - base[true], "Table 7"})
		}
		return rows, nil
	}
	q16, _ := get(16, true)
	p16, _ := get(16, false)
	rows = append(rows,
		Row{"completion-scope", "PE-wide quiet, 16 vs 1 QPs", "put+completion ratio", "ratio", 2.0, q16 / base[true], "Fig. 4"},
		Row{"completion-scope", "per-QP completion, 16 vs 1 QPs", "put+completion ratio", "ratio", 1.0, p16 / base[false], "Fig. 4"},
	)
	return pibOnly(p, rows), nil
}

func clock(p *profile.Profile) ([]Row, error) {
	var rows []Row
	for _, f := range []float64{502, 746, 995, 1245, 1500, 1845, 1980} {
		q := p.Clone()
		if err := q.SetValue("gpu.sm_clock_mhz", f, "clock sweep"); err != nil {
			return nil, err
		}
		r, err := gda.SingleOp(q, gda.SingleConfig{Ordering: gda.OrderGPUFence, Payload: 8, Inline: true})
		if err != nil {
			return nil, err
		}
		c := fmt.Sprintf("%.0f MHz", f)
		rows = append(rows, Row{"clock", c, "issue", "µs", nan, r.Issue.Us(), ""},
			Row{"clock", c, "put+completion", "µs", nan, r.PutC.Us(), ""})
	}
	return rows, nil
}
