package published

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// No fit reads a published figure: the only importer of this package is
// the CLI's validate, and nothing there that fits (calibrate) imports it.
func TestOnlyValidateReadsPublished(t *testing.T) {
	t.Parallel()
	root := ".."
	fset := token.NewFileSet()
	var importers []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || filepath.Dir(p) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "moebench/published" {
				importers = append(importers, filepath.ToSlash(p))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(importers) == 0 {
		t.Fatal("nothing imports the published suites: validate should")
	}
	for _, p := range importers {
		dir, file := filepath.Split(p)
		if dir != "../cmd/moebench/" || !strings.HasPrefix(file, "validate") {
			t.Errorf("%s imports moebench/published: only validate may read published figures", p)
		}
	}
}

// Every row names its source and a configuration, and each figure is
// positive; the suite's rows are unique.
func TestSuitesWellFormed(t *testing.T) {
	t.Parallel()
	for _, s := range Suites() {
		if s.Profile == "" || s.Description == "" || len(s.Rows) == 0 {
			t.Errorf("suite %q lacks a profile, a description or rows", s.Name)
		}
		seen := map[string]bool{}
		for _, r := range s.Rows {
			key := r.Experiment + "/" + r.Case + "/" + r.Phase
			if seen[key] {
				t.Errorf("%s: %s twice", s.Name, key)
			}
			seen[key] = true
			if r.Source == "" || !(r.Value > 0) || (r.Phase != "dispatch" && r.Phase != "combine") {
				t.Errorf("%s: %s: source %q, value %v, phase %q", s.Name, key, r.Source, r.Value, r.Phase)
			}
			if got := r.Conditions.Experiment(); got != r.Experiment {
				t.Errorf("%s: %s: its conditions are those of %s", s.Name, key, got)
			}
		}
	}
	if _, err := Get("folklore"); err == nil {
		t.Error("Get of an unknown suite succeeded")
	}
}
