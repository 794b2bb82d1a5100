package sizing

import "testing"

// Sizing every candidate analytically, EP256 with one local expert: what
// a study pays before its first run.
func BenchmarkEstimateEP256(b *testing.B) {
	d := deployment(b, 256, 256, 128)
	st := &Study{Deployment: d, Space: Space{Presets: presets(b, "mini-gda", "dc", "mini-proxy")}}
	b.ReportAllocs()
	for b.Loop() {
		cands, err := Candidates(&st.Deployment, st.Space)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.estimate(cands); err != nil {
			b.Fatal(err)
		}
	}
}
