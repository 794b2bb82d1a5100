package published

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

const (
	llHead = "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,nvlink,dispatch_dtype,dispatch_us,combine_us\n"
	llJSON = `{"mode": "ll", "ranks": 16, "gpus_per_node": 8, "experts": 288, "topk": 8, "hidden": 7168, "tokens": 128, "nvlink": false, "dispatch_dtype": "fp8"`
)

// One run's figures become rows of the run's conditions, phase and metric;
// JSON and CSV read alike.
func TestParseRuns(t *testing.T) {
	t.Parallel()
	ll16 := Conditions{Mode: LL, Ranks: 16, GPUsPerNode: 8, Experts: 288, TopK: 8, Hidden: 7168, Tokens: 128, DispatchDType: "fp8"}
	nvl8 := ll16
	nvl8.Ranks, nvl8.NVLink, nvl8.DispatchDType = 8, true, "bf16"
	norm16 := Conditions{Mode: Normal, Ranks: 16, GPUsPerNode: 8, Experts: 256, TopK: 8, TopKGroups: 4, ExpertGroups: 8,
		Hidden: 7168, Tokens: 4096, NVLink: true, DispatchDType: "fp8"}
	norm8 := norm16
	norm8.Ranks, norm8.TopKGroups, norm8.ExpertGroups = 8, 0, 0
	row := func(c Conditions, label, src, phase, metric string, v float64) Row {
		return Row{Experiment: c.Experiment(), Case: label, Phase: phase, Metric: metric, Value: v, Source: src, Conditions: c}
	}
	for _, tc := range []struct {
		name, data string
		platform   string
		want       []Row
	}{
		{name: "json ll", data: `{"platform": "two H800 nodes", "runs": [` + "\n" + llJSON + `, "dispatch_us": 173, "combine_us": 329}]}`,
			platform: "two H800 nodes",
			want:     []Row{row(ll16, "EP16 (line 2)", "r:2", "dispatch", MeanUs, 173), row(ll16, "EP16 (line 2)", "r:2", "combine", MeanUs, 329)}},
		{name: "csv ll", data: "# a comment\n" + llHead + "ll,16,8,288,8,7168,128,false,fp8,173,329\n",
			want: []Row{row(ll16, "EP16 (line 3)", "r:3", "dispatch", MeanUs, 173), row(ll16, "EP16 (line 3)", "r:3", "combine", MeanUs, 329)}},
		{name: "csv empty cell is absent", data: llHead + " ll , 8, 8,288,8,7168,128,true,bf16,77,\n",
			want: []Row{row(nvl8, "EP8 (line 2)", "r:2", "dispatch", MeanUs, 77)}},
		{name: "json normal named, nvlink implied",
			data: `{"runs": [{"name": "2 nodes", "mode": "normal", "ranks": 16, "gpus_per_node": 8, "experts": 256, "topk": 8, "topk_groups": 4, "expert_groups": 8,` +
				"\n" + `"hidden": 7168, "tokens": 4096, "dispatch_dtype": "fp8", "dispatch_rdma_gbs": 43, "combine_nvl_gbs": 150}]}`,
			want: []Row{row(norm16, "2 nodes", "r:1", "dispatch", DeepEPGBps, 43), row(norm16, "2 nodes", "r:1", "combine", NVLinkGBps, 150)}},
		{name: "csv normal intranode", data: "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,nvlink,dispatch_dtype,dispatch_nvl_gbs,dispatch_us\n" +
			"normal,8,8,256,8,7168,4096,true,fp8,153,900\n",
			want: []Row{row(norm8, "EP8 (line 2)", "r:2", "dispatch", MeanUs, 900), row(norm8, "EP8 (line 2)", "r:2", "dispatch", DeepEPGBps, 153)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRuns("r", []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if want := (Runs{Platform: tc.platform, Rows: tc.want}); !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// Every refusal names the file, the line and the field at fault.
func TestParseRunsRefuses(t *testing.T) {
	t.Parallel()
	csvLL := func(row string) string { return llHead + row + "\n" }
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "r: empty, want a header"},
		{"header only", llHead, "r: no runs"},
		{"no runs in json", `{"runs": []}`, "r: no runs"},
		{"json without runs", `{"platform": "x"}`, `no "runs"`},
		{"json array", `[]`, "r:1: want an object, not an array"},
		{"json syntax", "{\n\"runs\": [,]}", "r:2: not valid JSON"},
		{"json cut short", `{"runs": [`, "not valid JSON"},
		{"json unknown top field", "{\"runs\": [],\n\"note\": 1}", `r:2: unknown field "note"`},
		{"json runs twice", `{"runs": [], "runs": []}`, `"runs" twice`},
		{"json runs not an array", `{"runs": 5}`, "r:1: field runs: want an array"},
		{"json platform not a string", `{"platform": 5, "runs": []}`, "r:1: field platform: want a string, not a number"},
		{"json run not an object", "{\"runs\": [\n5]}", "r:2: run 1: want an object"},
		{"json unknown run field", "{\"runs\": [\n" + llJSON + `, "dispatch_gbs": 3}]}`, `r:2: run 1: unknown field "dispatch_gbs"`},
		{"json ranks a string", "{\"runs\": [{\"mode\": \"ll\",\n\"ranks\": \"16\"}]}", "r:2: run 1: field ranks: want a whole number, not a string"},
		{"json ranks fractional", `{"runs": [{"ranks": 1.5}]}`, "field ranks: want a whole number"},
		{"json second run", "{\"runs\": [\n" + llJSON + ", \"dispatch_us\": 1},\n" + llJSON + "}]}", "r:3: run 2: no figure"},
		{"csv unknown column", "mode,rank\n", `r:1: column 2: unknown key "rank"`},
		{"csv column twice", "mode,mode\n", "column mode twice"},
		{"csv ragged", llHead + "ll,16\n", "r:2: wrong number of fields"},
		{"csv not a number", csvLL("ll,16,8,288,8,7168,128,false,fp8,fast,1"), `r:2: run 1: field dispatch_us: want a number, not "fast"`},
		{"csv not whole", csvLL("ll,16.5,8,288,8,7168,128,false,fp8,1,1"), "field ranks: want a whole number"},
		{"csv not a bool", csvLL("ll,16,8,288,8,7168,128,maybe,fp8,1,1"), "field nvlink: want true or false"},
		{"no mode", "ranks\n16\n", "run 1: no mode"},
		{"mode unknown", csvLL("fast,16,8,288,8,7168,128,false,fp8,1,1"), `field mode: "fast", want ll or normal`},
		{"no ranks", csvLL("ll,,8,288,8,7168,128,false,fp8,1,1"), "no ranks"},
		{"ranks zero", csvLL("ll,0,8,288,8,7168,128,false,fp8,1,1"), "field ranks: 0, want at least 1"},
		{"hidden negative", csvLL("ll,16,8,288,8,-7168,128,false,fp8,1,1"), "field hidden: -7168"},
		{"dtype unknown", csvLL("ll,16,8,288,8,7168,128,false,fp4,1,1"), `field dispatch_dtype: "fp4", want fp8 or bf16`},
		{"no dtype", csvLL("ll,16,8,288,8,7168,128,false,,1,1"), "no dispatch_dtype"},
		{"ll without nvlink", csvLL("ll,16,8,288,8,7168,128,,fp8,1,1"), "no nvlink"},
		{"normal without nvlink forwarding", "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,nvlink,dispatch_dtype,dispatch_us\nnormal,16,8,256,8,7168,4096,false,fp8,1\n",
			"field nvlink: false"},
		{"groups without a limit", "mode,ranks,gpus_per_node,experts,topk,expert_groups,hidden,tokens,nvlink,dispatch_dtype,dispatch_us\nll,16,8,256,8,8,7168,128,false,fp8,1\n",
			"field expert_groups: no topk_groups"},
		{"figure zero", csvLL("ll,16,8,288,8,7168,128,false,fp8,0,1"), "field dispatch_us: 0, want a positive number"},
		{"figure NaN", csvLL("ll,16,8,288,8,7168,128,false,fp8,NaN,1"), "field dispatch_us: NaN"},
		{"figure infinite", csvLL("ll,16,8,288,8,7168,128,false,fp8,1,-Inf"), "field combine_us: -Inf"},
		{"no figure", csvLL("ll,16,8,288,8,7168,128,false,fp8,,"), "no figure"},
		{"ll bandwidth", "{\"runs\": [" + llJSON + `, "dispatch_rdma_gbs": 40}]}`, "field dispatch_rdma_gbs: a normal-mode figure"},
		{"rdma within a node", "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,dispatch_dtype,dispatch_rdma_gbs\nnormal,8,8,256,8,7168,4096,fp8,40\n",
			"field dispatch_rdma_gbs: the run is within one node"},
		{"echo bounded", csvLL("ll,16,8,288,8,7168,128,false," + strings.Repeat("x", 500) + ",1,1"), "(500 characters)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRuns("r", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// The committed example reads, and each of its figures is the suite's of
// the same conditions: it is DeepEP's published figures in the format.
func TestExampleRunsArePublished(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/deepep-h800.json")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ParseRuns("deepep-h800.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.Rows) == 0 {
		t.Fatal("no rows")
	}
	suite := DeepEP()
	for _, r := range runs.Rows {
		p, ok := suite.Match(r)
		if !ok || p.Value != r.Value {
			t.Errorf("%s %s %s: %v, the suite has %v (matched %v)", r.Source, r.Phase, r.Metric, r.Value, p.Value, ok)
		}
	}
}

// Match finds a row by its conditions, phase and metric alone.
func TestSuiteMatch(t *testing.T) {
	t.Parallel()
	s := DeepEP()
	for _, p := range s.Rows {
		q := Row{Conditions: p.Conditions, Phase: p.Phase, Metric: p.Metric}
		if got, ok := s.Match(q); !ok || !reflect.DeepEqual(got, p) {
			t.Errorf("%s %s %s: matched %v, %v", p.Experiment, p.Case, p.Phase, ok, got)
		}
		q.Conditions.Tokens++
		if _, ok := s.Match(q); ok {
			t.Errorf("%s %s %s: matched other conditions", p.Experiment, p.Case, p.Phase)
		}
	}
}

// The suite's rows run as they were written before their conditions were
// a type: the flags of an LL and a normal-mode row, whole.
func TestConditionsArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    Conditions
		want string
	}{
		{llRun(64, false), "--workload deepep-ll --ranks 64 --gpus-per-node 8 --experts 256 --topk 8 --tokens 128 --hidden 7168 --dispatch-dtype fp8 --preset deepep-v1"},
		{llRun(8, true), "--workload deepep-ll --ranks 8 --gpus-per-node 8 --experts 288 --topk 8 --tokens 128 --hidden 7168 --dispatch-dtype fp8 --preset deepep-v1 --nvlink"},
		{normalRun(16), "--workload deepseek-v3 --mode normal --ranks 16 --gpus-per-node 8 --experts 256 --topk 8 --topk-groups 2 --expert-groups 2 --tokens 4096 --hidden 7168 --dispatch-dtype fp8 --preset deepep-v1"},
		{normalRun(64), "--workload deepseek-v3 --mode normal --ranks 64 --gpus-per-node 8 --experts 256 --topk 8 --topk-groups 4 --expert-groups 8 --tokens 4096 --hidden 7168 --dispatch-dtype fp8 --preset deepep-v1"},
		{normalRun(8), "--workload deepseek-v3 --mode normal --ranks 8 --gpus-per-node 8 --experts 256 --topk 8 --topk-groups 0 --tokens 4096 --hidden 7168 --dispatch-dtype fp8 --preset deepep-v1"},
		{Conditions{Mode: Normal, Ranks: 16, GPUsPerNode: 8, Experts: 256, TopK: 8, Hidden: 7168, Tokens: 4096, NVLink: true, DispatchDType: "bf16"},
			"--workload deepseek-v3 --mode normal --ranks 16 --gpus-per-node 8 --experts 256 --topk 8 --topk-groups 0 --tokens 4096 --hidden 7168 --dispatch-dtype bf16 --preset deepep-v1"},
		{Conditions{Mode: LL, Ranks: 16, GPUsPerNode: 8, Experts: 256, TopK: 8, TopKGroups: 2, Hidden: 7168, Tokens: 128, DispatchDType: "fp8"},
			"--workload deepep-ll --ranks 16 --gpus-per-node 8 --experts 256 --topk 8 --topk-groups 2 --tokens 128 --hidden 7168 --dispatch-dtype fp8 --preset deepep-v1"},
	} {
		if got := strings.Join(tc.c.Args(), " "); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.c, got, tc.want)
		}
	}
}

// A file that parses writes back, as JSON of the same keys, to one that
// parses to the same rows.
func FuzzParseRuns(f *testing.F) {
	f.Add([]byte(`{"platform": "p", "runs": [` + llJSON + `, "dispatch_us": 173, "combine_us": 329}]}`))
	f.Add([]byte(llHead + "ll,16,8,288,8,7168,128,false,fp8,173,329\n"))
	f.Add([]byte("# c\nname,mode,ranks,gpus_per_node,experts,topk,topk_groups,expert_groups,hidden,tokens,dispatch_dtype,dispatch_rdma_gbs,combine_nvl_gbs\n" +
		"x,normal,16,8,256,8,4,8,7168,4096,fp8,43,150\n"))
	if data, err := os.ReadFile("testdata/deepep-h800.json"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, err := ParseRuns("f", data)
		if err != nil {
			return
		}
		// Each row back as a run of one figure, on its own line.
		var b bytes.Buffer
		fmt.Fprintf(&b, "{\"platform\": %s, \"runs\": [", must(json.Marshal(runs.Platform)))
		var want []Row
		for i, r := range runs.Rows {
			c := r.Conditions
			m := map[string]any{"mode": c.Mode, "ranks": c.Ranks, "gpus_per_node": c.GPUsPerNode, "experts": c.Experts, "topk": c.TopK,
				"hidden": c.Hidden, "tokens": c.Tokens, "nvlink": c.NVLink, "dispatch_dtype": c.DispatchDType, "name": r.Case}
			if c.TopKGroups > 0 {
				m["topk_groups"] = c.TopKGroups
			}
			if c.ExpertGroups > 0 {
				m["expert_groups"] = c.ExpertGroups
			}
			key := map[string]string{MeanUs: "us", DeepEPGBps: "rdma_gbs", NVLinkGBps: "nvl_gbs"}[r.Metric]
			if r.Metric == DeepEPGBps && c.OneNode() {
				key = "nvl_gbs" // test_intranode.py's figure
			}
			m[r.Phase+"_"+key] = r.Value
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n%s", must(json.Marshal(m)))
			r.Source = fmt.Sprintf("g:%d", i+2)
			want = append(want, r)
		}
		b.WriteString("]}\n")
		again, err := ParseRuns("g", b.Bytes())
		if err != nil {
			t.Fatalf("re-reading %s: %v", b.Bytes(), err)
		}
		if w := (Runs{Platform: runs.Platform, Rows: want}); !reflect.DeepEqual(again, w) {
			t.Fatalf("round trip: got\n%+v\nwant\n%+v", again, w)
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
