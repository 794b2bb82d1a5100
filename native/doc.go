// Package native loads libmoebench_native.so, the CUDA measurements of the
// GPU side of GPU-initiated RDMA submission, and wraps its C ABI
// (native/include/moebench_native.h) in typed Go calls.
//
// The library is opened at run time with dlopen, so moebench builds and
// runs where CUDA is absent: Open fails with an error wrapping
// ErrLibraryNotLoaded when the file is missing, unusable or built for
// another ABI (and always in a build without cgo), and with ErrNoGPU when
// it loads but finds no GPU. Build it with `make native` on a CUDA host.
//
// What flows in and out. Each call runs one experiment on GPU 0 and
// returns medians:
//
//	(*Lib).Issue(mode, target, inlineBytes, iters) (Stats, error)
//	    one thread's issue time of an RDMA write for an ordering mode
//	    (OrderingModes, or NoDoorbell) with the doorbell on a host-mapped
//	    pinned page (HostMapped: the store crosses PCIe as a posted write,
//	    like a UAR store) or in device memory; IssueWith sets every knob
//	(*Lib).BuildWQEs / VerifyWQEs
//	    the GPU builds real mlx5 RC RDMA-write WQEs (ctrl, raddr, inline or
//	    data segment) in a device-memory ring of 64 B basic blocks, the
//	    big-endian doorbell record and the 8 B doorbell; VerifyWQEs decodes
//	    them with this package's host codec (wqe.go) and checks every field
//	(*Lib).Micro(iters) (Micro, error)
//	    atomic, L2 load, 16 B store, ordered handoff, CQE consumption,
//	    host-mapped load and store
//	(*Lib).Rate(RateConfig) (float64, error), RateDetail
//	    posting rate (M msg/s) over threads x QPs x blocks x WQEs per
//	    doorbell x publication style (thread, coop, handoff, lock)
//	(*Lib).Enqueue(variant, iters), HandoffRTT(variant, iters)
//	    the CPU-proxy path: GPU enqueue into host rings ("baseline": device
//	    atomic + PCIe read of host progress + system-scope release;
//	    "tuned": own ring, cached progress, one 16 B store) with a CPU
//	    worker thread of the library polling the rings, and the round trip
//	    until the GPU sees the worker's completion counter
//	(*Lib).WorkerCapacity(CapacityConfig)
//	    descriptors per second CPU workers consume from GPU-fed rings
//	(*Lib).KernelCost(KernelConfig)
//	    registers, blocks per SM and run time of a compute or streaming
//	    caller kernel without, with a dormant, or with an active mini-gda
//	    or mini-proxy path
//	(*Lib).ClockMHz, Device, DeviceCount
//	    the effective SM clock (clock64 against globaltimer) and the GPU,
//	    driver and CUDA versions
//	(*Lib).Layer(LayerConfig, LayerRouting) (LayerResult, error)
//	    DeepEP-style low-latency dispatch and combine run by real kernels:
//	    ranks spread over GPUs (several per GPU are virtual ranks, each
//	    with its own SMs and buffers), the FP8 cast, counts, packed layout,
//	    flags, grid syncs and the weighted reduce; every message through a
//	    path's GPU-side mechanism (direct stores, or mlx5 WQEs built by GPU
//	    warps or by CPU proxy workers) and, for the RDMA paths, an emulated
//	    NIC: warps on reserved SMs that poll doorbells, execute the WQEs'
//	    writes and atomics and write CQEs (its decisions are the C of
//	    src/emunic.h, which package emunic runs on the CPU). Every token of
//	    every repetition is checked on the GPU; per-rank timings come back
//	    per repetition. With LayerConfig.Normal, DeepEP's intranode normal
//	    mode on the direct path instead: channels of a sender and a
//	    receiver SM, ring buffers per (channel, source) with chunked tails
//	    and heads, combine summed in rank order at each token's owner
//
// Times inside kernels are clock64 deltas of the timing thread with the
// timer-read overhead subtracted, converted at the clock the same kernel
// measured; globaltimer medians ride along as a coarse cross-check.
//
// No RDMA NIC takes part: in the measurements above nothing fetches the
// WQEs, consumes the doorbell or writes CQEs, and what is measured is what
// the GPU (and, for the proxy, the CPU worker) pays to submit; in Layer the
// emulated NIC does, and says so. `moebench calibrate` runs the whole suite and
// turns it into profile constants (transport/gda.FitGPU);
// testdata/h200-calibrate.txt is its output on an H200 host.
//
// Lib methods are safe for concurrent use; the library runs one experiment
// at a time. The host codec (WQE, PostWQE, ReadWQE, DoorbellRecord) needs
// no GPU.
package native
