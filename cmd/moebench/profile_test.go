package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// moebench profile NAME tells each constant's kind and the base that set
// it, alike in its table, CSV and JSON; the listing names every platform
// with its base.
func TestProfileKindsAndInheritance(t *testing.T) {
	t.Parallel()
	// What P-H800 is made of: its own NVLink, the H100's datasheet, P-IB's
	// kernel measurements on an H200, P-IB's fits to the paper.
	want := map[string][2]string{ // constant: kind, inherited from
		"nvlink.gbs":        {"datasheet", ""},
		"gpu.sm_clock_mhz":  {"assumption", ""},
		"gpu.sms":           {"datasheet", "p-h100"},
		"kernel.start_ns":   {"measured", "p-ib"},
		"gpu.reserve.ns":    {"fit", "p-ib"},
		"nic.msg_rate_mps":  {"paper", "p-ib"},
		"topo.nics_per_gpu": {"datasheet", "p-h100"},
	}
	profileOut := func(t *testing.T, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := run(append([]string{"profile"}, args...), &out, &errb); err != nil {
			t.Fatalf("profile %v: %v (%s)", args, err, errb.String())
		}
		return out.String()
	}

	t.Run("csv", func(t *testing.T) {
		t.Parallel()
		rows, err := csv.NewReader(strings.NewReader(profileOut(t, "p-h800", "--format", "csv"))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(rows[0], ","); got != "name,value,unit,kind,inherited_from,source" {
			t.Fatalf("header %q", got)
		}
		seen := 0
		for _, r := range rows[1:] {
			if w, ok := want[r[0]]; ok {
				seen++
				if r[3] != w[0] || r[4] != w[1] {
					t.Errorf("%s: kind %q, inherited from %q; want %q, %q", r[0], r[3], r[4], w[0], w[1])
				}
			}
			if r[3] == "" || r[3] == "unstated" {
				t.Errorf("%s has no kind", r[0])
			}
		}
		if seen != len(want) {
			t.Errorf("%d of the %d constants listed", seen, len(want))
		}
	})

	t.Run("table", func(t *testing.T) {
		t.Parallel()
		out := profileOut(t, "p-h800", "--set", "gpu.sms=100")
		found := 0
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 5 {
				continue
			}
			switch f[0] {
			case "gpu.sms":
				found++
				if f[3] != "set" || f[4] != "command" {
					t.Errorf("--set gpu.sms: %q, want kind set, none inherited, source command line", line)
				}
			case "kernel.start_ns":
				found++
				if f[3] != "measured" || f[4] != "p-ib" {
					t.Errorf("kernel.start_ns: %q, want measured, inherited from p-ib", line)
				}
			}
		}
		if found != 2 {
			t.Errorf("%d of gpu.sms and kernel.start_ns in the table:\n%s", found, out)
		}
	})

	t.Run("json", func(t *testing.T) {
		t.Parallel()
		var doc struct {
			Name      string
			Constants []struct{ Name, Kind, From string }
		}
		if err := json.Unmarshal([]byte(profileOut(t, "p-h800", "--format", "json")), &doc); err != nil {
			t.Fatal(err)
		}
		for _, c := range doc.Constants {
			w, ok := want[c.Name]
			if !ok {
				continue
			}
			from := w[1]
			if from == "" {
				from = doc.Name
			}
			if c.Kind != w[0] || c.From != from {
				t.Errorf("%s: kind %q from %q; want %q from %q", c.Name, c.Kind, c.From, w[0], from)
			}
		}
	})

	t.Run("listing", func(t *testing.T) {
		t.Parallel()
		rows, err := csv.NewReader(strings.NewReader(profileOut(t, "--format", "csv"))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		base := map[string]string{}
		for _, r := range rows[1:] {
			base[r[0]] = r[1]
		}
		for name, b := range map[string]string{"p-ib": "", "p-h100": "p-ib", "p-h800": "p-h100", "p-b200": "p-roce", "p-gb200": "p-ib", "p-b300": "p-b200"} {
			if got, ok := base[name]; !ok || got != b {
				t.Errorf("listing: %s base %q (listed %v), want %q", name, got, ok, b)
			}
		}
	})
}
