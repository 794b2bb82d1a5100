package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/internal/field"
)

func TestBuiltinsAreCompleteAndSourced(t *testing.T) {
	t.Parallel()
	if len(Builtins()) == 0 {
		t.Fatal("no built-in profiles")
	}
	for _, name := range Builtins() {
		p, err := Load(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, c := range p.Constants() {
			if strings.TrimSpace(c.Source) == "" {
				t.Errorf("%s: %s has no source", name, c.Name)
			}
		}
	}
}

func TestParseErrorsNameLineAndConstant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown constant", `{"name":"x","constants":[
{"name":"gpu.sm_clock_mhz","value":1500,"unit":"MHz","source":"s"},
{"name":"gpu.fence","value":1,"unit":"ns","source":"s"}]}`, "f.json:3: unknown constant \"gpu.fence\" (did you mean: gpu.fence_"},
		{"out of range", `{"name":"x","constants":[
{"name":"gpu.sm_clock_mhz","value":50,"unit":"MHz","source":"s"}]}`, "f.json:2: constant gpu.sm_clock_mhz = 50 is out of range [100, 5000] MHz"},
		{"wrong unit", `{"name":"x","constants":[{"name":"gpu.sm_clock_mhz","value":1500,"unit":"GHz","source":"s"}]}`, `unit "GHz", want "MHz"`},
		{"no source", `{"name":"x","constants":[{"name":"gpu.sms","value":10,"unit":"count","source":" "}]}`, "source is empty"},
		{"duplicate", `{"name":"x","constants":[
{"name":"gpu.sms","value":10,"unit":"count","source":"a"},
{"name":"gpu.sms","value":11,"unit":"count","source":"b"}]}`, "f.json:3: constant gpu.sms set twice (first on line 2)"},
		{"unknown field", `{"name":"x","colour":"red"}`, `unknown field "colour"`},
		{"bad value type", `{"name":"x","constants":[{"name":"gpu.sms","value":"ten","unit":"count","source":"a"}]}`, "constants[0]"},
		{"truncated", `{"name":"x","constants":[{"name":"gpu.sms"`, "f.json:1:"},
		{"no name", `{"constants":[]}`, "field name is missing"},
		{"no value", `{"name":"x","constants":[
{"name":"gpu.sms","unit":"count","source":"a"}]}`, "f.json:2: constant gpu.sms has no value"},
		{"trailing", `{"name":"x"} {}`, "trailing data"},
		{"unknown kind", `{"name":"x","constants":[
{"name":"gpu.sms","value":10,"unit":"count","kind":"guess","source":"a"}]}`, `f.json:2: constant gpu.sms: kind "guess" is not one of datasheet, paper, fit, measured, assumption`},
		{"set is no file's kind", `{"name":"x","constants":[{"name":"gpu.sms","value":10,"unit":"count","kind":"set","source":"a"}]}`, `kind "set" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("f.json", []byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadMergesLeftToRight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	frag := filepath.Join(dir, "gpu.json")
	os.WriteFile(frag, []byte(`{"name":"local-gpu","constants":[{"name":"gpu.sm_clock_mhz","value":1500,"unit":"MHz","source":"measured"}]}`), 0o644)
	p, err := Load("p-ib," + frag)
	if err != nil {
		t.Fatal(err)
	}
	if p.Get("gpu.sm_clock_mhz") != 1500 || p.Get("nic.msg_rate_mps") != 260 {
		t.Fatalf("merge: clock %v, NIC rate %v", p.Get("gpu.sm_clock_mhz"), p.Get("nic.msg_rate_mps"))
	}
	if c, _ := p.Constant("gpu.sm_clock_mhz"); c.Source != "measured" {
		t.Fatalf("source not carried: %q", c.Source)
	}
	if _, err := Load(frag); err == nil || !strings.Contains(err.Error(), "missing constants") {
		t.Fatalf("a fragment alone must be incomplete: %v", err)
	}
	if _, err := Load("p-nope"); err == nil || !strings.Contains(err.Error(), "built-in: ") {
		t.Fatalf("unknown built-in: %v", err)
	}
}

func TestSetOverrides(t *testing.T) {
	t.Parallel()
	p := MustLoad("p-ib")
	q := p.Clone()
	if err := q.ApplySets([]string{"gpu.sm_clock_mhz=1000"}); err != nil {
		t.Fatal(err)
	}
	if q.Get("gpu.sm_clock_mhz") != 1000 || p.Get("gpu.sm_clock_mhz") != 1970 {
		t.Fatal("Set changed the original or did not apply")
	}
	for set, want := range map[string]string{
		"gpu.sm_clock_mhz":       "want name=value",
		"gpu.sm_clock_mhz=fast":  "not a number",
		"gpu.sm_clock_mhz=99999": "out of range",
		"gpu.clock=1":            "unknown constant",
		"nic.msg_rate_mps=NaN":   "out of range",
	} {
		// The error names the set field, which the command shows as --set.
		err := q.ApplySets([]string{set})
		if fs := field.Fields(err); err == nil || !strings.Contains(err.Error(), want) || len(fs) != 1 || fs[0].Field != "set" {
			t.Errorf("set %s: %v, want %q about the set field", set, err, want)
		}
	}
	if err := q.ApplySets([]string{"gpu.sms=100", "gpu.sms=120"}); err == nil || !strings.Contains(err.Error(), "set gpu.sms=120: gpu.sms is already set by gpu.sms=100") {
		t.Errorf("a constant set twice: %v", err)
	}
	// Reads are tracked across clones: the model read the clock, not the
	// message rate.
	if u := p.Unread([]string{"gpu.sm_clock_mhz", "nic.msg_rate_mps"}); len(u) != 1 || u[0] != "nic.msg_rate_mps" {
		t.Errorf("Unread = %v, want [nic.msg_rate_mps]", u)
	}
}

func FuzzParse(f *testing.F) {
	seed, _ := builtin.ReadFile("data/p-ib/gpu-nic.json")
	f.Add(seed)
	f.Add([]byte(`{"name":"x","constants":[{"name":"gpu.sms","value":1,"unit":"count","source":"s"}]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, c := range file.Constants {
			if err := check(c); err != nil {
				t.Fatalf("accepted an invalid constant: %v", err)
			}
		}
	})
}
