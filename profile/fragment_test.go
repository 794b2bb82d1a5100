package profile

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWriteFragment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    File
		want string
	}{
		{"one constant", File{Name: "cal", Description: `on "x"`, Constants: []Constant{{Name: "gpu.a.ns", Value: 1.5, Unit: "ns", Source: "s"}}},
			"{\n  \"name\": \"cal\",\n  \"description\": \"on \\\"x\\\"\",\n  \"constants\": [\n" +
				"    {\"name\":\"gpu.a.ns\",\"value\":1.5,\"unit\":\"ns\",\"source\":\"s\"}\n  ]\n}\n"},
		{"two constants and a measurement", File{Name: "cal", Constants: []Constant{{Name: "a", Value: 1, Unit: "ns", Source: "s"}, {Name: "b", Value: 2, Unit: "x", Source: "t"}},
			Measured: json.RawMessage(`{"gpu":"H200"}`)},
			"{\n  \"name\": \"cal\",\n  \"description\": \"\",\n  \"constants\": [\n" +
				"    {\"name\":\"a\",\"value\":1,\"unit\":\"ns\",\"source\":\"s\"},\n" +
				"    {\"name\":\"b\",\"value\":2,\"unit\":\"x\",\"source\":\"t\"}\n  ],\n  \"measured\": {\"gpu\":\"H200\"}\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := WriteFragment(&b, tc.f); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// A fragment reads back as a profile file, one constant per line.
func TestFragmentParses(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	f := File{Name: "x", Constants: []Constant{{Name: "gpu.sms", Value: 1, Unit: "count", Source: "s"}, {Name: "gpu.sm_clock_mhz", Value: 1000, Unit: "MHz", Source: "s"}}}
	if err := WriteFragment(&b, f); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("frag", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 8 {
		t.Fatalf("%d lines:\n%s", n, b.String())
	}
}

func TestForGPU(t *testing.T) {
	t.Parallel()
	for gpu, want := range map[string]string{
		"NVIDIA H100 80GB HBM3": "p-h100", "NVIDIA H200": "p-ib", "NVIDIA H800": "p-h800", "NVIDIA B200": "p-b200",
		"NVIDIA GB200": "p-gb200", "NVIDIA B300 SXM6 AC": "p-b300", "NVIDIA A100-SXM4-80GB": "p-ib",
	} {
		if got := ForGPU(gpu); got != want {
			t.Errorf("ForGPU(%q) = %s, want %s", gpu, got, want)
		}
	}
}
