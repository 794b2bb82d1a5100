package sizing_test

import (
	"fmt"

	"moebench/sizing"
)

// Finish judges modelled candidates: the leanest one within the tolerance
// of the fastest is recommended, and the others learn why they lost (the
// proxy to the one RC candidate that beats it on time and every resource).
func ExampleFinish() {
	c := func(i int, name string, us float64, qps, cores int) sizing.Candidate {
		return sizing.Candidate{Index: i, Name: name, Stage: sizing.StageRun, RunBy: i, By: -1,
			Resources: sizing.Resources{QPsPerNIC: qps, ActiveConnPerNIC: qps, Host: map[string]int{"proxy cores/host": cores}, ConnKnee: 1350},
			Figures:   &sizing.Figures{LayerUs: us, Correct: true}}
	}
	res, err := sizing.Finish([]sizing.Candidate{
		c(0, "rc qps=8", 500, 256, 0),
		c(1, "rc qps=1", 510, 32, 0),
		c(2, "proxy T4", 600, 128, 32),
	}, sizing.Limits{Tolerance: 0.05})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("recommended:", res.Candidates[res.Recommended].Name)
	for _, x := range res.Candidates {
		if x.Verdict == sizing.Dominated {
			fmt.Printf("%s: %s\n", x.Name, x.Reason)
		}
	}
	// Output:
	// recommended: rc qps=1
	// proxy T4: rc qps=1 is faster (510 vs 600 µs) with less: proxy cores per host 0 vs 32, active connections per NIC 32 vs 128, QPs per NIC 32 vs 128
}
