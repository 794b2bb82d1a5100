package sizing

import (
	"reflect"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/transport"
	"moebench/transport/preset"
)

// Queues are counted per NIC: a rank's striped over its NICs
// (topo.nics_per_gpu), or the queues of every rank sharing one
// (topo.gpus_per_nic). EP16 with mini-gda holds 16 QPs a rank per QP to
// each peer, and DC its DCIs; the estimate agrees with the run, and the
// QP limit applies to a NIC, so 4 NICs take a configuration one NIC
// cannot.
func TestResourcesArePerNIC(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("runs candidates one at a time; the studies cover the parallel runs under the race detector")
	}
	for _, tc := range []struct {
		set       string
		div, mult int
	}{
		{"topo.nics_per_gpu=1", 1, 1},
		{"topo.nics_per_gpu=4", 4, 1},
		{"topo.gpus_per_nic=2", 1, 2},
	} {
		t.Run(tc.set, func(t *testing.T) {
			t.Parallel()
			d := deployment(t, 16, 256, 8, tc.set)
			st := &Study{Deployment: d, Space: Space{Presets: presets(t, "mini-gda", "dc"),
				Knobs: map[string][]int{"qps-per-peer": {1, 32}, "dcis": {16}}},
				Limits: Limits{MaxQPsPerNIC: 300, Tolerance: 0.05}}
			cands, err := Candidates(&st.Deployment, st.Space)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.estimate(cands); err != nil {
				t.Fatal(err)
			}
			st.reject(cands)
			want := map[string]int{"mini-gda qps=1": 16, "mini-gda qps=32": 512, "dc dcis=16": 16}
			for i := range cands {
				c := &cands[i]
				w, ok := want[c.Name]
				if !ok {
					t.Fatalf("candidate %q not expected", c.Name)
				}
				perNIC := (w + tc.div - 1) / tc.div * tc.mult
				got := c.Resources.QPsPerNIC
				if strings.HasPrefix(c.Name, "dc") {
					got = c.Resources.Own["DCIs/NIC"]
				}
				if got != perNIC {
					t.Errorf("%s: %d queues per NIC, want %d (%d a rank / %d NICs × %d GPUs a NIC)", c.Name, got, perNIC, w, tc.div, tc.mult)
				}
				if over := c.Stage == StageRejected; over != (c.Resources.QPsPerNIC > 300) {
					t.Errorf("%s: %d QPs per NIC against a limit of 300, rejected: %v (%s)", c.Name, c.Resources.QPsPerNIC, over, c.Reason)
				}
				if c.Stage != "" {
					continue
				}
				est := c.Resources
				if err := st.runOne(c); err != nil {
					t.Fatal(err)
				}
				run := c.Resources
				est.Estimated, est.ConnMissRate, run.ConnMissRate = false, 0, 0
				if !reflect.DeepEqual(est, run) {
					t.Errorf("%s: estimated %+v, ran %+v", c.Name, est, run)
				}
			}
		})
	}
}

// A queue's link follows its number, idle queues included: with four NICs
// and every operation on channel 0, QP j of peer d is queue d·P + j of P
// per peer, on link d·P mod 4. Four and eight QPs a peer put every peer's
// traffic on link 0 alike, one class and one time; one QP a peer spreads
// the peers over the links, another class and another time.
func TestClassesFollowTheLinks(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("runs candidates one at a time; the studies cover the parallel runs under the race detector")
	}
	d := deployment(t, 16, 16, 16, "topo.nics_per_gpu=4") // one local expert: channel 0
	disp, comb, _ := moe.Demands(d.Routing, d.Mode, false, moe.Background{})
	p := presets(t, "mini-gda")[0]
	class := map[int]string{}
	took := map[int]moe.Result{}
	for _, q := range []int{1, 4, 8} {
		tr, err := p.Transport(preset.Options{QPsPerPeer: q})
		if err != nil {
			t.Fatal(err)
		}
		e := tr.(transport.Estimator)
		ed, _ := e.Estimate(disp, d.Profile)
		ec, _ := e.Estimate(comb, d.Profile)
		if ed.Class == "" || ec.Class == "" {
			t.Fatalf("%d QPs a peer: no class", q)
		}
		class[q] = ed.Class + "|" + ec.Class
		res, err := moe.RunLayer(moe.LayerConfig{Routing: d.Routing, Mode: d.Mode, Transport: tr, Profile: d.Profile, NoPayload: true})
		if err != nil {
			t.Fatal(err)
		}
		took[q] = *res
	}
	if class[4] != class[8] || took[4].Dispatch.Time != took[8].Dispatch.Time || took[4].Combine.Time != took[8].Combine.Time {
		t.Errorf("4 and 8 QPs a peer: classes %q and %q, dispatch %+v and %+v", class[4], class[8], took[4].Dispatch.Time, took[8].Dispatch.Time)
	}
	if class[1] == class[4] {
		t.Errorf("1 and 4 QPs a peer share class %q", class[1])
	}
	if took[1].Dispatch.Time == took[4].Dispatch.Time {
		t.Errorf("1 and 4 QPs a peer take the same dispatch %+v, though one spreads peers over four links and the other does not", took[1].Dispatch.Time)
	}
}
