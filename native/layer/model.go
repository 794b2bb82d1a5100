package layer

import (
	"fmt"

	"go.uber.org/zap"

	"moebench/moe"
	"moebench/native"
	"moebench/profile"
	"moebench/transport/gda"
	"moebench/transport/preset"
	"moebench/transport/srd"
)

// EmulatedProfile is p as the native run cfg sees it: the NIC is the
// emulated one (its engines are the NIC warps, emunic.* their costs), with
// no link or message-rate limit unless the run paced it, and with one GPU
// the direct path's peers are ranks on that GPU (copies through its
// memory at the gpu.peer_* costs, which the model applies by itself).
func EmulatedProfile(p *profile.Profile, cfg native.LayerConfig) (*profile.Profile, error) {
	q := p.Clone()
	get := p.Get
	rd := cfg.Ranks / max(1, cfg.GPUs)
	line, rate := 1e5, 1e5 // Gb/s and M msg/s: no limit
	if cfg.Pace {
		line, rate = cfg.LineGBs*8, cfg.MsgMps
	}
	sets := []struct {
		name string
		v    float64
	}{
		{"emunic.engines", float64(max(1, cfg.NICSMs) * 32)},
		{"emunic.ranks_per_gpu", float64(rd)},
		{"pcie.mmio_ns", 0},
		{"pcie.dma_read_ns", get("emunic.wqe_ns")},
		{"proxy.nic_host_fetch_ns", get("emunic.host_wqe_ns")},
		{"proxy.host_mmio_ns", 0},
		{"link.gbps", line},
		{"link.efficiency", 1},
		{"link.mtu_b", 65536},
		{"link.pkt_overhead_b", 0},
		{"nic.msg_rate_mps", rate},
		{"proxy.host_msg_rate_mps", rate},
		{"fabric.latency_ns", get("emunic.latency_ns")},
	}
	if cfg.Path == native.PathEFA {
		// The emulated NIC executes SRD entries whatever the host's
		// adapters, keeps no address-handle cache and has one path.
		sets = append(sets, []struct {
			name string
			v    float64
		}{{"efa.generation", max(1, get("efa.generation"))}, {"efa.ah_entries", 1 << 20}, {"efa.ah_miss_ns", 0}, {"efa.paths", 1}}...)
	}
	for _, s := range sets {
		if err := q.SetValue(s.name, s.v, "the emulated NIC's mapping"); err != nil {
			return nil, fmt.Errorf("emulated NIC profile: %w", err)
		}
	}
	q.Name = p.Name + " (emulated NIC)"
	return q, nil
}

// Predict runs the model on the run the native engine made: the same
// routing and ranks, the SMs it used, the same mechanism (without the
// preset's library software, which the native posters do not run), on the
// emulated profile. Every rank is its own node on a path through the NIC;
// on the direct path all ranks share one node and NVLink.
// workers is the proxy workers per rank the native run actually ran.
func Predict(rt *moe.Routing, cfg native.LayerConfig, workers int, tr Transport, base *profile.Profile, bg moe.Background, log *zap.Logger) (*moe.Result, error) {
	return predict(rt, cfg, workers, tr, base, bg, log, false)
}

// predict is Predict, without the payload checksums when noPayload.
func predict(rt *moe.Routing, cfg native.LayerConfig, workers int, tr Transport, base *profile.Profile, bg moe.Background, log *zap.Logger, noPayload bool) (*moe.Result, error) {
	prof, err := EmulatedProfile(base, cfg)
	if err != nil {
		return nil, err
	}
	s := rt.Shape
	s.GPUsPerNode = 1
	p := tr.Preset
	o := tr.Options
	if tr.Direct {
		s.GPUsPerNode = s.Ranks
		p, err = preset.Get("mini-gda")
		if err != nil {
			return nil, err
		}
		o = preset.Options{}
	}
	switch c := p.Config.(type) {
	case gda.Config:
		c.LibCycles, c.LibNs = 0, 0
		p.Config = c
	case srd.Config:
		c.LibCycles, c.LibNs = 0, 0
		p.Config = c
	}
	if cfg.Path == native.PathProxy && workers > 0 {
		o.Workers = workers
	}
	model := rt
	if s != rt.Shape {
		if model, err = moe.FromTopk(s, idx64(rt), rt.Weights); err != nil {
			return nil, err
		}
	}
	mbg := moe.Background{}
	if cfg.BgWarps > 0 {
		mbg = moe.Background{CTAs: cfg.BgWarps, Threads: 1, Bytes: cfg.BgBytes, Reserved: bg.Reserved, Queues: bg.Queues}
	}
	lc := moe.LayerConfig{Routing: model, Mode: moe.LL, Profile: prof, NVLink: tr.Direct, NumSMs: cfg.SMsPerRank,
		Background: mbg, Log: log, RanksPerGPU: cfg.Ranks / max(1, cfg.GPUs), NoPayload: noPayload}
	if cfg.Normal {
		// Normal mode runs on the direct path only: NVLink, no background.
		lc.Mode, lc.Chunk = moe.Normal, cfg.Chunk
	} else {
		layer, reserved := moe.Channels(s, moe.LL, cfg.SMsPerRank, mbg)
		o.LocalExperts = layer
		if reserved > 0 {
			o.QPsPerPeer, o.Reserved = max(o.QPsPerPeer, layer)+reserved, reserved
		}
	}
	if lc.Transport, err = p.Transport(o); err != nil {
		return nil, err
	}
	return moe.RunLayer(lc)
}

func idx64(rt *moe.Routing) [][]int64 {
	out := make([][]int64, len(rt.Idx))
	for r, row := range rt.Idx {
		out[r] = make([]int64, len(row))
		for i, e := range row {
			out[r][i] = int64(e)
		}
	}
	return out
}
