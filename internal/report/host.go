package report

import (
	"fmt"
	"runtime"

	"github.com/klauspost/cpuid/v2"
)

// Host describes the machine a report was produced on. Modelled figures do
// not depend on it, but run times and measured figures do, and a reader
// comparing two reports should see where each came from.
type Host struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"physical_cores"`
	Threads int    `json:"logical_cores"`
	// Usable is how many of them this process may run on (its CPU
	// affinity). In a virtual machine cpuid can describe the whole host:
	// a 2-CPU guest reads 254 cores.
	Usable int    `json:"usable_cpus,omitempty"`
	MHz    int64  `json:"base_mhz,omitempty"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Go     string `json:"go"`
}

// LocalHost reads the processor facts with cpuid.
func LocalHost() Host {
	c := cpuid.CPU
	name := c.BrandName
	if name == "" {
		name = c.VendorString
	}
	return Host{
		CPU:     name,
		Cores:   c.PhysicalCores,
		Threads: c.LogicalCores,
		Usable:  runtime.NumCPU(),
		MHz:     c.Hz / 1_000_000,
		OS:      runtime.GOOS,
		Arch:    runtime.GOARCH,
		Go:      runtime.Version(),
	}
}

func (h Host) String() string {
	s := fmt.Sprintf("%s, %d cores / %d threads", h.CPU, h.Cores, h.Threads)
	if h.Usable > 0 && h.Usable != h.Threads {
		s += fmt.Sprintf(" (%d usable)", h.Usable)
	}
	if h.MHz > 0 {
		s += fmt.Sprintf(", %d MHz", h.MHz)
	}
	return s + ", " + h.OS + "/" + h.Arch
}
