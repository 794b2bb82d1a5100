package sizing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport"
	"moebench/transport/preset"
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
	// InTurn runs LL dispatch and combine in turn (moe.LayerConfig.InTurn):
	// for layers too large to hold both at once, --jobs of them.
	InTurn bool
	// Compute, when set, puts the experts' compute into every candidate's
	// layer under its overlap schedule: candidates then compare by the
	// layer's time with it, in which only exposed communication differs.
	Compute *moe.ComputeConfig
}

// Channels is how many channels the layer's own traffic posts on: DeepEP
// LL's local experts, normal mode's channels.
func (d *Deployment) Channels() int {
	layer, _ := moe.Channels(d.Routing.Shape, d.Mode, d.NumSMs, moe.Background{})
	return layer
}

// Space is the configurations a study considers: every preset with each
// combination of the knob lists (by knob name) that its mechanism sizes.
// A knob without a list takes the mechanism's default grid
// (transport.Sizer).
type Space struct {
	Presets []preset.Preset
	Knobs   map[string][]int
}

// Resources are what a candidate holds, per NIC, per GPU and per host.
type Resources struct {
	QPsPerNIC        int `json:"qps_per_nic"`
	ActiveConnPerNIC int `json:"active_connections_per_nic"`
	ConnKnee         int `json:"connection_knee"`
	// Memory per GPU: send queues the GPU writes (in GPU memory), the
	// layer's RDMA buffer by the library's sizing rule (DeepEP's size
	// hint for the mode), and the proxy's rings and send queues (host
	// memory).
	GPUQueueBytes  int64   `json:"gpu_queue_bytes"`
	BufferBytes    int64   `json:"rdma_buffer_bytes"`
	HostQueueBytes int64   `json:"host_queue_bytes"`
	ConnMissRate   float64 `json:"conn_miss_rate"`
	// Own is what the mechanism holds beyond these, by name
	// (transport.Resources.Own): the kinds it declares
	// (transport.Resource) and any others.
	Own map[string]int `json:"own,omitempty"`
	// Host is, for each declared kind counted per GPU that has a figure
	// per host (transport.Resource.Host), that figure, by its name.
	Host map[string]int `json:"own_per_host,omitempty"`
	// Estimated: the figures come from the transport's estimate, not from
	// a run (they agree where the estimate is exact).
	Estimated bool `json:"estimated"`
}

// GPUBytes is the memory a candidate takes on each GPU.
func (r Resources) GPUBytes() int64 { return r.GPUQueueBytes + r.BufferBytes }

// Figure is what r holds of the declared kind d: its host figure where
// it has one.
func (r Resources) Figure(d transport.Resource) int {
	if d.Host != "" {
		return r.Host[d.Host]
	}
	return r.Own[d.Name]
}

// weight is one entry of a study's order of resources.
type weight struct {
	name  string // for reasons, e.g. "proxy cores per host"
	bytes bool
}

// weights orders resources from the dearest: the kinds the mechanisms
// declare dear (a proxy's cores), then active connections (the NIC's
// context cache), then queues per NIC, then GPU and host memory.
func weights() ([]weight, []transport.Resource) {
	var w []weight
	var dear []transport.Resource
	for _, d := range transport.Held() {
		if d.Dear {
			name := d.Name
			if d.Host != "" {
				name = d.Host
			}
			dear = append(dear, d)
			w = append(w, weight{name: strings.ReplaceAll(name, "/", " per ")})
		}
	}
	return append(w, weight{name: "active connections per NIC"}, weight{name: "QPs per NIC"},
		weight{name: "GPU memory", bytes: true}, weight{name: "host memory", bytes: true}), dear
}

