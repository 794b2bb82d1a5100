package layer

import (
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"moebench/moe"
	"moebench/native"
	"moebench/transport/preset"
	"moebench/transport/profile"
)

// EmulatedProfile is p as the native run cfg sees it: the NIC is the
// emulated one (emunic.* mapped onto the NIC, link and fabric constants,
// its SMs' rates shared by the ranks of a GPU), no NIC context cache, no
// DCI re-targeting cost, and the GPU's copy bandwidth shared by its
// virtual ranks. With one GPU, the direct path's "NVLink" is that GPU's
// own memory: its bandwidth, its warps' copy rate and latency.
func EmulatedProfile(p *profile.Profile, cfg native.LayerConfig) (*profile.Profile, error) {
	q := p.Clone()
	rd := float64(cfg.Ranks / max(1, cfg.GPUs))
	get := p.Get
	sms := float64(max(1, cfg.NICSMs))
	perRankGBs := get("emunic.sm_gbs") * sms / rd
	perRankMps := get("emunic.sm_mps") * sms / rd
	if cfg.Pace {
		perRankGBs = min(perRankGBs, cfg.LineGBs)
		perRankMps = min(perRankMps, cfg.MsgMps)
	}
	sets := []struct {
		name string
		v    float64
	}{
		{"nic.doorbell_ns", get("emunic.poll_ns")},
		{"nic.wqe_ns", get("emunic.wqe_ns")},
		{"nic.bb_fetch_ns", 0},
		{"nic.tx_ns", 0}, {"nic.rx_ns", 0}, {"nic.ack_ns", 0}, {"nic.rx_slot_ns", 0},
		{"nic.msg_rate_mps", max(1, perRankMps)},
		{"pcie.mmio_ns", 0},
		{"pcie.dma_read_ns", get("emunic.read_ns")},
		{"pcie.dma_write_ns", 0},
		{"pcie.gbps", 1e4},
		{"link.gbps", max(1, perRankGBs*8)},
		{"link.efficiency", 1},
		{"link.mtu_b", 65536},
		{"link.pkt_overhead_b", 0},
		{"fabric.latency_ns", get("emunic.latency_ns")},
		{"fabric.port_buffer_kb", 1 << 20},
		{"conn.entries", 1 << 20},
		{"conn.miss_ns", 0},
		{"dc.switch_ns", 0},
		{"dc.target_ns", 0},
		{"proxy.nic_doorbell_ns", get("emunic.poll_ns")},
		{"proxy.nic_host_fetch_ns", get("emunic.host_wqe_ns")},
		{"proxy.host_msg_rate_mps", max(1, perRankMps)},
		{"proxy.host_mmio_ns", 0},
		{"gpu.copy_gbs", max(1, get("gpu.copy_gbs")/rd)},
	}
	if cfg.GPUs <= 1 {
		sets = append(sets, []struct {
			name string
			v    float64
		}{
			{"nvlink.gbs", max(1, get("gpu.copy_gbs")/rd)},
			{"nvlink.warp_gbs", get("gpu.warp_copy_gbs")},
			{"nvlink.copy_ns", get("gpu.warp_copy_ns")},
			{"nvlink.latency_ns", get("emunic.latency_ns")},
		}...)
	}
	for _, s := range sets {
		if err := q.Set(s.name, strconv.FormatFloat(s.v, 'g', -1, 64)); err != nil {
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
func Predict(rt *moe.Routing, m *Measurement, tr Transport, base *profile.Profile, bg moe.Background, log *zap.Logger) (*moe.Result, error) {
	cfg := m.Config
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
	if p.GDA != nil {
		g := *p.GDA
		g.LibCycles, g.LibNs = 0, 0
		p.GDA = &g
	}
	if cfg.Path == native.PathProxy {
		o.Workers = m.Result.Workers
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
	layer, reserved := moe.Channels(s, moe.LL, cfg.SMsPerRank, mbg)
	o.LocalExperts = layer
	if reserved > 0 {
		o.QPsPerPeer = max(o.QPsPerPeer, layer) + reserved
	}
	t, err := p.Transport(o)
	if err != nil {
		return nil, err
	}
	return moe.RunLayer(moe.LayerConfig{Routing: model, Mode: moe.LL, Transport: t, Profile: prof, NVLink: tr.Direct,
		NumSMs: cfg.SMsPerRank, Background: mbg, Log: log})
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
