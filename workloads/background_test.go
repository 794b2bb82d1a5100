package workloads

import (
	"strings"
	"testing"

	"moebench/moe"
)

func TestParseBackground(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want moe.Background
		err  string
	}{
		{in: "none", want: moe.Background{}},
		{in: "bulk-shared", want: moe.Background{CTAs: 64, Bytes: 8}},
		{in: "bulk-reserved", want: moe.Background{CTAs: 64, Bytes: 8, Reserved: true}},
		{in: "bulk:16", want: moe.Background{CTAs: 16, Bytes: 8}},
		{in: "bulk:16:reserved:4096", want: moe.Background{CTAs: 16, Bytes: 4096, Reserved: true}},
		{in: " BULK:2:shared ", want: moe.Background{CTAs: 2, Bytes: 8}},
		{in: "bulk", err: "needs a CTA count"},
		{in: "bulk:x", err: `CTA count "x"`},
		{in: "bulk:4:fast", err: `"fast" is neither`},
		{in: "noise", err: "want none"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseBackground(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseBackground(f *testing.F) {
	for _, s := range []string{"none", "bulk:4", "bulk:1:reserved:64", "bulk::", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBackground(s)
		if err == nil {
			if verr := b.Validate(); verr != nil {
				t.Fatalf("%q parsed to invalid %+v: %v", s, b, verr)
			}
		}
	})
}
