package layer

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// The committed H100 transfer runs are the transfer grid's, point for
// point, and the grid holds one rank on the whole GPU through every path
// and an SM sweep of one rank from 16 to 128 SMs.
func TestTransferGridIsTheCommittedRuns(t *testing.T) {
	t.Parallel()
	g := TransferGrid()
	data, err := os.ReadFile("../testdata/h100-transfer-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw Raw
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var got []GridPoint
	for _, r := range raw.Runs {
		got = append(got, r.Point)
	}
	if !slices.Equal(got, g) {
		t.Errorf("h100-transfer-raw.json has %d runs that are not the transfer grid's %d points", len(got), len(g))
	}
	whole := map[string]bool{}
	var sms []int
	for _, p := range g[len(LowLatencyGrid()):] {
		if p.Ranks != 1 {
			t.Errorf("%s: not one rank", p.Name())
		}
		if p.SMsPerRank == 0 {
			whole[p.Transport] = true
		} else if p.Transport == "mini-gda" {
			sms = append(sms, p.SMsPerRank)
		}
	}
	if len(whole) != 4 || !slices.Equal(sms, []int{16, 32, 64, 128}) {
		t.Errorf("one rank on the whole GPU through %v, SM sweep %v", whole, sms)
	}
}
