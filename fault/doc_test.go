package fault_test

import (
	"fmt"

	"moebench/fault"
)

func ExampleParse() {
	p, err := fault.Parse([]string{"loss:1e-4", "slow:3:2,flap:5:50us+2ms"}, 7)
	if err != nil {
		panic(err)
	}
	fmt.Println(p)
	fmt.Println(p.SlowFactor(3), p.SlowFactor(4))
	fmt.Printf("%.6f\n", p.PacketLoss(true))
	// Output:
	// loss:0.0001@host,loss:0.0001@spine,slow:3:2,flap:5:50us+2ms
	// 2 1
	// 0.000400
}
