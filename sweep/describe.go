package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"moebench/hw"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/workloads"
)

// Header is what a run's header says beside its points and routing.
type Header struct {
	Workload string
	Limit    string // the group limit in force, as the header says it
	NumSMs   int
	Chunk    int
	Sets     string  // the profile constants set, as the caller names them; "" for none
	Faults   Faults  // the faults the points run under
	Compute  Compute // the experts' compute, none without schedules
}

// Account is a model run's header: Describe's lines, then the first
// point's fabric, the LL launch, the faults, the compute, and the items
// that ran over a limit, each only where it has something to say.
func Account(h Header, base *profile.Profile, points []Point, spec moe.RoutingSpec, items []Item) []string {
	l := Describe(h, points, spec)
	if p, err := WithSets(base, points[0].Sets); err == nil {
		if n := hw.FabricNote(p); n != "" {
			l = append(l, n)
		}
	}
	if n := LaunchNote(base, points, h.NumSMs); n != "" {
		l = append(l, n)
	}
	l = append(l, h.Faults.Note()...)
	l = append(l, h.Compute.Note()...)
	return append(l, OverNotes(items)...)
}

// Describe is a header's account of what ran: the first point's layer,
// its routing and background, how internode normal mode runs, the
// constants set and how many points there were.
func Describe(h Header, points []Point, spec moe.RoutingSpec) []string {
	c := points[0]
	s := c.Shape
	l := []string{
		workloads.Line(h.Workload, s, c.Mode, c.NVLink),
		fmt.Sprintf("routing %s, %s; background %s", spec, h.Limit, c.Background),
	}
	if c.Mode == moe.Normal && s.Domains() > 1 {
		l = append(l, NodeNote(s, h.NumSMs, h.Chunk))
	}
	if h.Sets != "" {
		l = append(l, h.Sets)
	}
	if n := c.Fault.Seeds; n > 0 {
		l = append(l, fmt.Sprintf("sweep: %d configurations × %d fault seeds (first shown above)", len(points)/n, n))
	} else if len(points) > 1 {
		l = append(l, fmt.Sprintf("sweep: %d configurations (first shown above)", len(points)))
	}
	return l
}

// NodeNote says how internode normal mode runs: channels and DeepEP's
// chunk and buffer sizes for the rank count.
func NodeNote(s moe.Shape, numSMs, chunk int) string {
	qps, _ := moe.Channels(s, moe.Normal, numSMs, moe.Background{})
	d, c := moe.NodeConfigs(s.Ranks, chunk)
	return fmt.Sprintf("normal mode across nodes: %d channels (num_sms/2); per write/batch, dispatch %d RDMA / %d NVLink tokens, combine %d / %d; RDMA buffers of %d tokens",
		qps/2, d.RDMAChunk, d.NVLChunk, c.RDMAChunk, c.NVLChunk, d.RDMABuf)
}

// LaunchNote says when an LL point's experts outnumber the warp groups
// DeepEP's kernels launch (32 per SM): the library refuses such a layer,
// and the model runs it with each warp group serving its experts in turn.
// "" when every point launches as DeepEP does.
func LaunchNote(base *profile.Profile, points []Point, numSMs int) string {
	var over []string
	for _, c := range points {
		if c.Mode != moe.LL {
			continue
		}
		p, err := WithSets(base, c.Sets)
		if err != nil {
			continue
		}
		n, beyond := moe.LLBeyondDeepEP(c.Shape, numSMs, int(p.Get("gpu.sms")))
		if e := fmt.Sprintf("%d experts over %d", c.Shape.Physical(), n); beyond && !slices.Contains(over, e) {
			over = append(over, e)
		}
	}
	if len(over) == 0 {
		return ""
	}
	return "ll launch: more experts than the launch's warp groups (32 per SM): " + strings.Join(over, ", ") +
		"; DeepEP's LL kernels give each expert its own and refuse such a layer, modelled here with each warp group serving its experts in turn"
}

// OverNotes are a header's lines for items run over a limit.
func OverNotes(items []Item) []string {
	var notes []string
	for _, it := range items {
		for _, u := range it.Limits {
			if u.Over {
				notes = append(notes, fmt.Sprintf("RUN OVER A LIMIT: %s%s over %s: %s %s, more than %s (%s)",
					it.Preset.Name, pointOf(it), u.Name, usageFigure(u, u.Used), u.What, usageFigure(u, u.Limit), u.Source))
			}
		}
	}
	return notes
}

// pointOf names a swept item's point, "" for a run's.
func pointOf(it Item) string {
	var s []string
	for _, k := range it.Swept {
		s = append(s, k.Name+" "+k.Value)
	}
	if len(s) == 0 {
		return ""
	}
	return " at " + strings.Join(s, ", ")
}

// usageFigure prints v as u counts it: bytes in decimal gigabytes, as
// GPU memory is sold, counts whole.
func usageFigure(u moe.Usage, v int64) string {
	if strings.Contains(u.What, "bytes") {
		return report.Num(float64(v)/1e9) + " GB"
	}
	return strconv.FormatInt(v, 10)
}
