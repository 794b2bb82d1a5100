package shard

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"moebench/internal/inputfile"
	"moebench/internal/report"
)

// Spec is one slice of a study.
type Spec struct {
	Index, Count int
	From         string // where the index came from
}

// All reports whether the spec is the whole study.
func (s Spec) All() bool { return s.Count <= 1 }

// Has reports whether point i belongs to this shard.
func (s Spec) Has(i int) bool { return s.Count <= 1 || i%s.Count == s.Index }

// Size is how many of total points belong to this shard.
func (s Spec) Size(total int) int {
	if s.All() {
		return total
	}
	n := total / s.Count
	if s.Index < total%s.Count {
		n++
	}
	return n
}

// The array variables of the schedulers Parse reads for "auto".
const (
	EnvSlurmID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	EnvSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmStep  = "SLURM_ARRAY_TASK_STEP"
	EnvK8sIndex   = "JOB_COMPLETION_INDEX"
)

// Parse reads --shard: "I/N" (0 <= I < N), "auto" (a Slurm job array's
// task id and count) or "auto/N" (the index from Slurm or from a
// Kubernetes Indexed Job's completion index, the count given). "" is the
// whole study. getenv reads the environment.
func Parse(s string, getenv func(string) string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{Count: 1}, nil
	}
	head, tail, hasCount := strings.Cut(s, "/")
	count := 0
	if hasCount {
		n, err := strconv.Atoi(strings.TrimSpace(tail))
		if err != nil || n < 1 {
			return Spec{}, fmt.Errorf("--shard %s: the count after / must be a whole number of at least 1", report.Quote(s))
		}
		count = n
	}
	head = strings.TrimSpace(head)
	if head != "auto" {
		if !hasCount {
			return Spec{}, fmt.Errorf("--shard %s: want I/N (e.g. 0/8), auto or auto/N", report.Quote(s))
		}
		i, err := strconv.Atoi(head)
		if err != nil || i < 0 || i >= count {
			return Spec{}, fmt.Errorf("--shard %s: the index before / must be a whole number in [0, %d)", report.Quote(s), count)
		}
		return Spec{Index: i, Count: count, From: "--shard " + s}, nil
	}
	envInt := func(name string) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, true, fmt.Errorf("--shard %s: %s=%s is not a whole number", report.Quote(s), name, report.Quote(v))
		}
		return n, true, nil
	}
	id, slurm, err := envInt(EnvSlurmID)
	if err != nil {
		return Spec{}, err
	}
	if slurm {
		if step, ok, err := envInt(EnvSlurmStep); err != nil {
			return Spec{}, err
		} else if ok && step != 1 {
			return Spec{}, fmt.Errorf("--shard %s: %s=%d: submit the array without a step (e.g. --array=0-%d)", s, EnvSlurmStep, step, max(count, 2)-1)
		}
		lo, _, err := envInt(EnvSlurmMin)
		if err != nil {
			return Spec{}, err
		}
		n, ok, err := envInt(EnvSlurmCount)
		if err != nil {
			return Spec{}, err
		}
		switch {
		case !ok && count == 0:
			return Spec{}, fmt.Errorf("--shard %s: %s is set but %s is not; give the count as --shard auto/N", s, EnvSlurmID, EnvSlurmCount)
		case ok && count > 0 && n != count:
			return Spec{}, fmt.Errorf("--shard %s: the array has %d tasks (%s), not %d", s, n, EnvSlurmCount, count)
		case ok:
			count = n
		}
		i := id - lo
		if count < 1 || i < 0 || i >= count {
			return Spec{}, fmt.Errorf("--shard %s: task %d of an array from %d has index %d, outside [0, %d)", s, id, lo, i, count)
		}
		return Spec{Index: i, Count: count, From: fmt.Sprintf("Slurm array task %d", id)}, nil
	}
	i, k8s, err := envInt(EnvK8sIndex)
	if err != nil {
		return Spec{}, err
	}
	if k8s {
		if count == 0 {
			return Spec{}, fmt.Errorf("--shard %s: %s=%d is set but Kubernetes does not tell a pod the number of completions: give it as --shard auto/N", s, EnvK8sIndex, i)
		}
		if i < 0 || i >= count {
			return Spec{}, fmt.Errorf("--shard %s: %s=%d is outside [0, %d)", s, EnvK8sIndex, i, count)
		}
		return Spec{Index: i, Count: count, From: fmt.Sprintf("Kubernetes completion index %d", i)}, nil
	}
	return Spec{}, fmt.Errorf("--shard %s: neither %s (a Slurm job array) nor %s (a Kubernetes Indexed Job) is set; give --shard I/N", s, EnvSlurmID, EnvK8sIndex)
}

// Info is what a shard's JSON says about its slice.
type Info struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Total is the number of points (sweep runs, sizing candidates) in
	// the whole study.
	Total int `json:"total"`
	// Points are the study's indices of this shard's results (sweep).
	Points []int `json:"points,omitempty"`
	// Study fingerprints the flags that define the study (StudyPrint), so
	// that a merge refuses shards of different ones.
	Study string `json:"study"`
}

// notStudy are the flags that do not change what a study computes.
var notStudy = map[string]bool{"shard": true, "out": true, "format": true, "progress": true, "log-level": true, "plot": true, "jobs": true, "max-memory": true}

