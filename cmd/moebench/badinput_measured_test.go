package main

import (
	"os"
	"path/filepath"
)

// badInputsMeasured are the cases of a user's runs of DeepEP's tests
// (validate --against deepep --measured); see TestBadInputs for what each
// must do.
func badInputsMeasured() []badInput {
	f := fileOf
	v := func(file string, more ...string) []string {
		return append([]string{"validate", "--against", "deepep", "--measured", file}, more...)
	}
	const (
		head = "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,nvlink,dispatch_dtype,dispatch_us,combine_us\n"
		ll16 = `{"mode": "ll", "ranks": 16, "gpus_per_node": 8, "experts": 288, "topk": 8, "hidden": 7168, "tokens": 128, "nvlink": false, "dispatch_dtype": "fp8"`
		good = head + "ll,16,8,288,8,7168,128,false,fp8,173,329\n"
	)
	return []badInput{
		// Reading: bounded, named.
		{name: "measured runs /dev/zero", args: v("/dev/zero"), code: 1, msg: "/dev/zero: larger than 1 MiB"},
		{name: "measured runs huge sparse file", args: v("../r.csv"), setup: func(dir string) error {
			p := filepath.Join(dir, "..", "r.csv")
			if err := os.WriteFile(p, []byte(head), 0o644); err != nil {
				return err
			}
			return os.Truncate(p, 1<<30)
		}, code: 1, msg: "../r.csv: larger than 1 MiB"},
		{name: "measured runs missing", args: v("nope.json"), code: 1, msg: "nope.json"},
		{name: "measured runs empty", args: v("r.csv"), files: f("r.csv", ""), code: 1, msg: "r.csv: empty"},
		// The file's form: file, line and field.
		{name: "measured runs JSON cut short", args: v("r.json"), files: f("r.json", "{\"runs\": [\n"+ll16), code: 1, msg: "r.json:2: not valid JSON"},
		{name: "measured runs a calibration", args: v("r.json"), files: f("r.json", `{"issue_ns": {}}`), code: 1, msg: `r.json:1: unknown field "issue_ns"`},
		{name: "measured runs no runs", args: v("r.json"), files: f("r.json", "{}"), code: 1, msg: `r.json: no "runs"`},
		{name: "measured runs unknown field", args: v("r.json"), files: f("r.json", "{\"runs\": [\n"+ll16+`, "dispatch_gbs": 40}]}`),
			code: 1, msg: `r.json:2: run 1: unknown field "dispatch_gbs"`},
		{name: "measured runs ranks a string", args: v("r.json"), files: f("r.json", "{\"runs\": [{\"mode\": \"ll\",\n\"ranks\": \"16\"}]}"),
			code: 1, msg: "r.json:2: run 1: field ranks: want a whole number, not a string"},
		{name: "measured runs CSV unknown column", args: v("r.csv"), files: f("r.csv", "mode,rank\nll,16\n"), code: 1, msg: `r.csv:1: column 2: unknown key "rank"`},
		{name: "measured runs CSV ragged", args: v("r.csv"), files: f("r.csv", head+"ll,16\n"), code: 1, msg: "r.csv:2: wrong number of fields"},
		{name: "measured runs CSV figure NaN", args: v("r.csv"), files: f("r.csv", head+"ll,16,8,288,8,7168,128,false,fp8,NaN,329\n"),
			code: 1, msg: "r.csv:2: run 1: field dispatch_us: NaN, want a positive number"},
		{name: "measured runs CSV no nvlink", args: v("r.csv"), files: f("r.csv", head+"ll,16,8,288,8,7168,128,,fp8,173,329\n"), code: 1, msg: "r.csv:2: run 1: no nvlink"},
		{name: "measured runs normal without NVLink", args: v("r.csv"),
			files: f("r.csv", "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,nvlink,dispatch_dtype,dispatch_rdma_gbs\nnormal,16,8,256,8,7168,4096,false,fp8,43\n"),
			code:  1, msg: "r.csv:2: run 1: field nvlink: false"},
		{name: "measured runs LL bandwidth", args: v("r.json"), files: f("r.json", `{"runs": [`+ll16+`, "dispatch_rdma_gbs": 40}]}`),
			code: 1, msg: "field dispatch_rdma_gbs: a normal-mode figure"},
		{name: "measured runs RDMA within a node", args: v("r.csv"),
			files: f("r.csv", "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,dispatch_dtype,dispatch_rdma_gbs\nnormal,8,8,256,8,7168,4096,fp8,150\n"),
			code:  1, msg: "field dispatch_rdma_gbs: the run is within one node"},
		// Conditions the layer refuses: the file's run, not the command line.
		{name: "measured runs ranks not whole nodes", args: v("r.csv"), files: f("r.csv", head+"ll,12,8,288,8,7168,128,false,fp8,173,329\n"),
			code: 1, msg: "r.csv:2: ll-rdma EP12 (line 2)"},
		// The command line.
		{name: "measured runs set unread", args: v("r.csv", "--set", "proxy.base_publish_ns=1"), files: f("r.csv", good), code: 2, msg: "--set proxy.base_publish_ns"},
		{name: "measured runs with only", args: v("r.csv", "--only", "rate"), files: f("r.csv", good), code: 2, msg: "--only"},
		{name: "measured runs against measured", args: []string{"validate", "--against", "measured", "--measured", "r.csv"}, files: f("r.csv", good),
			code: 2, msg: "--measured r.csv holds runs of DeepEP's tests: they go with --against deepep"},
		{name: "measured runs against auto", args: []string{"validate", "--measured", "r.json"}, files: f("r.json", `{"runs": [`+ll16+`, "dispatch_us": 1}]}`),
			code: 2, msg: "--against deepep"},
		{name: "measured runs out is the runs", args: v("r.csv", "--out", "r.csv", "--format", "csv"), files: f("r.csv", good), code: 2, msg: "--measured r.csv"},
		{name: "measured runs above fail-above writes nothing", args: v("r.csv", "--fail-above", "0.0001", "--out", "v.csv", "--plot", "v.svg"),
			files: f("r.csv", good), code: 1, msg: "--fail-above"},
		{name: "measured runs profile unknown", args: v("r.csv", "--profile", "p-xyz"), files: f("r.csv", good), code: 2, msg: "p-xyz"},
	}
}
