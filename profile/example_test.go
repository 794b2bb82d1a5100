package profile_test

import (
	"fmt"

	"moebench/profile"
)

func ExampleLoad() {
	p, err := profile.Load("p-ib")
	if err != nil {
		panic(err)
	}
	c, _ := p.Constant("nic.msg_rate_mps")
	fmt.Printf("%s = %g %s (%s)\n", c.Name, c.Value, c.Unit, c.Source)
	if err := p.ApplySets([]string{"gpu.sm_clock_mhz=1500"}); err != nil {
		panic(err)
	}
	fmt.Println(p.Get("gpu.sm_clock_mhz"))
	// Output:
	// nic.msg_rate_mps = 260 Mmsg/s (Table 5 / §4.3.1: 260 M msg/s NIC ceiling on P-IB)
	// 1500
}
