package shard

import (
	"fmt"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		spec        string
		env         func(string) string
		index, n    int
		errContains string
	}{
		{"none", "", env(), 0, 1, ""},
		{"explicit", "2/8", env(), 2, 8, ""},
		{"slurm", "auto", env(EnvSlurmID, "3", EnvSlurmCount, "4"), 3, 4, ""},
		{"slurm from one", "auto", env(EnvSlurmID, "4", EnvSlurmCount, "4", EnvSlurmMin, "1"), 3, 4, ""},
		{"slurm with the count given", "auto/4", env(EnvSlurmID, "0"), 0, 4, ""},
		{"kubernetes", "auto/16", env(EnvK8sIndex, "15"), 15, 16, ""},
		{"kubernetes without a count", "auto", env(EnvK8sIndex, "1"), 0, 0, "give it as --shard auto/N"},
		{"no scheduler", "auto", env(), 0, 0, "neither SLURM_ARRAY_TASK_ID"},
		{"index past the count", "8/8", env(), 0, 0, "in [0, 8)"},
		{"no count", "3", env(), 0, 0, "want I/N"},
		{"zero count", "0/0", env(), 0, 0, "at least 1"},
		{"slurm count disagrees", "auto/8", env(EnvSlurmID, "1", EnvSlurmCount, "4"), 0, 0, "has 4 tasks"},
		{"slurm step", "auto", env(EnvSlurmID, "2", EnvSlurmCount, "4", EnvSlurmStep, "2"), 0, 0, "without a step"},
		{"slurm id not a number", "auto", env(EnvSlurmID, "x"), 0, 0, `SLURM_ARRAY_TASK_ID="x"`},
		{"kubernetes index out of range", "auto/4", env(EnvK8sIndex, "4"), 0, 0, "outside [0, 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.spec, tc.env)
			if tc.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("error %v, want one containing %q", err, tc.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Index != tc.index || s.Count != tc.n {
				t.Fatalf("shard %d/%d, want %d/%d", s.Index, s.Count, tc.index, tc.n)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0/1", "3/8", "auto", "auto/4", "x/y", "-1/3", "1/-3", "9999999999999999999/2"} {
		f.Add(s, "1", "4")
	}
	f.Fuzz(func(t *testing.T, spec, id, count string) {
		s, err := Parse(spec, env(EnvSlurmID, id, EnvSlurmCount, count))
		if err != nil {
			return
		}
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			t.Fatalf("%q (task %q of %q) gave shard %d/%d", spec, id, count, s.Index, s.Count)
		}
		// Every point belongs to exactly one shard.
		n := 0
		for p := range min(3*s.Count, 64) {
			if s.Has(p) != (p%s.Count == s.Index) {
				t.Fatalf("point %d in shard %d/%d: %v", p, s.Index, s.Count, s.Has(p))
			}
			if s.Has(p) {
				n++
			}
		}
		if total := min(3*s.Count, 64); n != s.Size(total) {
			t.Fatalf("shard %d/%d has %d of %d points, Size says %d", s.Index, s.Count, n, total, s.Size(total))
		}
	})
}

// Check and MergeSweep read whatever they are given without panicking.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"header":{"tool":"moebench","command":"sweep"},"shard":{"index":0,"count":1,"total":1,"points":[0],"study":"x"},"results":[{"preset":"mini-gda"}]}`))
	f.Add([]byte(`{"header":{"command":"sweep"},"shard":{"index":0,"count":1,"total":2,"points":[1,1]},"results":[{},{}]}`))
	f.Add([]byte(`{"header":{"command":"sweep"},"shard":{"index":0,"count":99999999999,"total":9999999999,"points":[0]},"results":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := Check([]File{{Path: "a.json", Data: data}})
		if err != nil {
			return
		}
		m, err := MergeSweep(files)
		if err == nil && len(m.Results) != files[0].Info.Total {
			t.Fatalf("merged %d results of %d", len(m.Results), files[0].Info.Total)
		}
	})
}

func TestMergeSweepOrdersThePoints(t *testing.T) {
	t.Parallel()
	shard := func(i int, pts string, res string) File {
		return File{Path: fmt.Sprintf("s%d.json", i), Data: []byte(fmt.Sprintf(`{"header":{"command":"sweep"},"shard":{"index":%d,"count":2,"total":3,"points":%s,"study":"s"},"results":%s}`, i, pts, res))}
	}
	files, err := Check([]File{shard(1, "[1]", `["b"]`), shard(0, "[0,2]", `["a","c"]`)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MergeSweep(files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Results {
		got = append(got, string(r))
	}
	if strings.Join(got, ",") != `"a","b","c"` {
		t.Fatalf("merged %v", got)
	}
	for _, tc := range []struct {
		files []File
		want  string
	}{
		{[]File{shard(0, "[0,2]", `["a","c"]`)}, "1 of 2 shards missing (shard 1…)"},
		{[]File{shard(0, "[0,2]", `["a","c"]`), shard(0, "[0,2]", `["a","c"]`)}, "shard 0 given twice"},
		{[]File{shard(0, "[0,1]", `["a","c"]`), shard(1, "[1]", `["b"]`)}, "point 1 is not shard 0's"},
		{nil, "no shard given"},
	} {
		files, err := Check(tc.files)
		if err == nil {
			_, err = MergeSweep(files)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}
