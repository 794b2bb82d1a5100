package results_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/profile"
	"moebench/results"
)

// A profile file over p-ib: its own constant, one inherited, and the
// three formats of its view.
func TestProfileConstants(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mine.json")
	file := `{"name": "mine", "description": "a test", "base": "p-ib",
  "constants": [{"name": "gpu.sm_clock_mhz", "value": 1500, "source": "measured here", "kind": "measured"}]}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := results.ProfileConstants(p)
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"csv", []string{"name,value,unit,kind,inherited_from,source", "gpu.sm_clock_mhz,1500,,measured,,measured here", "topo.leaf_radix,64,count,datasheet,p-ib,NVIDIA Quantum-2"}},
		{"table", []string{"gpu.sm_clock_mhz                         1500          measured                    measured here"}},
	} {
		var b bytes.Buffer
		if err := results.Render(&b, tc.format, d); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q:\n%.600s", tc.format, w, b.String())
			}
		}
	}
	var b bytes.Buffer
	if err := results.Render(&b, "json", d); err != nil {
		t.Fatal(err)
	}
	var back profile.File
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != "mine" || back.Description != "a test" || len(back.Constants) != len(p.Constants()) {
		t.Errorf("JSON back: %s, %q, %d constants; want mine, a test, %d", back.Name, back.Description, len(back.Constants), len(p.Constants()))
	}
}

// The list and the schema: a row per built-in profile and per constant,
// the JSON the same entries.
func TestProfileListAndSchema(t *testing.T) {
	t.Parallel()
	list, err := results.ProfileBuiltins()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		d    results.Document
		rows int
		has  string
	}{
		{"builtins", list, len(profile.Builtins()), "p-h800,p-h100,"},
		{"schema", results.ProfileSchema(), len(profile.Defs()), "topo.tiers,count,1,2,"},
	} {
		var csv, js bytes.Buffer
		if err := results.Render(&csv, "csv", tc.d); err != nil {
			t.Fatal(err)
		}
		if err := results.Render(&js, "json", tc.d); err != nil {
			t.Fatal(err)
		}
		var entries []map[string]any
		if err := json.Unmarshal(js.Bytes(), &entries); err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(csv.String(), "\n"); lines != tc.rows+1 || len(entries) != tc.rows || !strings.Contains(csv.String(), tc.has) {
			t.Errorf("%s: %d CSV lines, %d JSON entries, want %d rows and %q:\n%.300s", tc.name, lines, len(entries), tc.rows, tc.has, csv.String())
		}
	}
}
