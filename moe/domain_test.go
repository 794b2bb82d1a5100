package moe_test

import (
	"fmt"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport/preset"
)

// rackProfile is p-gb200 with NVLink domains of d GPUs, whatever the
// built-in profile says.
func rackProfile(t *testing.T, d string) *profile.Profile {
	t.Helper()
	p := profile.MustLoad("p-gb200").Clone()
	if err := p.Set("nvlink.domain_gpus", d); err != nil {
		t.Fatal(err)
	}
	return p
}

// crossDomainLL is what an LL phase sends between NVLink domains of d
// GPUs, counted from the routing: each selection is a message to its
// expert's rank, and each rank tells every expert on another domain its
// count (8 B).
func crossDomainLL(r *moe.Routing, d int) (dispatch, combine int64) {
	s := r.Shape
	nl := s.LocalExperts()
	for src := range s.Ranks {
		for _, e := range r.Idx[src] {
			if e >= 0 && int(e)/nl/d != src/d {
				dispatch += int64(s.LLDispatchBytes())
				combine += int64(s.LLCombineBytes())
			}
		}
		for e := range s.Physical() {
			if e/nl/d != src/d {
				dispatch += 8
				combine += 8
			}
		}
	}
	return dispatch, combine
}

// An NVL72 rack is one NVLink domain across its 18 hosts of 4 GPUs: a
// 72-rank layer sends nothing through NICs, and 144 ranks on two racks
// send through NICs exactly what goes from one rack to the other.
func TestRackIsOneNVLinkDomain(t *testing.T) {
	t.Parallel()
	prof := rackProfile(t, "72")
	for _, tc := range []struct {
		ranks int
		mode  moe.Mode
	}{{72, moe.LL}, {144, moe.LL}, {72, moe.Normal}, {144, moe.Normal}} {
		t.Run(fmt.Sprintf("%v/%d", tc.mode, tc.ranks), func(t *testing.T) {
			t.Parallel()
			s := moe.Shape{Experts: 288, TopK: 8, Hidden: 1024, Tokens: 32, Ranks: tc.ranks, GPUsPerNode: 4, Dispatch: moe.FP8, Combine: moe.BF16}
			r, err := moe.Generate(s, moe.RoutingSpec{}, 3)
			if err != nil {
				t.Fatal(err)
			}
			p, err := preset.Get("mini-gda")
			if err != nil {
				t.Fatal(err)
			}
			layer, _ := moe.Channels(s, tc.mode, 0, moe.Background{})
			tr, err := p.Transport(preset.Options{LocalExperts: layer})
			if err != nil {
				t.Fatal(err)
			}
			res, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: tc.mode, Transport: tr, Profile: prof, NVLink: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Correct {
				t.Fatalf("%d problems: %v", res.ProblemCount, res.Problems)
			}
			if res.Shape.NVLDomain != 72 {
				t.Errorf("the result's shape has an NVLink domain of %d GPUs, want the profile's 72", res.Shape.NVLDomain)
			}
			if tc.ranks == 72 {
				if res.Dispatch.ScaleOutBytes != 0 || res.Combine.ScaleOutBytes != 0 {
					t.Errorf("one rack sent %d + %d B through NICs, want none", res.Dispatch.ScaleOutBytes, res.Combine.ScaleOutBytes)
				}
				if res.Dispatch.NVLinkBytes == 0 {
					t.Error("one rack moved nothing over NVLink")
				}
				return
			}
			if res.Dispatch.ScaleOutBytes == 0 || res.Combine.ScaleOutBytes == 0 {
				t.Fatalf("two racks sent %d + %d B through NICs, want traffic between them", res.Dispatch.ScaleOutBytes, res.Combine.ScaleOutBytes)
			}
			if tc.mode == moe.LL {
				d, c := crossDomainLL(r, 72)
				if res.Dispatch.ScaleOutBytes != d || res.Combine.ScaleOutBytes != c {
					t.Errorf("two racks: %d / %d B through NICs, want %d / %d (what crosses from rack to rack)", res.Dispatch.ScaleOutBytes, res.Combine.ScaleOutBytes, d, c)
				}
			}
		})
	}
}

// The same 72 ranks with the domain at the node cross NICs between hosts.
func TestNodeDomainCrossesNICs(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 288, TopK: 8, Hidden: 1024, Tokens: 32, Ranks: 72, GPUsPerNode: 4, Dispatch: moe.FP8, Combine: moe.BF16}
	r, err := moe.Generate(s, moe.RoutingSpec{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := preset.Get("mini-gda")
	tr, err := p.Transport(preset.Options{LocalExperts: s.LocalExperts()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: moe.LL, Transport: tr, Profile: rackProfile(t, "0"), NVLink: true})
	if err != nil {
		t.Fatal(err)
	}
	if d, c := crossDomainLL(r, 4); res.Dispatch.ScaleOutBytes != d || res.Combine.ScaleOutBytes != c {
		t.Errorf("hosts of 4: %d / %d B through NICs, want %d / %d", res.Dispatch.ScaleOutBytes, res.Combine.ScaleOutBytes, d, c)
	}
}

func TestShapeNVLinkDomainValidation(t *testing.T) {
	t.Parallel()
	base := moe.Shape{Experts: 288, TopK: 8, Hidden: 1024, Tokens: 32, Ranks: 144, GPUsPerNode: 4, Dispatch: moe.FP8, Combine: moe.BF16}
	for _, tc := range []struct {
		domain, ranks int
		want          string
	}{
		{72, 144, ""},
		{72, 36, ""}, // fewer ranks than a domain: one domain of 36
		{-4, 144, "nvlink domain: -4 GPUs is negative"},
		{6, 144, "nvlink domain: 6 GPUs is not a whole number of nodes of 4 GPUs"},
		{72, 96, "ranks: 96 ranks do not fill whole NVLink domains of 72 GPUs (give a multiple of 72 ranks, or an NVLink domain of 48"},
	} {
		s := base
		s.NVLDomain, s.Ranks = tc.domain, tc.ranks
		err := s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("domain %d, %d ranks: %v", tc.domain, tc.ranks, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("domain %d, %d ranks: %v, want %q", tc.domain, tc.ranks, err, tc.want)
		}
		if err == nil {
			if got, want := s.DomainGPUs(), min(tc.domain, tc.ranks); got != want {
				t.Errorf("domain %d, %d ranks: %d GPUs a domain, want %d", tc.domain, tc.ranks, got, want)
			}
		}
	}
}

func TestShapeHosts(t *testing.T) {
	for _, tc := range []struct {
		ranks, perNode, domain int
		want                   string
	}{
		{16, 8, 0, "2 nodes × 8 GPUs"},
		{16, 8, 8, "2 nodes × 8 GPUs"},
		{72, 4, 72, "18 nodes × 4 GPUs, one NVLink domain"},
		{144, 4, 72, "36 nodes × 4 GPUs, 2 NVLink domains of 72 GPUs"},
	} {
		s := moe.Shape{Ranks: tc.ranks, GPUsPerNode: tc.perNode, NVLDomain: tc.domain}
		if got := s.Hosts(); got != tc.want {
			t.Errorf("%d ranks, %d a node, domain %d: %q, want %q", tc.ranks, tc.perNode, tc.domain, got, tc.want)
		}
	}
}
