package profile

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Every constant of every built-in profile states its kind, and the kind
// agrees with what its source says: a "fit:" is a fit to the paper, a
// "bounded fit" one to this project's native measurements, and an
// assumption says that it is one.
func TestBuiltinKinds(t *testing.T) {
	t.Parallel()
	for _, name := range Builtins() {
		p, err := Load(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, c := range p.Constants() {
			if !slices.Contains(Kinds(), c.Kind) {
				t.Errorf("%s: %s has kind %q, want one of %v", name, c.Name, c.Kind, Kinds())
				continue
			}
			s := c.Source
			var want Kind
			switch {
			case strings.HasPrefix(s, "fit:"):
				want = KindFit
			case strings.HasPrefix(s, "bounded fit"):
				want = KindMeasured
			case strings.HasPrefix(s, "model assumption"):
				want = KindAssumption
			}
			if want != "" && c.Kind != want {
				t.Errorf("%s: %s is %s, but its source %q makes it %s", name, c.Name, c.Kind, s, want)
			}
			if c.Kind == KindAssumption && !strings.Contains(s, "assumption") {
				t.Errorf("%s: %s is an assumption its source does not call one: %q", name, c.Name, s)
			}
			if c.Kind == KindFit && !strings.Contains(s, "fit") {
				t.Errorf("%s: %s is a fit its source does not call one: %q", name, c.Name, s)
			}
		}
	}
}

// The platforms of today are built in, besides the paper's three.
func TestBuiltinPlatforms(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"p-ib", "p-roce", "p-gb200", "p-h100", "p-h800", "p-b200", "p-b300"} {
		if !slices.Contains(Builtins(), name) {
			t.Errorf("no built-in profile %s (built-in: %v)", name, Builtins())
		}
	}
}

// The platform profiles hold what their datasheets say, typed here from
// the documents rather than read back from the profiles: NVLink per
// direction is half the bidirectional figure, a copy moves each byte
// twice through HBM, and a NIC of two planes keeps its whole rate in
// link.gbps.
func TestPlatformDatasheetValues(t *testing.T) {
	t.Parallel()
	type want struct {
		nvlinkGBs, domain, linkGbps, nics, gpusPerNIC, planes, sms, memGB, copyGBs float64
	}
	for _, c := range []struct {
		profile string
		want    want
	}{
		// H100 SXM: NVLink 900 GB/s both ways, 132 SMs, 80 GB at 3.35 TB/s;
		// DGX H100: eight ConnectX-7 400G, one a GPU; eight GPUs a domain.
		{"p-h100", want{nvlinkGBs: 900 / 2, domain: 0, linkGbps: 400, nics: 1, gpusPerNIC: 1, planes: 1, sms: 132, memGB: 80, copyGBs: 3350 / 2}},
		// H800 SXM: the H100 with NVLink 400 GB/s both ways.
		{"p-h800", want{nvlinkGBs: 400 / 2, domain: 0, linkGbps: 400, nics: 1, gpusPerNIC: 1, planes: 1, sms: 132, memGB: 80, copyGBs: 3350 / 2}},
		// DGX B200: NVLink 5 1.8 TB/s, 1,440 GB and 64 TB/s over eight,
		// eight ConnectX-7 400G.
		{"p-b200", want{nvlinkGBs: 1800 / 2, domain: 0, linkGbps: 400, nics: 1, gpusPerNIC: 1, planes: 1, sms: 148, memGB: 1440 / 8, copyGBs: 64000 / 8 / 2}},
		// GB200 NVL72: 72 GPUs one NVLink 5 domain, 13.4 TB and 576 TB/s
		// over 72, a ConnectX-7 400G per GPU.
		{"p-gb200", want{nvlinkGBs: 1800 / 2, domain: 72, linkGbps: 400, nics: 1, gpusPerNIC: 1, planes: 1, sms: 148, memGB: 186, copyGBs: 576000 / 72 / 2}},
		// B300: 288 GB at 8 TB/s, NVLink 5; ConnectX-8 800G as two planes
		// of 400G, one a GPU.
		{"p-b300", want{nvlinkGBs: 1800 / 2, domain: 0, linkGbps: 800, nics: 1, gpusPerNIC: 1, planes: 2, sms: 148, memGB: 288, copyGBs: 8000 / 2}},
	} {
		t.Run(c.profile, func(t *testing.T) {
			t.Parallel()
			p, err := Load(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			for name, v := range map[string]float64{
				"nvlink.gbs": c.want.nvlinkGBs, "nvlink.domain_gpus": c.want.domain, "link.gbps": c.want.linkGbps,
				"topo.nics_per_gpu": c.want.nics, "topo.gpus_per_nic": c.want.gpusPerNIC, "topo.planes_per_nic": c.want.planes,
				"gpu.sms": c.want.sms, "gpu.memory_gb": c.want.memGB, "gpu.copy_gbs": c.want.copyGBs,
			} {
				if got := p.Get(name); got != v {
					cst, _ := p.Constant(name)
					t.Errorf("%s = %g (%s), want %g", name, got, cst.Source, v)
				}
			}
		})
	}
}

// A constant says which base set it; the command line's are the
// profile's own, of kind set; a listing of a profile loads again with
// the same lineage.
func TestInheritedFrom(t *testing.T) {
	t.Parallel()
	p := MustLoad("p-h800")
	if p.Base != "p-h100" {
		t.Errorf("Base = %q, want p-h100", p.Base)
	}
	for name, want := range map[string]string{
		"nvlink.gbs":       "",       // the H800's own
		"gpu.sms":          "p-h100", // the H100's datasheet
		"kernel.start_ns":  "p-ib",   // measured on P-IB's H200
		"nic.msg_rate_mps": "p-ib",
	} {
		if got := p.InheritedFrom(name); got != want {
			t.Errorf("InheritedFrom(%s) = %q, want %q", name, got, want)
		}
	}
	q := p.Clone()
	if err := q.ApplySets([]string{"gpu.sms=100"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := q.Constant("gpu.sms"); c.Kind != KindSet || q.InheritedFrom("gpu.sms") != "" {
		t.Errorf("--set gpu.sms: kind %s, inherited from %q; want set, the profile's own", c.Kind, q.InheritedFrom("gpu.sms"))
	}

	data, err := json.Marshal(File{Name: p.Name, Description: p.Description, Constants: p.Constants()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("listing.json", data)
	if err != nil {
		t.Fatal(err)
	}
	r := &Profile{vals: map[string]Constant{}}
	if err := r.mergeFile(part{label: "listing.json", data: data}, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.Constants) != len(p.Constants()) {
		t.Fatalf("the listing has %d constants, the profile %d", len(f.Constants), len(p.Constants()))
	}
	for _, c := range p.Constants() {
		got, _ := r.Constant(c.Name)
		if got != c || r.InheritedFrom(c.Name) != p.InheritedFrom(c.Name) {
			t.Errorf("%s: reloaded as %+v (inherited from %q), want %+v (%q)", c.Name, got, r.InheritedFrom(c.Name), c, p.InheritedFrom(c.Name))
		}
	}
}
