// Package replay runs a routing trace through the layer: it groups a
// trace's records by (step, layer) as they stream in, runs each complete
// group on every preset, hands the group's results to a Sink and folds
// them into an Aggregate. It holds the open groups and the accumulators,
// nothing else, so its memory does not grow with the trace.
//
// In: Options (the layer around the trace, what of its header to
// override, the limits, the presets) and a traces.Reader, which New
// resolves into a Replay: the layer's shape from the header and the
// options, the group limit, the header's account (Notes); Replay.Run then
// runs one routing on a preset through the caller's function (the run
// under the caller's memory budget and faults). Config and Run are the
// grouping alone, for a caller that resolved its own layer. Out: a Group
// per (step, layer) and the Aggregate at the end, through the Sink; errors
// name the trace's record, and those the caller must fix wrap ErrInput
// (an option's with its field, internal/field).
package replay
