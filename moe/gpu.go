package moe

import (
	"math"

	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// nicModel gives the NIC's own processing time of an op on an idle NIC,
// from doorbell service to the first byte on the wire, and the causes of
// the transport's own NIC time.
type nicModel struct {
	p   hw.NICParams
	own ownCauses
}

// nicShare is how a delivery's Served→Sent splits before egress queueing.
type nicShare struct {
	floor sim.Time
	own   ownCauses
}

func (n *nicModel) floor(op transport.Op, nvlink bool) nicShare {
	if nvlink {
		return nicShare{own: n.own}
	}
	p := &n.p
	t := p.Doorbell + p.WQE + p.DMARead + p.PCIeTime(64) + p.Tx
	if !op.Atomic && op.Bytes > 8 {
		t += p.DMARead + p.PCIeTime(op.Bytes)
	}
	return nicShare{t, n.own}
}

// gpuModel is the GPU-side compute and copy model shared by both modes.
type gpuModel struct {
	nic     nicModel
	costs   hw.GPUCosts
	kern    kernelCosts
	warpBpp float64 // bytes per picosecond one warp copies
	// mem is the GPUs' copy bandwidth, shared by every copy on a GPU (by
	// the ranks sharing one, and by the transport's copies between them);
	// receive-side copies and the reduction draw on pools of their own.
	mem            *hw.Memory
	recvMem, reduc *hw.Pool
	// slow is each rank's kernel slowdown and slowCosts a slow rank's GPU
	// costs (nil when no rank is slow): see slowRanks.
	slow      []float64
	slowCosts []*hw.GPUCosts
}

// kernelCosts are the layer kernels' own fixed costs (kernel.* and the
// warp copy's latency), from the profile.
type kernelCosts struct {
	start, cast, gridSync, recvTask, recvToken, reduceToken, warpCopy sim.Time
	// normal mode over NVLink: per chunk sent and received, and the
	// receiving warp's copy rate (bytes per picosecond)
	nvlChunk, nvlRecvChunk sim.Time
	nvlWarpBpp             float64
}

func newGPUModel(cfg *LayerConfig, ranks int) *gpuModel { return newGPUModelOn(cfg, ranks, 1) }

// newGPUModelOn places ranksPerGPU consecutive ranks on each GPU.
func newGPUModelOn(cfg *LayerConfig, ranks, ranksPerGPU int) *gpuModel {
	p := cfg.Profile
	ns := func(name string) sim.Time { return sim.Ns(p.Get(name)) }
	mem := hw.NewMemory(ranks, ranksPerGPU, p.Get("gpu.copy_gbs"), p.Get("gpu.warp_copy_gbs"), ns("gpu.warp_copy_ns"))
	mem.SetQueueWait(p.Get("gpu.copy_queue_wait"))
	g := &gpuModel{
		recvMem: mem.NewPool(p.Get("kernel.recv_gbs")),
		reduc:   mem.NewPool(p.Get("kernel.reduce_gbs")),
		nic:     nicModel{hw.NewNICParams(p), cfg.own},
		costs:   hw.NewGPUCosts(p),
		kern: kernelCosts{
			start: ns("kernel.start_ns"), cast: ns("kernel.cast_ns"), gridSync: ns("kernel.grid_sync_ns"),
			recvTask: ns("kernel.recv_task_ns"), recvToken: ns("kernel.recv_token_ns"),
			reduceToken: ns("kernel.reduce_token_ns"), warpCopy: ns("gpu.warp_copy_ns"),
			nvlChunk: ns("kernel.nvl_chunk_ns"), nvlRecvChunk: ns("kernel.nvl_recv_chunk_ns"),
			nvlWarpBpp: p.Get("kernel.nvl_warp_gbs") / 1000,
		},
		warpBpp: p.Get("gpu.warp_copy_gbs") / 1000,
		mem:     mem,
	}
	g.slowRanks(cfg.Faults, ranks)
	return g
}

func bytesTime(b int64, bpp float64) sim.Time {
	if b <= 0 {
		return 0
	}
	return sim.Time(math.Ceil(float64(b) / bpp))
}

// copy moves bytes on rank's GPU starting at start with `par` warps in
// parallel, each moving its share at the warp rate, while the GPU's copy
// bandwidth is shared by every copy on the GPU in event order (and a
// warp's loads may queue behind those ahead of them: hw.Memory). It
// returns when the copy is done.
func (g *gpuModel) copy(rank int, start sim.Time, bytes int64, perWarp int64) sim.Time {
	return g.copyN(rank, start, bytes, perWarp, 0)
}

// copyN is copy whose warps also pay a fixed latency (their messages'
// first round trips, or per-token work around the copy) before the bytes
// stream at the warp rate. A slow rank's copy and its fixed work take
// its factor times as long (gpuModel.on).
func (g *gpuModel) copyN(rank int, start sim.Time, bytes, perWarp int64, fixed sim.Time) sim.Time {
	if bytes <= 0 {
		return start + g.on(rank, fixed)
	}
	served, end := g.mem.TakeFrom(rank, start, g.bytesOn(rank, bytes))
	return max(g.mem.QueueWait(start, served)+g.on(rank, fixed+bytesTime(perWarp, g.warpBpp)), end)
}

// copyIn is copyN through pool p instead of the GPU's general share.
func (g *gpuModel) copyIn(p *hw.Pool, rank int, start sim.Time, bytes, perWarp int64, fixed sim.Time) sim.Time {
	if bytes <= 0 {
		return start + g.on(rank, fixed)
	}
	served, end := p.TakeFrom(rank, start, g.bytesOn(rank, bytes))
	return max(g.mem.QueueWait(start, served)+g.on(rank, fixed+bytesTime(perWarp, g.warpBpp)), end)
}

// pollDetect is when a polling warp observes a value visible at v: polls
// are one L2 load plus the loop gap apart; on average the value lands half
// a period before the next poll, which then takes one load.
func (g *gpuModel) pollDetect(v sim.Time) sim.Time {
	return v + (g.costs.L2Load+g.costs.PollGap)/2 + g.costs.L2Load
}
