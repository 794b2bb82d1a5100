package transport

import "slices"

// Resource is a kind of thing a mechanism's transports hold beyond what
// every transport reports (QPs and active connections per NIC, queue
// memory), declared to the seam by a Holder: its transports count it in
// Resources.Own under Name, the reports show it as a column, and a
// sizing study shows, weighs and limits it as declared here.
type Resource struct {
	// Name is the Resources.Own key and the reports' column: what, and
	// per what where it is not per rank (e.g. "DCIs/NIC").
	Name string
	// Field is its CSV and JSON key in a sizing study, e.g. "dcis_per_nic".
	Field string
	// Words say what one counts and per what, for limits and reasons,
	// e.g. "proxy workers per GPU".
	Words string
	// Queues, when set, says these are the NIC's send queues in place of
	// RC QPs (DC's initiators: "DCIs"), which the NIC's QP limit counts;
	// Knob is the knob that sets them.
	Queues, Knob string

	// Sizing.

	// Size: the study's table shows it, as its host figure where it has
	// one.
	Size bool
	// Host names the figure per host of a resource counted per GPU (its
	// value times the GPUs a host holds), e.g. "proxy cores/host", and
	// HostField is its CSV and JSON key; "" = none.
	Host, HostField string
	// Dear: a study weighs it (its host figure where it has one) before
	// anything a NIC holds, as scarcer (a proxy's CPU cores). Otherwise it
	// weighs only through the figures every transport reports (DCIs are
	// counted among QPs per NIC too).
	Dear bool
	// Held and None are a study's reason lines: Held a format of the value
	// and its host figure (e.g. "%d proxy cores per GPU, %d per host"),
	// None what a candidate that holds none of it does instead.
	Held, None string
	// Limit, when set, is a bound a user may put on it in a study.
	Limit *Limit
}

// Limit is a bound a sizing study takes on a declared resource, per
// Resource.Words.
type Limit struct {
	Flag string // the command's flag, e.g. "proxy-cores" (-1 = no limit)
	Help string // the flag's help
}

// PerHost is the resource's figure for a host of gpus GPUs, given its
// value v (per GPU where it has a host figure).
func (r Resource) PerHost(v, gpus int) int {
	if r.Host == "" {
		return v
	}
	return v * gpus
}

// Holder is implemented by mechanisms whose transports hold resources of
// kinds of their own (Resources.Own).
type Holder interface {
	Holds() []Resource
}

// Held is every resource a registered mechanism declares, once each by
// name (the first declaration wins), in registration order.
func Held() []Resource { return HeldBy(nil) }

// HeldBy is Held of the registered mechanisms named in names (all where
// names is nil): what a report of their transports shows.
func HeldBy(names []string) []Resource {
	var out []Resource
	for _, m := range Mechanisms() {
		h, ok := m.(Holder)
		if !ok || (names != nil && !slices.Contains(names, m.Name())) {
			continue
		}
		for _, r := range h.Holds() {
			if !slices.ContainsFunc(out, func(o Resource) bool { return o.Name == r.Name }) {
				out = append(out, r)
			}
		}
	}
	return out
}

// Footprint is implemented by mechanisms whose layers hold more in the
// simulation than a send queue per peer for each channel: what a layer
// costs, declared so that a command can refuse one over its memory
// budget before it runs (moe.EstimateCost).
type Footprint interface {
	// SimCost is the state of a layer of ranks ranks posting on channels
	// channels with the knob settings s (the largest a command tries; a
	// knob the mechanism does not take is ignored, one not set takes a
	// bound on the mechanism's presets).
	SimCost(ranks, channels int, s Settings) SimCost
}

// SimCost is what a mechanism's state adds to a simulated layer, over all
// ranks.
type SimCost struct {
	// Queues are send queues, each with its GPU and NIC counters.
	Queues int64
	// Bytes are the mechanism's other state: rings, DC initiators.
	Bytes float64
	// Side and InTurn are what the mechanism keeps per LL operation beyond
	// the workload's own (a proxy's records, producers and worker
	// queues), with dispatch and combine side by side and in turn.
	Side, InTurn OpBytes
}

// OpBytes are bytes per LL selection and per (rank, expert) pair.
type OpBytes struct {
	PerSel, PerPair float64
}

// CostOf is the SimCost of the mechanism named name, or of one that
// declares no Footprint: a queue per peer for each channel, at least
// four, as the simulation's memory fit counts them.
func CostOf(name string, ranks, channels int, s Settings) SimCost {
	if m, err := Lookup(name); err == nil {
		if f, ok := m.(Footprint); ok {
			return f.SimCost(ranks, channels, s)
		}
	}
	r := int64(ranks)
	return SimCost{Queues: r * r * int64(max(channels, 4))}
}
