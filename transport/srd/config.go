package srd

import "fmt"

// Style is how work requests reach the EFA device.
type Style int

const (
	// GPU: the GPU builds WQEs and rings the doorbell (EFA DP Direct).
	GPU Style = iota
	// Proxy: CPU workers post what GPU threads put in host rings.
	Proxy
)

func (s Style) String() string {
	if s == Proxy {
		return "proxy"
	}
	return "gpu"
}

// Config is an SRD transport: its posting style, its SRD QPs per EFA
// device, a proxy's workers and rings, and the library's software costs
// beyond the mechanism.
type Config struct {
	Style     Style
	QPsPerNIC int // SRD QPs a rank opens on each of its EFA devices
	// Proxy only: CPU workers per rank, and descriptor rings per rank
	// (ring = channel mod Rings, worker = ring mod Workers).
	Workers, Rings int
	// GPU posting: library software per post beyond the mechanism, as
	// SM cycles plus fixed time.
	LibCycles, LibNs float64
	// Proxy posting: library software per work request on the worker
	// beyond reading the descriptor and the device's post (libfabric's
	// endpoint and address-vector lookups), in ns at the worker's clock.
	HostNs float64
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case c.QPsPerNIC < 1:
		return fmt.Errorf("srd: QPs per EFA device must be at least 1, got %d", c.QPsPerNIC)
	case c.QPsPerNIC > maxQPs:
		return fmt.Errorf("srd: %d QPs per EFA device, more than the %d the model takes", c.QPsPerNIC, maxQPs)
	case c.Style == Proxy && c.Workers < 1:
		return fmt.Errorf("srd: a proxy needs at least one worker, got %d", c.Workers)
	case c.Style == Proxy && c.Rings < c.Workers:
		return fmt.Errorf("srd: %d rings for %d workers leave a worker without a ring", c.Rings, c.Workers)
	case c.Style != GPU && c.Style != Proxy:
		return fmt.Errorf("srd: unknown posting style %d", int(c.Style))
	case c.LibCycles < 0 || c.LibNs < 0 || c.HostNs < 0:
		return fmt.Errorf("srd: library costs must not be negative (got %v cycles, %v ns, %v host ns)", c.LibCycles, c.LibNs, c.HostNs)
	}
	return nil
}

// maxQPs bounds the SRD QPs per device: EFA devices expose a few hundred
// QPs in all, and a rank opens a handful.
const maxQPs = 256

// WQEBytes is an EFA send WQE (rdma-core's efa_io_tx_wqe: a 32 B meta
// descriptor and 32 B of remote address and local buffer): four 16 B
// stores from the GPU.
const WQEBytes = 64

// descBytes is a proxy's descriptor in its host ring (UCCL-EP's
// TransferCmd is 16 B).
const descBytes = 16

// ringSlots is a proxy ring's descriptors (UCCL-EP's kQueueSize).
const ringSlots = 2048

// SQDepth is the WQEs of one SRD send queue (EFA's max_sq_wr).
const SQDepth = 4096
