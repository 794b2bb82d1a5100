package mech

import (
	"fmt"
	"testing"

	"moebench/transport/profile"
)

func TestPrintRows(t *testing.T) {
	p := profile.MustLoad("p-ib")
	exps, _ := Select([]string{"single-op", "ordering", "inline", "rate", "completion-scope"})
	var all []Row
	for _, e := range exps {
		rows, err := e.Run(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			fmt.Printf("%-18s %-48s %-28s paper %8.3f model %8.3f err %5.1f%%\n", r.Experiment, r.Case, r.Metric, r.Paper, r.Model, 100*r.RelErr())
		}
		all = append(all, rows...)
	}
	fmt.Printf("%+v\n", Summarize(all))
}
