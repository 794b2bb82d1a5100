package sizing

import (
	"fmt"
	"strings"

	"moebench/workloads"
)

// Header is what a study's report header says beside its figures: the
// layer (workloads.Line), its routing, background (as the request named
// it) and presets, compute, the account of its experts' compute when the
// layer carries it ("" when not), and what the layer time and the
// resources are of.
func (st *Study) Header(workload, background, compute string) []string {
	d := &st.Deployment
	s := d.Routing.Shape
	names := make([]string, len(st.Space.Presets))
	for i, p := range st.Space.Presets {
		names[i] = p.Name
	}
	l := []string{
		workloads.Line(workload, s, d.Mode, d.NVLink),
		fmt.Sprintf("routing %s; background %s; presets %s", st.Spec, background, strings.Join(names, ", ")),
	}
	layer := "layer = dispatch + combine of the slowest rank"
	if compute != "" {
		l = append(l, compute)
		layer = "layer = the layer with its experts' compute, its communication exposed or hidden by the overlap"
	}
	return append(l, fmt.Sprintf("%s; resources per NIC, per GPU and per host of %d GPUs", layer, s.GPUsPerNode))
}
