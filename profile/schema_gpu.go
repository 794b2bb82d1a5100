package profile

// GPU-side costs of the submitting thread. Every cost of SM work comes as a
// pair, NAME.cycles at the SM clock plus NAME.ns of clock-independent time,
// so that issue scales with the clock the way Table 6 fits it (T = C/f + B).
var gpuDefs = concat([]Def{
	{"gpu.sm_clock_mhz", "MHz", 100, 5000, "SM clock while communicating"},
	{"gpu.sms", "count", 1, 1024, "streaming multiprocessors"},
	{"gpu.sm_store_slot_ns", "ns", 0, 1000, "occupancy of the SM's store path per 16 B lane store, shared by all threads of an SM"},
	{"gpu.poll_gap_ns", "ns", 0, 10000, "loop overhead between two polls of a flag or CQE, beyond the load itself"},
	{"gpu.lane_drain_extra", "ratio", 0, 10, "extra drain time of a warp-wide store per additional active lane writing its own WQE, as a fraction of one store's"},
	{"gpu.cq_update_stores", "count", 0, 16, "stores a completion routine leaves in flight (CQ consumer index, QP reclaim index)"},
},
	cost("gpu.reserve", "reserve a WQE slot in a thread-owned queue (producer index in a register, wrap check)"),
	cost("gpu.atomic", "device-scope atomic round trip to L2 (shared slot reservation, lock acquire)"),
	cost("gpu.store16", "issue one 16 B store of a WQE segment"),
	cost("gpu.store_drain", "drain one store to GPU-scope visibility; a thread's stores drain one after another, overlapping its further work"),
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
