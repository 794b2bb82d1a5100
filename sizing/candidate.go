package sizing

import (
	"fmt"
	"slices"

	"moebench/moe"
	"moebench/transport/preset"
	"moebench/transport/profile"
)

// Deployment is what is being sized: the layer's traffic and where it runs.
type Deployment struct {
	Routing *moe.Routing
	Mode    moe.Mode
	Profile *profile.Profile
	NVLink  bool
	NumSMs  int // 0 = DeepEP's choice
	Chunk   int // normal mode's tokens per write; 0 = the default
	// Background runs beside the layer; with BothQueues each candidate is
	// tried with it on the layer's queues (shared) and on its own
	// (reserved), whatever Background.Reserved says.
	Background moe.Background
	BothQueues bool
	NoPayload  bool // skip the payload checksums in the runs
}

// Channels is how many channels the layer's own traffic posts on: DeepEP
// LL's local experts, normal mode's channels.
func (d *Deployment) Channels() int {
	layer, _ := moe.Channels(d.Routing.Shape, d.Mode, d.NumSMs, moe.Background{})
	return layer
}

// Space is the configurations a study considers: every preset with each
// combination of the knob lists that apply to its mechanism (QPs per peer
// to mini-gda, DCIs to dc, workers, rings and batch to mini-proxy). An
// empty list takes the default grid (see Candidates).
type Space struct {
	Presets                                 []preset.Preset
	QPsPerPeer, DCIs, Workers, Rings, Batch []int
}

// Resources are what a candidate holds, per NIC, per GPU and per host.
type Resources struct {
	QPsPerNIC         int `json:"qps_per_nic"`
	ActiveConnPerNIC  int `json:"active_connections_per_nic"`
	ConnKnee          int `json:"connection_knee"`
	DCIsPerNIC        int `json:"dcis_per_nic"`
	ProxyRings        int `json:"proxy_rings_per_gpu"`
	ProxyWorkers      int `json:"proxy_workers_per_gpu"`
	ProxyCoresPerHost int `json:"proxy_cores_per_host"`
	// Memory per GPU: send queues the GPU writes (in GPU memory), the
	// layer's RDMA buffer by the library's sizing rule (DeepEP's size
	// hint for the mode), and the proxy's rings and send queues (host
	// memory).
	GPUQueueBytes  int64   `json:"gpu_queue_bytes"`
	BufferBytes    int64   `json:"rdma_buffer_bytes"`
	HostQueueBytes int64   `json:"host_queue_bytes"`
	ConnMissRate   float64 `json:"conn_miss_rate"`
	// Estimated: the figures come from the transport's estimate, not from
	// a run (they agree where the estimate is exact).
	Estimated bool `json:"estimated"`
}

// GPUBytes is the memory a candidate takes on each GPU.
func (r Resources) GPUBytes() int64 { return r.GPUQueueBytes + r.BufferBytes }

// cost orders resources from the dearest: proxy cores, then active
// connections (the NIC's context cache), then queues per NIC, then GPU and
// host memory.
func (r Resources) cost() [5]int64 {
	return [5]int64{int64(r.ProxyCoresPerHost), int64(r.ActiveConnPerNIC), int64(r.QPsPerNIC), r.GPUBytes(), r.HostQueueBytes}
}

// noMore reports whether r uses at most what o does, in every resource.
func (r Resources) noMore(o Resources) bool {
	a, b := r.cost(), o.cost()
	for i := range a {
		if a[i] > b[i] {
			return false
		}
	}
	return true
}

// Phase is a modelled phase across ranks, µs.
type Phase struct {
	MeanUs  float64 `json:"mean_us"`
	P99Us   float64 `json:"p99_us"`
	MaxUs   float64 `json:"max_us"`
	BoundBy string  `json:"bound_by"`
}

// Figures are a candidate's modelled layer.
type Figures struct {
	Dispatch Phase `json:"dispatch"`
	Combine  Phase `json:"combine"`
	// LayerUs is dispatch plus combine of the slowest rank: the layer
	// waits for it.
	LayerUs float64 `json:"layer_us"`
	BoundBy string  `json:"bound_by"`
	Correct bool    `json:"correct"`
}

// Stages a candidate reaches in Study.Run.
const (
	StageRejected = "rejected" // broke a limit before running
	StagePruned   = "pruned"   // an earlier run beats its floor with no more resources
	StageClass    = "class"    // moves the traffic as RunBy does: its figures are RunBy's
	StageRun      = "run"      // modelled
	StageFailed   = "failed"   // cannot run (e.g. queues too shallow for the mode)
)

// Verdicts Finish gives.
const (
	Recommended = "recommended"
	Front       = "front"     // on the Pareto front
	Dominated   = "dominated" // another candidate is as fast with no more resources
	Rejected    = "rejected"  // over the knee, over a limit, or cannot run
)

