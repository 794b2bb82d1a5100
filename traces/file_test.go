package traces_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/traces"
)

// EncodeFile writes a trace that reads back whole; a source that fails
// leaves no file and comes back as its own error.
func TestEncodeFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := traces.DefaultGenOptions()
	o.Experts, o.TopK, o.Layers, o.Ranks, o.TokensPerRank = 16, 2, 2, 2, 3
	src, err := traces.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.bin")
	if err := traces.EncodeFile(path, traces.FormatBinary, src); err != nil {
		t.Fatal(err)
	}
	s, err := traces.InspectFile(path, report.Host{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Records != 4 || s.Tokens != 12 || s.Header.Experts != 16 {
		t.Errorf("read back %d records, %d tokens, %d experts; want 4, 12, 16", s.Records, s.Tokens, s.Header.Experts)
	}
	cause := errors.New("disk on fire")
	src, _ = traces.Generate(o)
	bad := filepath.Join(dir, "bad.bin")
	err = traces.EncodeFile(bad, traces.FormatBinary, failing{src, cause})
	if se := (*traces.SourceError)(nil); err != cause || errors.As(err, &se) {
		t.Errorf("got %v, want the source's own error", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s: %v", bad, err)
	}
}

// An inspection names its file and host before the summary, in its table
// and as JSON keys beside the summary's.
func TestInspection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := traces.DefaultGenOptions()
	o.Experts, o.TopK, o.Layers, o.Ranks, o.TokensPerRank = 8, 2, 1, 2, 2
	src, _ := traces.Generate(o)
	path := filepath.Join(dir, "t.jsonl")
	if err := traces.EncodeFile(path, traces.FormatJSONL, src); err != nil {
		t.Fatal(err)
	}
	in, err := traces.InspectFile(path, report.Host{CPU: "test cpu"})
	if err != nil {
		t.Fatal(err)
	}
	var tab strings.Builder
	if err := in.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	if want := "trace       " + path + "\nhost        test cpu"; !strings.HasPrefix(tab.String(), want) || !strings.Contains(tab.String(), "\nprovenance  ") {
		t.Errorf("table:\n%s\nwant it to begin %q, then the summary", tab.String(), want)
	}
	var js strings.Builder
	if err := in.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"file", "host", "header", "records", "layers"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, js.String())
		}
	}
	if _, err := traces.InspectFile(filepath.Join(dir, "nope.bin"), report.Host{}); err == nil {
		t.Error("a missing file inspects")
	}
}

// CheckLayer refuses a trace the layer would, naming the field.
func TestCheckLayer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(o *traces.GenOptions)
		field string
	}{
		{"the defaults", func(*traces.GenOptions) {}, ""},
		{"unknown nodes: one", func(o *traces.GenOptions) { o.GPUsPerNode = 0 }, ""},
		{"experts not on whole ranks", func(o *traces.GenOptions) { o.Ranks = 3 }, "experts"},
		{"top-k past the experts", func(o *traces.GenOptions) { o.TopK = 300 }, "topk"},
		{"no tokens", func(o *traces.GenOptions) { o.TokensPerRank = 0 }, "tokens"},
	} {
		o := traces.DefaultGenOptions()
		tc.edit(&o)
		err := o.CheckLayer()
		switch fs := field.Fields(err); {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (len(fs) == 0 || fs[0].Field != tc.field):
			t.Errorf("%s: got %v, want an error about %s", tc.name, err, tc.field)
		}
	}
}
