// Package layer runs the MoE layer on the native engine and puts the
// model's prediction beside it.
//
// What flows in and out:
//
//	Plan(routing, Transport, Options, device) -> native.LayerConfig
//	    the native launch for a routing and a transport: ranks spread over
//	    GPUs (several per GPU are virtual ranks, each with its own SMs and
//	    buffers), SMs per rank as DeepEP would choose them within what the
//	    GPU leaves after the emulated NIC, and the preset's mechanism knobs
//	    (QPs per peer, ordering, doorbell batching, DCIs, proxy workers,
//	    rings and batching) translated to the library's. Normal mode
//	    (Options.Mode) plans DeepEP's intranode kernels on the direct path:
//	    its SMs (two per channel), chunk and ring-buffer size.
//	Run(Runner, routing, Transport, Options, background) -> *Measurement
//	    runs it, checks every token, and summarizes per-rank timings over
//	    the repetitions: avg/min/max per rank, mean/p50/p99/max over ranks.
//	RunPredicted(Runner, routing, Transport, Options, background, profile)
//	    Run and Predict of the same run, a failed check kept beside the
//	    measurement; Options.OnProfile paces the emulated NIC at a
//	    profile's rates, Options.Check refuses counts the library cannot
//	    take, naming the field.
//	EmulatedProfile(profile, config) / Predict(...) -> *moe.Result
//	    the model of the same run: same routing, ranks, SMs and mechanism,
//	    with the NIC constants replaced by the emulated NIC's (emunic.*) and
//	    the GPU's copy bandwidth shared by the virtual ranks of one GPU.
//	Measure(Runner, grid, ...) -> *Raw, Fit(raw, base, source) -> *FitResult
//	    the calibration grid's runs, and the model's kernel-side and
//	    emulated-NIC constants fitted to them stage by stage, each within
//	    bounds from physics or the GPU's datasheet (bounds.go); the result
//	    names the constants that end on a bound, and LeaveOneOut predicts
//	    each configuration from a fit without it.
//
// The library itself (native.Lib) implements Runner; tests use a fake.
package layer