// cost is r in the order of weights.
func (r Resources) cost() []int64 {
	_, dear := weights()
	c := make([]int64, 0, len(dear)+4)
	for _, d := range dear {
		c = append(c, int64(r.Figure(d)))
	}
	return append(c, int64(r.ActiveConnPerNIC), int64(r.QPsPerNIC), r.GPUBytes(), r.HostQueueBytes)
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
	// waits for it. With the experts' compute it is the layer's time with
	// it, and CommUs the two phases' as before.
	LayerUs float64 `json:"layer_us"`
	// With the experts' compute: the busiest rank's compute, the
	// communication it leaves exposed, and the two phases alone.
	ComputeUs float64 `json:"compute_us,omitempty"`
	ExposedUs float64 `json:"exposed_us,omitempty"`
	CommUs    float64 `json:"comm_us,omitempty"`
	BoundBy   string  `json:"bound_by"`
	Correct   bool    `json:"correct"`
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
	// Knobs are the mechanism's settings (by knob name) the candidate
	// tries.
	Knobs     transport.Settings `json:"knobs,omitempty"`
	Queues    string             `json:"queues,omitempty"` // the background's: shared or reserved
	Resources Resources          `json:"resources"`
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
	// Headroom is what the candidate takes of each limit it is under
	// (moe.Headroom), from its configuration before any run.
	Headroom []moe.Usage `json:"headroom,omitempty"`

	needs transport.Needs
	pre   preset.Preset
	bg    moe.Background
	class string
	exact bool // the estimate's connection figures are exact
}

// Candidates enumerates the space for d, in a fixed order: by preset,
// then its mechanism's configurations as it lists them (knobs ascending),
// then shared before reserved queues. A preset whose mechanism does not
// size (no transport.Sizer) is one candidate as it stands.
func Candidates(d *Deployment, sp Space) ([]Candidate, error) {
	ch := d.Channels()
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
		m, err := transport.Lookup(p.Mechanism)
		if err != nil {
			return nil, fmt.Errorf("preset %s: %w", p.Name, err)
		}
		space := []transport.Sized{{}}
		if sz, ok := m.(transport.Sizer); ok {
			if space, err = sz.SizeSpace(ch, sp.Knobs); err != nil {
				return nil, fmt.Errorf("preset %s: %w", p.Name, err)
			}
		}
		for _, o := range space {
			for _, bg := range bgs {
				c := Candidate{Index: len(out), Preset: p.Name, Transport: p.Mechanism, pre: p, bg: bg, RunBy: -1, By: -1, Knobs: o.Settings}
				c.Name = p.Name
				if o.Label != "" {
					c.Name += " " + o.Label
				}
				// Build the transport as moebench run does: reserved
				// background gets queues beyond the layer's, which the
				// name counts apart from the knobs' (the layer's own).
				layer, reserved := moe.Channels(d.Routing.Shape, d.Mode, d.NumSMs, bg)
				c.needs = transport.Needs{Channels: layer, Reserved: reserved}
				switch {
				case bg.CTAs > 0 && bg.Reserved:
					c.Queues = "reserved"
					c.Name += fmt.Sprintf(" +%d reserved", reserved)
				case bg.CTAs > 0:
					c.Queues = "shared"
					c.Name += " shared"
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// LargestCosts are the estimated costs of a study's largest candidate on
// each mechanism presets use, in their order: the knobs given at their
// largest values (knobs the study was not given keep the mechanism's
// defaults), so that a budget can refuse the study before anything runs.
func LargestCosts(s moe.Shape, mode moe.Mode, presets []preset.Preset, given map[string][]int) []moe.Cost {
	big := transport.Settings{}
	for n, v := range given {
		if len(v) > 0 {
			big[n] = strconv.Itoa(slices.Max(v))
		}
	}
	var costs []moe.Cost
	var seen []string
	for _, p := range presets {
		if slices.Contains(seen, p.Mechanism) {
			continue
		}
		seen = append(seen, p.Mechanism)
		costs = append(costs, moe.EstimateCost(s, mode, transport.CostOf(p.Mechanism, s.Ranks, s.LocalExperts(), big)))
	}
	return costs
}
