package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The README's layout table names every package of the tree, and only
// those: a folder of Go code that is not in the table, or a row whose
// folder is gone, fails.
func TestREADMELayoutIsTheTree(t *testing.T) {
	t.Parallel()
	text := readme(t)
	start := strings.Index(text, "| path | what |")
	if start < 0 {
		t.Fatal("README lacks the layout table")
	}
	table := text[start:]
	table = table[:strings.Index(table, "\n\n")]
	var listed []string
	for _, row := range strings.Split(table, "\n")[2:] {
		cell := strings.Split(row, "|")[1]
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)

	var tree []string
	sourceFiles(t, func(_, pkg string) {
		if !slices.Contains(tree, pkg) {
			tree = append(tree, pkg)
		}
	})
	slices.Sort(tree)
	if !slices.Equal(listed, tree) {
		t.Errorf("README layout lists\n  %v\nthe tree's packages are\n  %v", listed, tree)
	}
}

// layers orders the packages bottom up: the engine, the profiles, the
// hardware models, the seam, the mechanisms and presets, routing, the
// layer, what stands on the layer, the CLI and the published results it
// validates against. A package imports only from its own layer or below.
var layers = [][]string{
	{"internal/field", "internal/flagvalue", "internal/hugepage", "internal/inputfile", "internal/outfile", "internal/plot", "internal/prefetch", "internal/readme", "internal/report", "internal/shard", "internal/summary"},
	{"sim", "fault"},
	{"profile"},
	{"hw"},
	{"transport"},
	{"transport/gda", "transport/proxy", "transport/srd"},
	{"transport/preset", "transport/toymech"},
	{"routing"},
	{"moe"},
	{"workloads", "traces", "microbench", "sizing", "budget", "native", "native/emunic"},
	{"replay", "native/layer", "native/calib", "native/calib/calibtest"},
	// The result documents and their reporters, over every library whose
	// results they carry.
	{"results"},
	// The points of a run or sweep and their run, whose items name their
	// swept values as the documents do.
	{"sweep"},
	// Published results sit beside the CLI, above every fit.
	{"published", "cmd/moebench"},
}

// No package imports one above it, and every package has a layer.
func TestNoUpwardImport(t *testing.T) {
	t.Parallel()
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	fset := token.NewFileSet()
	sourceFiles(t, func(p, pkg string) {
		own, ok := layer[pkg]
		if !ok {
			t.Errorf("%s: package %s has no layer in layers", p, pkg)
			return
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			dep, ok := strings.CutPrefix(path, "moebench/")
			if !ok {
				continue
			}
			if l, known := layer[dep]; !known || l > own {
				t.Errorf("%s: %s imports %s, above it", p, pkg, dep)
			}
		}
	})
}

// sourceFiles calls fn with each non-test Go file of the repository and
// its package's folder relative to the root.
func sourceFiles(t *testing.T, fn func(path, pkg string)) {
	t.Helper()
	root := "../.."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		fn(p, filepath.ToSlash(dir))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
