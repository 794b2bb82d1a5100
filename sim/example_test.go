package sim_test

import (
	"fmt"

	"moebench/sim"
)

// pinger sends a message across a link every 100 ns and reports arrivals.
type pinger struct {
	id   sim.HandlerID
	left int
}

func (p *pinger) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case 0: // send
		e.After(350*sim.Nanosecond, p.id, 1, arg) // one-way latency
		if p.left--; p.left > 0 {
			e.After(100*sim.Nanosecond, p.id, 0, arg+1)
		}
	case 1: // arrive
		fmt.Printf("message %d arrived at %v\n", arg, e.Now())
	}
}

func Example() {
	var e sim.Engine
	p := &pinger{left: 3}
	p.id = e.Register(p)
	e.At(0, p.id, 0, 0)
	e.Run()
	fmt.Println(e.Handled(), "events")
	// Output:
	// message 0 arrived at 350ns
	// message 1 arrived at 450ns
	// message 2 arrived at 550ns
	// 6 events
}
