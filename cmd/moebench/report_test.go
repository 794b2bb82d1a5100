package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// reportInputs writes one JSON result of each kind the report takes.
func reportInputs(t testing.TB) []string {
	t.Helper()
	dir := t.TempDir()
	trace := filepath.Join("testdata", "replay", "rank-major.jsonl")
	var files []string
	for _, c := range []struct {
		name string
		args []string
	}{
		{"run.json", []string{"run", "--ranks", "8", "--gpus-per-node", "4", "--tokens", "4"}},
		{"sweep.json", []string{"sweep", "--ranks", "8,16", "--gpus-per-node", "4", "--tokens", "4", "--transport", "mini-gda,dc"}},
		{"size.json", []string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--workers", "1", "--no-payload-check"}},
		{"replay.json", []string{"replay", "--trace", trace, "--transport", "mini-gda"}},
		{"validate.json", []string{"validate", "--only", "single-op,inline"}},
	} {
		p := filepath.Join(dir, c.name)
		if _, _, err := runCLI(t.(*testing.T), append(c.args, "--format", "json", "--out", p)...); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

func TestReportIsSelfContained(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("no concurrency of its own; the race detector covers size's parallel runs in TestSizeFormats")
	}
	files := reportInputs(t)
	out := filepath.Join(t.TempDir(), "report.html")
	if _, _, err := runCLI(t, append(append([]string{"report"}, files...), "--out", out, "--title", "a <study>")...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if n := strings.Count(page, "<svg "); n != len(files) {
		t.Errorf("%d inline plots for %d results", n, len(files))
	}
	for _, w := range []string{"<title>a &lt;study&gt;</title>", "run: run.json", "sweep: sweep.json", "size: size.json", "replay: replay.json",
		"validate: validate.json", "Recommended: ", "Why not the others", "moebench dev size · figures modelled"} {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
	// Nothing to fetch: no script, no link, no source; the only URLs are
	// the SVG namespace names.
	if regexp.MustCompile(`(?i)<script|<link|<img|<iframe|\ssrc=|@import|url\(`).MatchString(page) {
		t.Error("the page refers to an outside resource")
	}
	for _, u := range regexp.MustCompile(`https?://[^"' <>]*`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
			t.Errorf("the page names %s", u)
		}
	}
}

func TestReportErrors(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("no concurrency of its own; the race detector covers size's parallel runs in TestSizeFormats")
	}
	dir := t.TempDir()
	mechOut := filepath.Join(dir, "mech.json")
	if _, _, err := runCLI(t, "mech", "ordering", "--format", "json", "--out", mechOut); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, "shard.json")
	if _, _, err := runCLI(t, "sweep", "--ranks", "8", "--gpus-per-node", "4", "--tokens", "4", "--transport", "mini-gda", "--format", "json", "--shard", "0/2", "--out", shard); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.json")
	os.WriteFile(junk, []byte("not json"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "give one or more result JSON files"},
		{[]string{"report", junk}, "junk.json: not a moebench JSON result"},
		{[]string{"report", shard}, "merge the shards first"},
		{[]string{"report", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"report", mechOut}, "report takes run, sweep, size, replay and validate results"},
	} {
		_, _, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
