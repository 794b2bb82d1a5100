package main

import "moebench/moe"

// phases are a result's two phases by name, in the order reported.

func phases(r *moe.Result) []struct {
	name string
	p    *moe.Phase
} {
	return []struct {
		name string
		p    *moe.Phase
	}{{"dispatch", &r.Dispatch}, {"combine", &r.Combine}}
}
