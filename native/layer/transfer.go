package layer

// TransferGrid is what tests whether kernel costs fitted on virtual ranks
// describe a rank that owns a whole GPU: the low-latency grid (2, 4 and 8
// virtual ranks), then one rank alone on the GPU through each path at the
// engine's SM count, and an SM-count sweep of one rank (16 to 128 SMs)
// through the direct path and mini-gda. A fit on the 2- and 4-rank runs
// predicts the others unfitted.
func TransferGrid() []GridPoint {
	g := LowLatencyGrid()
	for _, tr := range []string{"direct", "mini-gda", "mini-proxy", "dc"} {
		g = append(g, GridPoint{Transport: tr, Ranks: 1, Tokens: 128, Hidden: 7168, TopK: 8, Experts: 288})
	}
	for _, tr := range []string{"direct", "mini-gda"} {
		for _, sms := range []int{16, 32, 64, 128} {
			g = append(g, GridPoint{Transport: tr, Ranks: 1, Tokens: 128, Hidden: 7168, TopK: 8, Experts: 288, SMsPerRank: sms})
		}
	}
	return g
}
