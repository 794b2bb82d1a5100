// Package replay runs a routing trace through the layer: it groups a
// trace's records by (step, layer) as they stream in, runs each complete
// group on every preset, hands the group's results to a Sink and folds
// them into an Aggregate. It holds the open groups and the accumulators,
// nothing else, so its memory does not grow with the trace.
//
// In: a traces.Reader, the layer's shape and how to run one routing on a
// preset (Config.Run). Out: a Group per (step, layer) and the Aggregate at
// the end, through the Sink; errors name the trace's record.
package replay
