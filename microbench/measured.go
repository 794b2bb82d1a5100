package microbench

import (
	"fmt"
	"slices"

	"moebench/profile"
	"moebench/transport/gda"
)

// CompareMeasured runs the model on the configurations a GPU was measured
// on (moebench calibrate --raw) and returns rows whose reference value is
// the local measurement instead of the paper's.
//
// The measuring host has no RDMA NIC: its doorbells land in a host-mapped
// page and nothing fetches the WQEs. For the posting rates, the model's NIC
// is therefore made non-binding (no per-QP doorbell handling, no message
// ceiling), so both sides show the GPU's submission alone.
func CompareMeasured(p *profile.Profile, m gda.Measured) ([]Row, error) {
	src := fmt.Sprintf("measured on %s at %.0f MHz (%s doorbell)", m.GPU, m.ClockMHz, m.DoorbellTarget)
	var rows []Row
	for _, mode := range gda.OrderingModes() {
		v, ok := m.IssueNs[mode.String()]
		if !ok {
			continue
		}
		r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: mode, Payload: 8, Inline: true})
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{"ordering", mode.String(), "issue", "µs", v / 1000, r.Issue.Us(), src})
	}
	sizes := make([]int, 0, len(m.InlineIssueNs))
	for s := range m.InlineIssueNs {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	for _, size := range sizes {
		r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: gda.OrderGPUFence, Payload: size, Inline: true})
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{"inline", fmt.Sprintf("inline %d B", size), "issue", "µs", m.InlineIssueNs[size] / 1000, r.Issue.Us(), src})
	}
	gpuOnly := p.Clone()
	for name, v := range map[string]float64{"nic.doorbell_ns": 0, "nic.wqe_ns": 0, "nic.msg_rate_mps": 1e5} {
		if err := gpuOnly.SetValue(name, v, "no NIC on the measuring host"); err != nil {
			return nil, err
		}
	}
	for _, rp := range m.Rates {
		style, ok := gda.ParsePublication(rp.Style)
		if !ok {
			return nil, fmt.Errorf("measured rate: unknown style %q", rp.Style)
		}
		cfg := gda.RateConfig{Threads: rp.Threads, QPs: rp.QPs, SMs: rp.SMs, PerDoorbell: rp.PerDoorbell, Style: style,
			Ordering: gda.OrderGPUFence, Payload: 8, Inline: true, Depth: 1024}
		if cfg.Validate() != nil {
			continue
		}
		v, err := gda.Rate(gpuOnly, cfg)
		if err != nil {
			return nil, err
		}
		c := fmt.Sprintf("%d threads, %d QPs, %d SMs, %d/doorbell, %s", rp.Threads, rp.QPs, rp.SMs, rp.PerDoorbell, rp.Style)
		rows = append(rows, Row{"rate", c, "posting rate (GPU side)", "M msg/s", rp.Mps, v, src})
	}
	return rows, nil
}
