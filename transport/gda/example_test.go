package gda_test

import (
	"fmt"

	"moebench/profile"
	"moebench/transport/gda"
)

// One 8 B inline write with a GPU-scope fence, and the same with a
// system-scope fence: the ordering is most of the issue time.
func ExampleSingleOp() {
	p := profile.MustLoad("p-ib")
	for _, o := range []gda.Ordering{gda.OrderGPUFence, gda.OrderFenceSys} {
		r, err := gda.SingleOp(p, gda.SingleConfig{Ordering: o, Payload: 8, Inline: true})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-9s issue %.2f µs, put+completion %.2f µs\n", o, r.Issue.Us(), r.PutC.Us())
	}
	// Output:
	// gpu-fence issue 0.70 µs, put+completion 4.02 µs
	// fence-sys issue 2.62 µs, put+completion 5.94 µs
}

// A warp that reserves, builds and rings once per 32 WQEs on one QP.
func ExampleRate() {
	v, err := gda.Rate(profile.MustLoad("p-ib"), gda.RateConfig{Threads: 32, QPs: 1, SMs: 1, PerDoorbell: 32,
		Style: gda.PubCoop, Ordering: gda.OrderGPUFence, Payload: 8, Inline: true, Depth: 1024})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.1f M msg/s\n", v)
	// Output:
	// 21.1 M msg/s
}
