package moe

import "moebench/transport"

// runNormalCombine simulates normal combine on one node and checks every
// rank's combined tokens against the reference.
func runNormalCombine(cfg *LayerConfig, n *NormalLayout, plan *normalPlan, g *gpuModel, probs *problemList, ph *Phase) (transport.Resources, error) {
	p, err := runNormalPhase(cfg, n, plan, g, probs, ph, true, nil)
	if err != nil {
		return transport.Resources{}, err
	}
	if ph.Failure == nil {
		for r := range p.R {
			probs.addErr(cfg.Routing.CheckCombine(r, p.out[r]))
		}
	}
	return p.conn.Resources(), nil
}
