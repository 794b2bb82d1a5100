package main

import (
	"fmt"
	"strings"
)

// badInputsRefusals are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
//
// Refusals before work: what depends only on the configuration is refused
// before any routing is generated or layer built (these took from seconds
// to minutes and gigabytes, refused after the simulation or inside it),
// and deployments a GPU or NIC cannot hold are refused, not modelled.
func badInputsRefusals() []badInput {
	// A trace of a million experts on 32 ranks, one token each.
	var big strings.Builder
	big.WriteString(`{"format":"moebench-trace","version":1,"id_space":"logical","experts":1048576,"top_k":2,"layers":1,"ep_size":32}` + "\n")
	for r := range 32 {
		fmt.Fprintf(&big, `{"step":0,"layer":0,"rank":%d,"topk_idx":[[1,2]]}`+"\n", r)
	}
	ep2048 := []string{"--ranks", "2048", "--experts", "2048"}
	with := func(args ...[]string) []string {
		var out []string
		for _, a := range args {
			out = append(out, a...)
		}
		return out
	}
	return []badInput{
		// Queue depth: depends on --tokens and the mechanism alone.
		{name: "refusals run QP depth at 2048 ranks", args: with([]string{"run"}, ep2048, []string{"--tokens", "1024", "--transport", "dc"}), code: 2, msg: "--tokens: QP depth too small"},
		{name: "refusals sweep QP depth of one point at 2048 ranks", args: with([]string{"sweep"}, ep2048, []string{"--tokens", "8,1024", "--transport", "dc"}), code: 2, msg: "EP2048 × 1024 tokens"},
		{name: "refusals size QP depth at 1024 ranks", args: []string{"size", "--ranks", "1024", "--experts", "1024", "--tokens", "1024", "--transport", "dc"}, code: 1, msg: "no candidate meets the limits"},
		{name: "refusals run topk beyond LL's warps at 2048 ranks", args: with([]string{"run"}, ep2048, []string{"--tokens", "1024", "--topk", "33", "--transport", "mini-gda"}), code: 2, msg: "--topk: 33"},

		// A --set nothing reads: refused before the layer is built.
		{name: "refusals run set unread at 2048 ranks", args: with([]string{"run"}, ep2048, []string{"--transport", "mini-gda", "--set", "proxy.base_publish_ns=1"}), code: 2, msg: "--set proxy.base_publish_ns"},
		{name: "refusals sweep set unread at 2048 ranks", args: with([]string{"sweep", "--ranks", "16,2048", "--experts", "2048", "--transport", "mini-gda", "--set", "proxy.base_publish_ns=1"}), code: 2, msg: "--set proxy.base_publish_ns"},
		{name: "refusals size set unread at 1024 ranks", args: []string{"size", "--ranks", "1024", "--experts", "1024", "--transport", "mini-gda", "--qps-per-peer", "1,2", "--set", "proxy.base_publish_ns=1"}, code: 2, msg: "--set proxy.base_publish_ns"},

		// Deployments no GPU or NIC holds.
		{name: "refusals run a million experts' buffers", args: []string{"run", "--experts", "1000000", "--ranks", "16", "--topk", "8", "--transport", "mini-gda"}, code: 2, msg: "gpu.memory_gb = 141"},
		{name: "refusals run a million experts on a proxy", args: []string{"run", "--experts", "1000000", "--ranks", "16", "--topk", "8", "--transport", "mini-proxy"}, code: 2, msg: "--experts 1000000, --tokens 128"},
		{name: "refusals run a million QPs per NIC", args: []string{"run", "--experts", "1000000", "--ranks", "16", "--topk", "8", "--tokens", "1", "--transport", "mini-gda"}, code: 2, msg: "nic.max_qps = 131072"},
		{name: "refusals run QPs per peer beyond the NIC", args: []string{"run", "--transport", "mini-gda", "--qps-per-peer", "10000"}, code: 2, msg: "--qps-per-peer 10000"},
		{name: "refusals run a million DCIs", args: []string{"run", "--transport", "dc", "--dcis", "1000000"}, code: 2, msg: "--dcis 1000000"},
		{name: "refusals sweep a million DCIs at one point", args: []string{"sweep", "--transport", "dc", "--dcis", "16,1000000"}, code: 2, msg: "--dcis 1000000"},
		{name: "refusals run normal mode's buffers beyond the GPU", args: []string{"run", "--mode", "normal", "--hidden", "6000000", "--transport", "mini-gda"}, code: 2, msg: "normal-mode buffers"},
		{name: "refusals run a GPU of one gigabyte", args: []string{"run", "--set", "gpu.memory_gb=1", "--transport", "mini-gda"}, code: 2, msg: "more than the GPU's 1.000 GB"},
		{name: "refusals replay a million experts' buffers", args: []string{"replay", "--trace", "big.jsonl", "--hidden", "65536", "--transport", "mini-gda"},
			files: fileOf("big.jsonl", big.String()), code: 2, msg: "gpu.memory_gb = 141"},
	}
}
