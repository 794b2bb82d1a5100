package microbench

import (
	"fmt"

	"moebench/profile"
	"moebench/transport/gda"
	"moebench/transport/preset"
	"moebench/transport/proxy"
)

// presets runs Table 3's single operation through the library presets. A
// preset is data over a mechanism: its queue, ordering, batching and
// completion choices (Table 1) and, for the GPU libraries, a software cost
// per post derived from the issue time itself, so the issue rows are fits
// and put+completion and RTT are what the model predicts from them.
func presets(p *profile.Profile) ([]Row, error) {
	type want struct{ issue, putc, rtt float64 }
	paper := map[string]want{
		"gdaki":         {1.60, 6.02, 10.50},
		"nvshmem-ibgda": {5.31, 11.10, 21.50},
		"deepep-v1":     {4.26, 9.18, nan}, // NVSHMEM's internal put
		"nvshmem-ibrc":  {0.99, 6.40, 11.07},
		"gin-proxy":     {2.46, 8.19, 16.32},
	}
	var rows []Row
	for _, name := range []string{"gdaki", "nvshmem-ibgda", "deepep-v1", "nvshmem-ibrc", "gin-proxy"} {
		ps, err := preset.Get(name)
		if err != nil {
			return nil, err
		}
		var issue, putc, rtt float64
		src := "Table 3"
		switch c := ps.Config.(type) {
		case gda.Config:
			qps := max(1, c.QPsPerPeer)
			r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: c.Ordering, Payload: 8, Inline: true, Shared: true,
				QPs: qps, Quiet: name != "gdaki", LibCycles: c.LibCycles, LibNs: c.LibNs})
			if err != nil {
				return nil, fmt.Errorf("preset %s: %w", name, err)
			}
			issue, putc, rtt = r.Issue.Us(), r.PutC.Us(), r.RTT.Us()
			rows = append(rows, Row{"presets", name, "issue", "µs", paper[name].issue, issue, src + " (fitted: the library cost comes from this row)"})
		case proxy.Config:
			cfg := c
			cfg.Workers, cfg.Rings, cfg.Batch = 1, 1, 1
			r, err := proxy.SingleOp(p, cfg, 8)
			if err != nil {
				return nil, fmt.Errorf("preset %s: %w", name, err)
			}
			issue, putc, rtt = r.Issue.Us(), r.PutC.Us(), r.RTT.Us()
			rows = append(rows, Row{"presets", name, "issue (enqueue)", "µs", paper[name].issue, issue, src})
		default:
			return nil, fmt.Errorf("preset %s: mechanism %s has no single-operation model", name, ps.Mechanism)
		}
		rows = append(rows,
			Row{"presets", name, "put+completion", "µs", paper[name].putc, putc, src},
			Row{"presets", name, "RTT", "µs", paper[name].rtt, rtt, src})
	}
	return pibOnly(p, rows), nil
}
