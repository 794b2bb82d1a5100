package main

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// shardSpec is one slice of a sweep or sizing study: point i belongs to
// shard i mod count, so that every shard gets a fair share of a grid whose
// cost grows along one axis.
type shardSpec struct {
	index, count int
	from         string // where the index came from, for the header
}

// all is the whole study.
func (s shardSpec) all() bool { return s.count <= 1 }

// has reports whether point i belongs to this shard.
func (s shardSpec) has(i int) bool { return s.count <= 1 || i%s.count == s.index }

// shardInfo is what a shard's JSON says about its slice; moebench merge
// reads it back.
type shardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Total is the number of points (sweep runs, sizing candidates) in
	// the whole study.
	Total int `json:"total"`
	// Points are the study's indices of this shard's results (sweep).
	Points []int `json:"points,omitempty"`
	// Study fingerprints the flags that define the study, so that merge
	// refuses shards of different ones.
	Study string `json:"study"`
}

// studyFlags are the flags that do not change what a study computes.
var notStudyFlags = map[string]bool{"shard": true, "out": true, "format": true, "progress": true, "log-level": true, "plot": true, "jobs": true}

// studyPrint fingerprints the flags given, in the order they are defined
// (not the order they were typed).
func studyPrint(fs *pflag.FlagSet) string {
	h := sha256.New()
	fs.Visit(func(f *pflag.Flag) {
		if !notStudyFlags[f.Name] {
			fmt.Fprintf(h, "--%s=%s\n", f.Name, f.Value.String())
		}
	})
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// The array variables of the schedulers --shard auto reads.
const (
	envSlurmID    = "SLURM_ARRAY_TASK_ID"
	envSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	envSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	envSlurmStep  = "SLURM_ARRAY_TASK_STEP"
	envK8sIndex   = "JOB_COMPLETION_INDEX"
)

// parseShard reads --shard: "I/N" (0 <= I < N), "auto" (a Slurm job
// array's task id and count) or "auto/N" (the index from Slurm or from a
// Kubernetes Indexed Job's completion index, the count given). getenv
// reads the environment.
func parseShard(s string, getenv func(string) string) (shardSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return shardSpec{count: 1}, nil
	}
	head, tail, hasCount := strings.Cut(s, "/")
	count := 0
	if hasCount {
		n, err := strconv.Atoi(strings.TrimSpace(tail))
		if err != nil || n < 1 {
			return shardSpec{}, fmt.Errorf("--shard %q: the count after / must be a whole number of at least 1", s)
		}
		count = n
	}
	head = strings.TrimSpace(head)
	if head != "auto" {
		if !hasCount {
			return shardSpec{}, fmt.Errorf("--shard %q: want I/N (e.g. 0/8), auto or auto/N", s)
		}
		i, err := strconv.Atoi(head)
		if err != nil || i < 0 || i >= count {
			return shardSpec{}, fmt.Errorf("--shard %q: the index before / must be a whole number in [0, %d)", s, count)
		}
		return shardSpec{index: i, count: count, from: "--shard " + s}, nil
	}
	envInt := func(name string) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, true, fmt.Errorf("--shard %s: %s=%q is not a whole number", s, name, v)
		}
		return n, true, nil
	}
	id, slurm, err := envInt(envSlurmID)
	if err != nil {
		return shardSpec{}, err
	}
	if slurm {
		if step, ok, err := envInt(envSlurmStep); err != nil {
			return shardSpec{}, err
		} else if ok && step != 1 {
			return shardSpec{}, fmt.Errorf("--shard %s: %s=%d: submit the array without a step (e.g. --array=0-%d)", s, envSlurmStep, step, max(count, 2)-1)
		}
		lo, _, err := envInt(envSlurmMin)
		if err != nil {
			return shardSpec{}, err
		}
		n, ok, err := envInt(envSlurmCount)
		if err != nil {
			return shardSpec{}, err
		}
		switch {
		case !ok && count == 0:
			return shardSpec{}, fmt.Errorf("--shard %s: %s is set but %s is not; give the count as --shard auto/N", s, envSlurmID, envSlurmCount)
		case ok && count > 0 && n != count:
			return shardSpec{}, fmt.Errorf("--shard %s: the array has %d tasks (%s), not %d", s, n, envSlurmCount, count)
		case ok:
			count = n
		}
		i := id - lo
		if i < 0 || i >= count {
			return shardSpec{}, fmt.Errorf("--shard %s: task %d of an array from %d has index %d, outside [0, %d)", s, id, lo, i, count)
		}
		return shardSpec{index: i, count: count, from: fmt.Sprintf("Slurm array task %d", id)}, nil
	}
	i, k8s, err := envInt(envK8sIndex)
	if err != nil {
		return shardSpec{}, err
	}
	if k8s {
		if count == 0 {
			return shardSpec{}, fmt.Errorf("--shard %s: %s=%d is set but Kubernetes does not tell a pod the number of completions: give it as --shard auto/N", s, envK8sIndex, i)
		}
		if i < 0 || i >= count {
			return shardSpec{}, fmt.Errorf("--shard %s: %s=%d is outside [0, %d)", s, envK8sIndex, i, count)
		}
		return shardSpec{index: i, count: count, from: fmt.Sprintf("Kubernetes completion index %d", i)}, nil
	}
	return shardSpec{}, fmt.Errorf("--shard %s: neither %s (a Slurm job array) nor %s (a Kubernetes Indexed Job) is set; give --shard I/N", s, envSlurmID, envK8sIndex)
}
