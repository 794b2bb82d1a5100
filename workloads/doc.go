// Package workloads names the MoE layer shapes moebench ships with. Each
// preset is a plain value citing the model config or DeepEP test it comes
// from; Get returns a copy that callers may change freely (ranks, tokens,
// redundant experts) before validating it.
package workloads
