package hw

import (
	"math"

	"moebench/sim"
)

// Memory is each GPU's device-memory copy bandwidth, taken in event order
// by every copy on that GPU. Ranks share a GPU when several run on one
// (the native engine's virtual ranks); otherwise each rank has its own.
type Memory struct {
	bpp     float64    // bytes per picosecond
	perGPU  int        // consecutive ranks on one GPU
	at      []sim.Time // per GPU: when its bandwidth is next free
	warpBpp float64    // bytes per picosecond one warp copies
	fixed   sim.Time   // a warp copy's first round trip
	// Copies into the buffers of the GPU's other ranks have a rate of
	// their own (peerBpp, over peerAt): they stream from the cache the
	// sender just wrote, where a receiver's copies read device memory.
	peerBpp float64
	peerAt  []sim.Time
}

// NewMemory is ranks' GPUs, ranksPerGPU consecutive ranks on each (0 or 1:
// one each), copying gbs GB/s (bytes read and written as one copy) and a
// warp at warpGBs after fixed.
func NewMemory(ranks, ranksPerGPU int, gbs, warpGBs float64, fixed sim.Time) *Memory {
	per := max(1, ranksPerGPU)
	gpus := (ranks + per - 1) / per
	return &Memory{bpp: gbs / 1000, perGPU: per, at: make([]sim.Time, gpus), warpBpp: warpGBs / 1000, fixed: fixed,
		peerBpp: gbs / 1000, peerAt: make([]sim.Time, gpus)}
}

// SetPeerRate gives copies between the ranks of one GPU their own rate.
func (m *Memory) SetPeerRate(gbs float64) { m.peerBpp = gbs / 1000 }

// RanksPerGPU is how many consecutive ranks share each GPU.
func (m *Memory) RanksPerGPU() int { return m.perGPU }

// SameGPU reports whether two ranks share a GPU.
func (m *Memory) SameGPU(a, b int) bool { return a/m.perGPU == b/m.perGPU }

// Take moves bytes on rank's GPU from start and returns when the GPU's
// bandwidth has carried them.
func (m *Memory) Take(rank int, start sim.Time, bytes int64) sim.Time {
	return take(m.at, rank/m.perGPU, start, bytes, m.bpp)
}

func take(at []sim.Time, g int, start sim.Time, bytes int64, bpp float64) sim.Time {
	if bytes <= 0 {
		return start
	}
	s := max(start, at[g])
	at[g] = s + sim.Time(math.Ceil(float64(bytes)/bpp))
	return at[g]
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

// WarpCopy is when one warp starting at start has copied bytes on rank's
// GPU: its own rate after the fixed latency, or the GPU's share.
func (m *Memory) WarpCopy(rank int, start sim.Time, bytes int64) sim.Time {
	own := start + m.fixed + sim.Time(math.Ceil(float64(bytes)/m.warpBpp))
	return max(own, m.Take(rank, start, bytes))
}

// PeerCopy is when one warp starting at start has copied bytes into the
// buffer of another rank on its GPU, at its own fixed latency and rate or
// the GPU's peer-copy share.
func (m *Memory) PeerCopy(rank int, start sim.Time, bytes int64, fixed sim.Time, warpBpp float64) sim.Time {
	own := start + fixed + sim.Time(math.Ceil(float64(bytes)/warpBpp))
	g := rank / m.perGPU
	s := max(start, m.peerAt[g])
	m.peerAt[g] = s + sim.Time(math.Ceil(float64(bytes)/m.peerBpp))
	return max(own, m.peerAt[g])
}
