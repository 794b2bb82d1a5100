package shard_test

import (
	"fmt"

	"moebench/internal/shard"
)

// A task of a 16-task Slurm job array numbered from 1 runs every 16th
// point, starting with the fourth.
func ExampleParse() {
	env := map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "16", "SLURM_ARRAY_TASK_MIN": "1"}
	s, err := shard.Parse("auto", func(k string) string { return env[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("shard %d of %d (%s): %d of 100 points, point 3 here: %v, point 19 here: %v\n", s.Index, s.Count, s.From, s.Size(100), s.Has(3), s.Has(19))
	// Output: shard 3 of 16 (Slurm array task 4): 7 of 100 points, point 3 here: true, point 19 here: true
}
