// Package sweep is the points of a run or sweep and their concurrent run
// under the memory budget.
//
// In: a Grid (the layer's shape with lists of ranks, GPUs per node, tokens
// and experts, modes, backgrounds, profile constants to set and mechanism
// knobs), crossed into Points, or a Request naming them (the workload,
// what is given over its shape) that Resolve turns into one; a Sweep (the
// points, the presets, the base profile, the routing, the budget and the
// Layer options every point shares). Out: a Plan of how each point runs
// within the budget (side by side or in turn, its estimate) and Items, one
// per point and preset in serial order (configuration-major), each with
// its results (one per overlap schedule), its headroom against the limits
// it is under and the knobs that vary. Native measures the points on the
// native engine instead (native/layer), the model's prediction beside
// each. Account (Describe's lines and the fabric, launch, faults, compute
// and over-limit notes), DescribeNative and LaunchNote say in a header
// what ran, and Failures which layers failed under their faults. A
// Replayer runs a routing trace's (step, layer) groups (package replay) as
// points of the trace's layer, one at a time under the budget and the
// faults, and renders them as they run.
//
// It also parses what a command line gives as text into the grid's typed
// values: modes, backgrounds, dtypes, profile constants to set (SetAxes),
// compute schedules, limits to run over, and checks faults.
//
// A point that cannot run or be deployed is refused before any layer is
// built (Check, CheckAll over several, a *PointError naming the point): a
// *CheckError carries the point, the preset and the layer's refusal, for
// the caller to name what set it. Errors that are the caller's input are
// marked ErrInput (errors.Is), a field of it named as an internal/field
// error; the package names no flag.
package sweep
