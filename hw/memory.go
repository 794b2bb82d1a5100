package hw

import (
	"math"

	"moebench/sim"
)

// Memory is each GPU's device-memory copy bandwidth, taken in event order
// by every copy on that GPU. Ranks share a GPU when several run on one
// (the native engine's virtual ranks); otherwise each rank has its own,
// and its copies have the whole GPU's bandwidth to themselves.
//
// A warp's copy may wait for the copies queued ahead of it in the GPU's
// memory system before its own round trips begin: its loads queue behind
// theirs (SetQueueWait). Then a warp copies as fast as its own latency and
// rate allow on a GPU that few SMs load, and slower on one that many SMs
// (of one rank or of several sharing it) keep busy.
type Memory struct {
	bpp     float64    // bytes per picosecond
	perGPU  int        // consecutive ranks on one GPU
	at      []sim.Time // per GPU: when its bandwidth is next free
	warpBpp float64    // bytes per picosecond one warp copies
	fixed   sim.Time   // a warp copy's first round trip
	wait    float64    // the share of its queueing a warp's round trips wait out (SetQueueWait)
}

// NewMemory is ranks' GPUs, ranksPerGPU consecutive ranks on each (0 or 1:
// one each), copying gbs GB/s (bytes read and written as one copy) and a
// warp at warpGBs after fixed.
func NewMemory(ranks, ranksPerGPU int, gbs, warpGBs float64, fixed sim.Time) *Memory {
	per := max(1, ranksPerGPU)
	gpus := (ranks + per - 1) / per
	return &Memory{bpp: gbs / 1000, perGPU: per, at: make([]sim.Time, gpus), warpBpp: warpGBs / 1000, fixed: fixed}
}

// SetQueueWait sets the share (0 to 1) of the wait behind the copies queued
// ahead in the GPU's memory that a warp's own round trips come after: 0
// overlaps them with the queue, so a warp's copy takes as long on a busy
// GPU as on an idle one until the bandwidth binds; 1 starts them once the
// memory takes its bytes.
func (m *Memory) SetQueueWait(share float64) { m.wait = min(1, max(0, share)) }

// QueueWait is when a warp whose copy the GPU's memory began to serve at
// served, having asked at start, begins its own round trips.
func (m *Memory) QueueWait(start, served sim.Time) sim.Time {
	return start + sim.Time(math.Round(m.wait*float64(served-start)))
}

// RanksPerGPU is how many consecutive ranks share each GPU.
func (m *Memory) RanksPerGPU() int { return m.perGPU }

// SameGPU reports whether two ranks share a GPU.
func (m *Memory) SameGPU(a, b int) bool { return a/m.perGPU == b/m.perGPU }

// Take moves bytes on rank's GPU from start and returns when the GPU's
// bandwidth has carried them.
func (m *Memory) Take(rank int, start sim.Time, bytes int64) sim.Time {
	return take(m.at, rank/m.perGPU, start, bytes, m.bpp)
}

// TakeFrom is Take that also says when the GPU's bandwidth began to serve
// the bytes, after the copies queued ahead of them.
func (m *Memory) TakeFrom(rank int, start sim.Time, bytes int64) (served, end sim.Time) {
	return takeFrom(m.at, rank/m.perGPU, start, bytes, m.bpp)
}

func take(at []sim.Time, g int, start sim.Time, bytes int64, bpp float64) sim.Time {
	_, end := takeFrom(at, g, start, bytes, bpp)
	return end
}

func takeFrom(at []sim.Time, g int, start sim.Time, bytes int64, bpp float64) (served, end sim.Time) {
	if bytes <= 0 {
		return start, start
	}
	s := max(start, at[g])
	at[g] = s + sim.Time(math.Ceil(float64(bytes)/bpp))
	return s, at[g]
}

// Pool is a share of a GPU's memory bandwidth that one kind of copy draws
// on at its own effective rate (a receive-side copy reads what peers just
// wrote; a reduction reads several buffers to write one).
type Pool struct {
	m   *Memory
	bpp float64
	at  []sim.Time
}

// NewPool is a pool of gbs GB/s per GPU.
func (m *Memory) NewPool(gbs float64) *Pool {
	return &Pool{m: m, bpp: gbs / 1000, at: make([]sim.Time, len(m.at))}
}

// Take moves bytes on rank's GPU from start through the pool.
func (p *Pool) Take(rank int, start sim.Time, bytes int64) sim.Time {
	return take(p.at, rank/p.m.perGPU, start, bytes, p.bpp)
}

// TakeFrom is Take that also says when the pool began to serve the bytes.
func (p *Pool) TakeFrom(rank int, start sim.Time, bytes int64) (served, end sim.Time) {
	return takeFrom(p.at, rank/p.m.perGPU, start, bytes, p.bpp)
}

// WarpCopy is when one warp starting at start has copied bytes on rank's
// GPU: once the GPU's bandwidth takes them, its fixed latency and its own
// rate, or the GPU's share.
func (m *Memory) WarpCopy(rank int, start sim.Time, bytes int64) sim.Time {
	return m.copyAt(rank, start, bytes, m.fixed, m.warpBpp)
}

// PeerCopy is when one warp starting at start has copied bytes into the
// buffer of another rank on its GPU, at its own fixed latency and rate.
// Its bytes cross the same device memory as the GPU's other copies, so
// they take the GPU's one bandwidth, in turn with every other copy on it.
func (m *Memory) PeerCopy(rank int, start sim.Time, bytes int64, fixed sim.Time, warpBpp float64) sim.Time {
	return m.copyAt(rank, start, bytes, fixed, warpBpp)
}

func (m *Memory) copyAt(rank int, start sim.Time, bytes int64, fixed sim.Time, warpBpp float64) sim.Time {
	served, end := m.TakeFrom(rank, start, bytes)
	return max(m.QueueWait(start, served)+fixed+sim.Time(math.Ceil(float64(bytes)/warpBpp)), end)
}
