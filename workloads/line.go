package workloads

import (
	"fmt"

	"moebench/moe"
)

// Line is a result header's line on the layer: workload's shape s as it
// runs (its hosts and NVLink domains, the mode, the dtypes where they
// are not the workload's own).
func Line(workload string, s moe.Shape, mode moe.Mode, nvlink bool) string {
	nv := "off"
	if nvlink {
		nv = "on"
	}
	dt := ""
	if w, err := Get(workload); err == nil {
		dt = DTypeNote(s, w.Shape)
	}
	return fmt.Sprintf("workload %s: %d experts, top-%d, hidden %d, %d tokens/rank, EP%d = %s, %s mode, NVLink %s%s",
		workload, s.Physical(), s.TopK, s.Hidden, s.Tokens, s.Ranks, s.Hosts(), mode, nv, dt)
}

// DTypeNote names the dtypes in a header where they are not the
// workload's own, which the workload's name already implies.
func DTypeNote(s, workload moe.Shape) string {
	if s.Dispatch == workload.Dispatch && s.Combine == workload.Combine {
		return ""
	}
	return fmt.Sprintf(", %s dispatch, %s combine", s.Dispatch, s.Combine)
}
