package profile

// GPU-side costs of the submitting thread. Every cost of SM work comes as a
// pair, NAME.cycles at the SM clock plus NAME.ns of clock-independent time,
// so that issue scales with the clock the way Table 6 fits it (T = C/f + B).
var gpuDefs = concat([]Def{
	{"gpu.sm_clock_mhz", "MHz", 100, 5000, "SM clock while communicating"},
	{"gpu.sms", "count", 1, 1024, "streaming multiprocessors"},
	{"gpu.lane_extra", "ratio", 0, 1, "extra cost of a warp instruction per additional active lane touching its own line, as a fraction of the one-lane cost"},
	{"gpu.sm_issue_share", "ratio", 0, 1, "fraction of a WQE's build cost that occupies the SM's shared memory pipeline (the rest overlaps across warps)"},
	{"gpu.poll_interval.ns", "ns", 0, 10000, "time between two polls of a flag or CQE by a waiting thread (loop overhead beyond the load)"},
},
	cost("gpu.reserve", "reserve a WQE slot in a thread-owned queue (producer index in a register, wrap check)"),
	cost("gpu.atomic", "device-scope atomic round trip to L2 (shared slot reservation, lock acquire)"),
	cost("gpu.store16", "issue one 16 B store of a WQE segment"),
	cost("gpu.l2_load", "dependent load served by L2 (inline payload chunk, queue state, CQE poll)"),
	cost("gpu.fence_gpu", "fence.acq_rel.gpu / st.release.gpu: wait until the WQE stores are visible at GPU scope"),
	cost("gpu.fence_sc_gpu", "__threadfence() (fence.sc.gpu)"),
	cost("gpu.release_sys", "st.release.sys: release at system scope before the doorbell"),
	cost("gpu.fence_sys", "__threadfence_system() (fence.sc.sys)"),
	cost("gpu.mmio_store", "issue the 8 B doorbell store to the UAR page (posted MMIO)"),
	cost("gpu.handoff", "per-thread publication: observe the predecessor's published slot and publish one's own"),
	cost("gpu.cq_poll", "consume one CQE: load, validity check, consumer-index update"),
	cost("gpu.quiet_qp", "PE-wide quiet: visit one configured QP (load its indices, compare)"),
)

func concat(parts ...[]Def) []Def {
	var out []Def
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// cost declares the .cycles and .ns halves of one SM-side cost.
func cost(name, doc string) []Def {
	return []Def{
		{name + ".cycles", "cycles", 0, 1e7, doc + " (clock-sensitive part)"},
		{name + ".ns", "ns", 0, 1e7, doc + " (clock-independent part)"},
	}
}
