package main

import (
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

func TestParseShard(t *testing.T) {
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
		{"slurm", "auto", env(envSlurmID, "3", envSlurmCount, "4"), 3, 4, ""},
		{"slurm from one", "auto", env(envSlurmID, "4", envSlurmCount, "4", envSlurmMin, "1"), 3, 4, ""},
		{"slurm with the count given", "auto/4", env(envSlurmID, "0"), 0, 4, ""},
		{"kubernetes", "auto/16", env(envK8sIndex, "15"), 15, 16, ""},
		{"kubernetes without a count", "auto", env(envK8sIndex, "1"), 0, 0, "give it as --shard auto/N"},
		{"no scheduler", "auto", env(), 0, 0, "neither SLURM_ARRAY_TASK_ID"},
		{"index past the count", "8/8", env(), 0, 0, "in [0, 8)"},
		{"no count", "3", env(), 0, 0, "want I/N"},
		{"zero count", "0/0", env(), 0, 0, "at least 1"},
		{"slurm count disagrees", "auto/8", env(envSlurmID, "1", envSlurmCount, "4"), 0, 0, "has 4 tasks"},
		{"slurm step", "auto", env(envSlurmID, "2", envSlurmCount, "4", envSlurmStep, "2"), 0, 0, "without a step"},
		{"slurm id not a number", "auto", env(envSlurmID, "x"), 0, 0, `SLURM_ARRAY_TASK_ID="x"`},
		{"kubernetes index out of range", "auto/4", env(envK8sIndex, "4"), 0, 0, "outside [0, 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := parseShard(tc.spec, tc.env)
			if tc.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("error %v, want one containing %q", err, tc.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.index != tc.index || s.count != tc.n {
				t.Fatalf("shard %d/%d, want %d/%d", s.index, s.count, tc.index, tc.n)
			}
		})
	}
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"", "0/1", "3/8", "auto", "auto/4", "x/y", "-1/3", "1/-3", "9999999999999999999/2"} {
		f.Add(s, "1", "4")
	}
	f.Fuzz(func(t *testing.T, spec, id, count string) {
		s, err := parseShard(spec, env(envSlurmID, id, envSlurmCount, count))
		if err != nil {
			return
		}
		if s.count < 1 || s.index < 0 || s.index >= s.count {
			t.Fatalf("%q (task %q of %q) gave shard %d/%d", spec, id, count, s.index, s.count)
		}
		// Every point belongs to exactly one shard.
		for p := range 3 * s.count {
			if s.has(p) != (p%s.count == s.index) {
				t.Fatalf("point %d in shard %d/%d: %v", p, s.index, s.count, s.has(p))
			}
		}
	})
}