// StudyPrint fingerprints the flags given, in the order they are defined
// (not the order they were typed), less those that only say where and how
// the result is written.
func StudyPrint(fs *pflag.FlagSet) string {
	h := sha256.New()
	fs.Visit(func(f *pflag.Flag) {
		if !notStudy[f.Name] {
			fmt.Fprintf(h, "--%s=%s\n", f.Name, f.Value.String())
		}
	})
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// File is one shard's JSON.
type File struct {
	Path   string
	Data   []byte
	Header report.Header
	Raw    json.RawMessage // the header as written
	Info   Info
}

// Check reads the shards' headers and cross-checks them: one study (same
// command, flags, profile and version; hosts may differ) and every index
// once. It returns them in index order.
func Check(files []File) ([]File, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no shard given")
	}
	var out []File
	for _, f := range files {
		var probe struct {
			Header json.RawMessage `json:"header"`
			Shard  *Info           `json:"shard"`
		}
		if err := json.Unmarshal(f.Data, &probe); err != nil {
			return nil, fmt.Errorf("%s: not a moebench JSON result: %v", f.Path, inputfile.JSONError("", f.Data, err))
		}
		if probe.Shard == nil || probe.Header == nil {
			return nil, fmt.Errorf("%s: not a shard (no \"shard\" field): run sweep or size with --shard I/N --format json", f.Path)
		}
		f.Raw, f.Info = probe.Header, *probe.Shard
		// Decoded from the whole file, so that an error names its line
		// and the field from the top (header.command).
		var hdr struct {
			Header *report.Header `json:"header"`
		}
		hdr.Header = &f.Header
		if err := inputfile.DecodeJSON(f.Path, f.Data, &hdr); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b File) int { return a.Info.Index - b.Info.Index })
	first := &out[0]
	if first.Info.Count < 1 {
		return nil, fmt.Errorf("%s: shard count %d", first.Path, first.Info.Count)
	}
	study := func(h report.Header) []byte {
		h.Host = report.Host{}
		b, _ := json.Marshal(h)
		return b
	}
	seen := map[int]string{}
	for i := range out {
		f := &out[i]
		switch {
		case f.Info.Study != first.Info.Study:
			return nil, fmt.Errorf("%s: a different study from %s (the flags that define it differ)", f.Path, first.Path)
		case f.Info.Count != first.Info.Count || f.Info.Total != first.Info.Total:
			return nil, fmt.Errorf("%s: shard %d of %d (%d points) does not belong with %s, shard %d of %d (%d points)",
				f.Path, f.Info.Index, f.Info.Count, f.Info.Total, first.Path, first.Info.Index, first.Info.Count, first.Info.Total)
		case string(study(f.Header)) != string(study(first.Header)):
			return nil, fmt.Errorf("%s: a different study from %s (command, version, profile, seed or flags differ in the header)", f.Path, first.Path)
		case f.Info.Index < 0 || f.Info.Index >= f.Info.Count:
			return nil, fmt.Errorf("%s: shard index %d outside [0, %d)", f.Path, f.Info.Index, f.Info.Count)
		}
		if p, dup := seen[f.Info.Index]; dup {
			return nil, fmt.Errorf("%s: shard %d given twice (also %s)", f.Path, f.Info.Index, p)
		}
		seen[f.Info.Index] = f.Path
	}
	if n := first.Info.Count; len(seen) != n {
		// Indices are distinct and below n, so some are missing: name
		// the first few.
		var missing []string
		for i := 0; i < n && len(missing) < 8; i++ {
			if _, ok := seen[i]; !ok {
				missing = append(missing, fmt.Sprint(i))
			}
		}
		return nil, fmt.Errorf("%d of %d shards missing (shard %s…)", n-len(seen), n, strings.Join(missing, ", "))
	}
	return out, nil
}

// Sweep is one sweep shard's JSON: the unsharded document's header and
// results, with the shard's place in the study.
type Sweep struct {
	Header  json.RawMessage   `json:"header"`
	Shard   Info              `json:"shard"`
	Results []json.RawMessage `json:"results"`
}

// Merged is a sweep's unsharded JSON.
type Merged struct {
	Header  json.RawMessage   `json:"header"`
	Results []json.RawMessage `json:"results"`
}

// MergeSweep puts checked sweep shards' results back in study order.
func MergeSweep(files []File) (*Merged, error) {
	total := files[0].Info.Total
	docs := make([]Sweep, len(files))
	n := 0
	for i, f := range files {
		doc := &docs[i]
		if err := inputfile.DecodeJSON(f.Path, f.Data, doc); err != nil {
			return nil, err
		}
		if len(doc.Results) != len(doc.Shard.Points) {
			return nil, fmt.Errorf("%s: %d results for %d points", f.Path, len(doc.Results), len(doc.Shard.Points))
		}
		n += len(doc.Results)
	}
	if n != total {
		return nil, fmt.Errorf("%d results in the shards, the sweep has %d points", n, total)
	}
	res := make([]json.RawMessage, total)
	for i, f := range files {
		doc := &docs[i]
		for k, p := range doc.Shard.Points {
			switch {
			case p < 0 || p >= total:
				return nil, fmt.Errorf("%s: point %d outside the sweep's %d", f.Path, p, total)
			case p%f.Info.Count != f.Info.Index:
				return nil, fmt.Errorf("%s: point %d is not shard %d's", f.Path, p, f.Info.Index)
			case res[p] != nil:
				return nil, fmt.Errorf("%s: point %d given twice", f.Path, p)
			}
			res[p] = doc.Results[k]
		}
	}
	return &Merged{Header: files[0].Raw, Results: res}, nil
}