// Candidate is one configuration and what became of it.
type Candidate struct {
	Index     int    `json:"index"`
	Name      string `json:"name"`
	Preset    string `json:"preset"`
	Transport string `json:"transport"`
	// The knobs (0 where they do not apply).
	QPsPerPeer int       `json:"qps_per_peer,omitempty"`
	DCIs       int       `json:"dcis,omitempty"`
	Workers    int       `json:"workers,omitempty"`
	Rings      int       `json:"rings,omitempty"`
	Batch      int       `json:"batch,omitempty"`
	Queues     string    `json:"queues,omitempty"` // the background's: shared or reserved
	Resources  Resources `json:"resources"`
	// FloorUs is the analytic floor on the layer time, FloorBy its
	// mechanism (0 when the transport gives none).
	FloorUs float64 `json:"floor_us"`
	FloorBy string  `json:"floor_by,omitempty"`
	Stage   string  `json:"stage"`
	// RunBy is the candidate whose run gave the figures (itself, or its
	// class's representative); -1 when none.
	RunBy   int      `json:"run_by"`
	Figures *Figures `json:"modelled,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	// By is the candidate a dominated or pruned one loses to; -1 when none.
	By     int    `json:"by"`
	Reason string `json:"reason,omitempty"`

	opts  preset.Options
	pre   preset.Preset
	bg    moe.Background
	class string
	exact bool // the estimate's connection figures are exact
}

func powersUpTo(n int) []int {
	var v []int
	for x := 1; x <= n; x *= 2 {
		v = append(v, x)
	}
	return v
}

func uniq(v []int) []int {
	slices.Sort(v)
	return slices.Compact(v)
}

// Candidates enumerates the space for d, in a fixed order: by preset,
// then knobs ascending, then shared before reserved queues. The default
// grids follow the layer's channels ch: QPs per peer in powers of two up
// to ch, ch itself and 2·ch (DeepEP gives one QP per local expert and
// needs at least one per channel); DCIs in powers of two up to
// max(2·ch, 16); proxy workers 1-16 in powers of two, rings one or eight
// per worker, batches of 1, 4 and 16.
func Candidates(d *Deployment, sp Space) ([]Candidate, error) {
	ch := d.Channels()
	or := func(v, def []int) []int {
		if len(v) > 0 {
			return uniq(slices.Clone(v))
		}
		return uniq(def)
	}
	qps := or(sp.QPsPerPeer, append(powersUpTo(ch), ch, 2*ch))
	dcis := or(sp.DCIs, powersUpTo(max(2*ch, 16)))
	workers := or(sp.Workers, []int{1, 2, 4, 8, 16})
	batch := or(sp.Batch, []int{1, 4, 16})
	for _, l := range []struct {
		name string
		v    []int
	}{{"QPs per peer", qps}, {"DCIs", dcis}, {"workers", workers}, {"rings", sp.Rings}, {"batch", batch}} {
		for _, x := range l.v {
			if x < 1 {
				return nil, fmt.Errorf("%s: %d, want at least 1", l.name, x)
			}
		}
	}
	bgs := []moe.Background{d.Background}
	if d.BothQueues && d.Background.CTAs > 0 {
		sh, rs := d.Background, d.Background
		sh.Reserved, rs.Reserved = false, true
		bgs = []moe.Background{sh, rs}
	}
	if len(sp.Presets) == 0 {
		return nil, fmt.Errorf("no preset to size")
	}
	var out []Candidate
	for _, p := range sp.Presets {
		var opts []preset.Options
		switch p.Mechanism {
		case "mini-gda":
			for _, q := range qps {
				opts = append(opts, preset.Options{QPsPerPeer: q})
			}
		case "dc":
			for _, x := range dcis {
				opts = append(opts, preset.Options{DCIs: x})
			}
		case "mini-proxy":
			for _, t := range workers {
				rings := sp.Rings
				if len(rings) == 0 {
					rings = []int{t, 8 * t}
				}
				for _, r := range uniq(slices.Clone(rings)) {
					if r < t {
						continue // a worker without a ring
					}
					for _, b := range batch {
						opts = append(opts, preset.Options{Workers: t, Rings: r, Batch: b})
					}
				}
			}
		default:
			opts = []preset.Options{{}}
		}
		for _, o := range opts {
			for _, bg := range bgs {
				c := Candidate{Index: len(out), Preset: p.Name, Transport: p.Mechanism, pre: p, bg: bg, RunBy: -1, By: -1,
					QPsPerPeer: o.QPsPerPeer, DCIs: o.DCIs, Workers: o.Workers, Rings: o.Rings, Batch: o.Batch}
				c.Name = p.Name
				switch {
				case o.QPsPerPeer > 0:
					c.Name += fmt.Sprintf(" qps=%d", o.QPsPerPeer)
				case o.DCIs > 0:
					c.Name += fmt.Sprintf(" dcis=%d", o.DCIs)
				case o.Workers > 0:
					c.Name += fmt.Sprintf(" T%d/R%d/B%d", o.Workers, o.Rings, o.Batch)
				}
				if bg.CTAs > 0 {
					c.Queues = "shared"
					if bg.Reserved {
						c.Queues = "reserved"
					}
					c.Name += " " + c.Queues
				}
				// Build the transport as moebench run does: reserved
				// background gets queues beyond the layer's.
				layer, reserved := moe.Channels(d.Routing.Shape, d.Mode, d.NumSMs, bg)
				o.LocalExperts = layer
				if reserved > 0 {
					o.QPsPerPeer, o.Reserved = max(o.QPsPerPeer, layer)+reserved, reserved
				}
				c.opts = o
				out = append(out, c)
			}
		}
	}
	return out, nil
}
