package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shardRun runs a command once whole and in n shards, merges the shards
// and returns the whole output and the merged one.
func shardRun(t *testing.T, n int, args ...string) (whole, merged []byte, files []string) {
	t.Helper()
	dir := t.TempDir()
	wholePath := filepath.Join(dir, "whole.json")
	if _, _, err := runCLI(t, append(args, "--format", "json", "--out", wholePath)...); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if _, _, err := runCLI(t, append(args, "--format", "json", "--out", p, "--shard", fmt.Sprintf("%d/%d", i, n))...); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	mergedPath := filepath.Join(dir, "merged.json")
	// Shards in any order.
	rev := append([]string{}, files...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if _, _, err := runCLI(t, append(append([]string{"merge"}, rev...), "--out", mergedPath)...); err != nil {
		t.Fatal(err)
	}
	var err error
	if whole, err = os.ReadFile(wholePath); err != nil {
		t.Fatal(err)
	}
	if merged, err = os.ReadFile(mergedPath); err != nil {
		t.Fatal(err)
	}
	return whole, merged, files
}

func TestMergedShardsAreTheWholeRun(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("no concurrency of its own; the race detector covers size's parallel runs in TestSizeFormats")
	}
	for _, tc := range []struct {
		name string
		n    int
		args []string
	}{
		// More shards than points of one preset: some shards hold a
		// single result; seven points over three shards are uneven.
		{"sweep", 3, []string{"sweep", "--ranks", "8,16", "--tokens", "4,8", "--gpus-per-node", "4", "--transport", "mini-gda,dc"}},
		{"sweep with more shards than points", 5, []string{"sweep", "--ranks", "8", "--tokens", "4,8", "--gpus-per-node", "4", "--transport", "mini-gda"}},
		{"size", 3, []string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--workers", "1,2", "--no-payload-check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			whole, merged, _ := shardRun(t, tc.n, tc.args...)
			if !bytes.Equal(whole, merged) {
				wl, ml := strings.Split(string(whole), "\n"), strings.Split(string(merged), "\n")
				for i := range min(len(wl), len(ml)) {
					if wl[i] != ml[i] {
						t.Fatalf("merged shards differ from the whole run at line %d:\n--- merged\n%s\n--- whole\n%s", i+1, ml[i], wl[i])
					}
				}
				t.Fatalf("merged shards have %d lines, the whole run %d", len(ml), len(wl))
			}
		})
	}
}

func TestMergeRefusesBadShards(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("no concurrency of its own; the race detector covers size's parallel runs in TestSizeFormats")
	}
	_, _, files := shardRun(t, 3, "sweep", "--ranks", "8", "--tokens", "4,8", "--gpus-per-node", "4", "--transport", "mini-gda")
	dir := t.TempDir()
	other := filepath.Join(dir, "other-0.json")
	if _, _, err := runCLI(t, "sweep", "--ranks", "8", "--tokens", "4,16", "--gpus-per-node", "4", "--transport", "mini-gda",
		"--format", "json", "--out", other, "--shard", "0/3"); err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(dir, "whole.json")
	if _, _, err := runCLI(t, "run", "--ranks", "8", "--tokens", "4", "--gpus-per-node", "4", "--transport", "mini-gda", "--format", "json", "--out", whole); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"a shard missing", []string{files[0], files[2]}, "1 of 3 shards missing (shard 1…)", false},
		{"a shard twice", []string{files[0], files[1], files[1], files[2]}, "shard 1 given twice", false},
		{"another study", []string{other, files[1], files[2]}, "a different study", false},
		{"not a shard", []string{whole}, "not a shard", false},
		{"a table of a sweep", []string{files[0], files[1], files[2], "--format", "table"}, "written as JSON", true},
		{"no files", nil, "give the shards' JSON files", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := runCLI(t, append([]string{"merge"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if got := errors.Is(err, errUsage); got != tc.usage {
				t.Fatalf("usage error %v, want %v: %v", got, tc.usage, err)
			}
		})
	}
}

func TestShardNeedsJSON(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"sweep", "--shard", "0/2"},
		{"size", "--shard", "0/2"},
		{"sweep", "--shard", "0/2", "--format", "json", "--plot", "x.svg"},
	} {
		_, _, err := runCLI(t, args...)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, _, err := runCLI(t, "run", "--shard", "0/2"); err == nil || !strings.Contains(err.Error(), "unknown flag: --shard") {
		t.Errorf("run takes no --shard: %v", err)
	}
}
