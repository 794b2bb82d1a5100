// Package sizing answers how many queues, connections, proxy threads and how
// much buffer an expert-parallel deployment needs, from the mechanisms.
//
// In: a Deployment (the layer's shape, mode, routing and background
// traffic), a Space of transport configurations to consider (presets, and
// knob lists by name over the grids each mechanism's transport.Sizer
// declares: RC QPs per peer, DC DCIs per NIC, proxy workers × rings ×
// batch; shared or reserved queues) and Limits (QPs per NIC, GPU memory,
// a target layer time, and bounds on the kinds of resource mechanisms
// declare with a limit, such as a proxy's cores). Resources are weighed
// dearest first: the kinds mechanisms declare dear, then active
// connections, QPs, GPU and host memory.
//
// A command asks for a study as a Request (names and numbers, unchecked);
// Plan checks it in a fixed order, so that of several mistakes the first
// is named, and returns the Study, refusing a wrong input as a
// field.Error that names it (its limits through NewLimits, a knob no
// chosen preset takes as a preset.KnobError); Study.Header is what a
// report's header says of it.
//
// Out: one Candidate per configuration with its resources per NIC, GPU and
// host and, where it was run, its modelled dispatch and combine; the
// Pareto front over layer time and resources; a recommendation with its
// reasons; and for every other candidate why it lost (over the connection
// knee, over a limit, or dominated).
//
// Study.Run first sizes every candidate analytically through the
// transports' estimators (transport.Estimator, where a transport has one;
// the others are sized by their runs): resources, a floor on the
// layer time, and classes of configurations that move the traffic through
// the same busy queues. It rejects what breaks a limit, runs one member of
// each class, runs the most promising candidate of each preset first and
// prunes what that run already beats at the pruned one's floor, then runs
// the rest, in parallel over the cores. Every step depends only on the
// candidates, never on timing, so a study split into shards (Study.Shard)
// and merged (Finish over all shards' candidates) gives exactly the
// unsplit result.
package sizing
