package preset

import (
	"fmt"
	"slices"
	"strings"

	"moebench/transport"
	"moebench/transport/gda"
)

// Preset is a named transport configuration.
type Preset struct {
	Name        string
	Mechanism   string // mini-gda, mini-proxy or dc
	Description string
	Source      string
	build       func(Options) (transport.Transport, error)
}

// Options are the workload-dependent knobs a preset may take: DeepEP's LL
// kernels need one QP per destination local expert.
type Options struct {
	LocalExperts int // experts per rank, for presets that map QPs to them
	QPsPerPeer   int // 0 = the preset's own choice
}

// Transport builds the preset's transport for a workload.
func (p Preset) Transport(o Options) (transport.Transport, error) { return p.build(o) }

func gdaPreset(name, desc, src string, cfg gda.Config, perExpert bool) Preset {
	return Preset{Name: name, Mechanism: "mini-gda", Description: desc, Source: src,
		build: func(o Options) (transport.Transport, error) {
			c := cfg
			c.Name = name
			if perExpert && o.LocalExperts > 0 {
				c.QPsPerPeer = max(c.QPsPerPeer, o.LocalExperts)
			}
			if o.QPsPerPeer > 0 {
				c.QPsPerPeer = o.QPsPerPeer
			}
			if err := c.Validate(); err != nil {
				return nil, fmt.Errorf("preset %s: %w", name, err)
			}
			return c.Transport(), nil
		}}
}

// all lists the presets; extra registers those of other mechanisms.
func all() []Preset {
	base := gda.DefaultConfig()
	ps := []Preset{
		gdaPreset("mini-gda", "minimal GPU submission: one QP per destination local expert, GPU-scope fence, a doorbell per WQE, reservation-order publication",
			"paper §4 (mini-gda), Table 3", base, true),
		gdaPreset("deepep-v1", "DeepEP V1 LL over NVSHMEM IBGDA: QP = destination local expert, doorbell every 4th message, GPU-scope release ordering, per-QP completion",
			"deepep.md (QPs and doorbells); paper Table 1, §3.2", withDB(withOrder(base, gda.OrderReleaseGPU), 4), true),
		gdaPreset("nvshmem-ibgda", "NVSHMEM IBGDA defaults: two RC QPs per peer, __threadfence ordering, doorbell deferred up to 32 ready WQEs",
			"paper Table 1 and Table 3 (NVSHMEM: two RC QPs per peer; default batch 32)", withQPs(withDB(withOrder(base, gda.OrderThreadFence), 32), 2), false),
		gdaPreset("gdaki", "NCCL GIN GDAKI: one context with one RC QP per peer, GPU-scope fence, per-thread reservation-order publication, no aggregation",
			"paper Table 1 and Table 3 (GDAKI: one context, one RC QP per peer)", withQPs(base, 1), false),
	}
	dcCfg := base
	dcCfg.DCIs, dcCfg.DCTs = 16, 1
	one := dcCfg
	one.DCIs = 1
	ps = append(ps,
		Preset{Name: "dc", Mechanism: "dc", Description: "mini-gda over Dynamically Connected transport: 16 DCIs per NIC picked by the channel, one DCT per PE, a 16 B address vector in every WQE",
			Source: "paper §3.4, Fig. 2 (compact AV), §4.3.3 (16 DCIs, 1-8 DCTs per PE)", build: dcBuild("dc", dcCfg)},
		Preset{Name: "dc-1dci", Mechanism: "dc", Description: "DC with a single DCI per NIC: every change of destination re-targets it (NVSHMEM with one DCI, Table 8)",
			Source: "paper Table 8 (1 DCI requested)", build: dcBuild("dc-1dci", one)},
	)
	return append(ps, extra...)
}

func dcBuild(name string, cfg gda.Config) func(Options) (transport.Transport, error) {
	return func(o Options) (transport.Transport, error) {
		c := cfg
		c.Name = name
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("preset %s: %w", name, err)
		}
		return c.Transport(), nil
	}
}

// extra holds presets of the other mechanisms, added by their files.
var extra []Preset

func withOrder(c gda.Config, o gda.Ordering) gda.Config { c.Ordering = o; return c }
func withDB(c gda.Config, n int) gda.Config             { c.PerDoorbell = n; return c }
func withQPs(c gda.Config, n int) gda.Config            { c.QPsPerPeer = n; return c }

// Names lists the presets.
func Names() []string {
	var n []string
	for _, p := range all() {
		n = append(n, p.Name)
	}
	return n
}

// Get returns a preset by name.
func Get(name string) (Preset, error) {
	for _, p := range all() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(Names(), ", "))
}

// All returns every preset in a stable order.
func All() []Preset {
	ps := all()
	slices.SortStableFunc(ps, func(a, b Preset) int { return strings.Compare(a.Mechanism, b.Mechanism) })
	return ps
}
