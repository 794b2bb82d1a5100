package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"moebench/internal/report"
	"moebench/sizing"
)

const mergeExamples = `  moebench merge shard-*.json --out sweep.json
  moebench merge size-*.json --format table
  moebench merge size-*.json --out size.json --plot front.svg
`

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "merge SHARD.json... [flags]", mergeExamples, stderr)
	var out outputFlags
	fs.StringVar(&out.format, "format", "json", "output format: json (as the unsharded run writes it), or for size table or csv")
	fs.StringVarP(&out.out, "out", "o", "", "write the result to `FILE` (atomically) instead of stdout")
	plotPath := fs.String("plot", "", "also draw the merged result to `FILE` (.svg or .png)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := checkPlotPath("--plot", *plotPath); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: merge: give the shards' JSON files", errUsage)
	}
	shards, err := readShards(fs.Args())
	if err != nil {
		return err
	}
	switch shards[0].head.Command {
	case "sweep":
		if out.format != "json" {
			return fmt.Errorf("%w: --format %s: a merged sweep is written as JSON (the table needs the runs themselves)", errUsage, out.format)
		}
		doc, err := mergeSweep(shards)
		if err != nil {
			return err
		}
		if err := out.emit(stdout, func(w io.Writer) error { return report.WriteJSON(w, doc) }); err != nil {
			return err
		}
		if *plotPath != "" {
			var ld layerDoc
			if err := decodeVia(func(w io.Writer) error { return report.WriteJSON(w, doc) }, &ld); err != nil {
				return err
			}
			return writePlot(*plotPath, sweepFigure(&ld))
		}
		return nil
	case "size":
		h, res, err := mergeSize(shards)
		if err != nil {
			return err
		}
		return emitSize(&out, *plotPath, stdout, h, res)
	}
	return fmt.Errorf("%s: shards of %q cannot be merged (sweep and size can)", shards[0].path, shards[0].head.Command)
}

// shardFile is one shard as read.
type shardFile struct {
	path  string
	data  []byte
	head  report.Header
	raw   json.RawMessage // the header as written
	shard shardInfo
}

// readShards reads and cross-checks the shards: one study (same command,
// flags, profile and version; hosts may differ), every index once.
func readShards(paths []string) ([]shardFile, error) {
	var files []shardFile
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		files = append(files, shardFile{path: p, data: data})
	}
	return parseShards(files)
}

// parseShards is readShards on files already read.
func parseShards(files []shardFile) ([]shardFile, error) {
	var out []shardFile
	for _, in := range files {
		p, data := in.path, in.data
		var probe struct {
			Header json.RawMessage `json:"header"`
			Shard  *shardInfo      `json:"shard"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return nil, fmt.Errorf("%s: not a moebench JSON result: %v", p, err)
		}
		if probe.Shard == nil || probe.Header == nil {
			return nil, fmt.Errorf("%s: not a shard (no \"shard\" field): run sweep or size with --shard I/N --format json", p)
		}
		f := shardFile{path: p, data: data, raw: probe.Header, shard: *probe.Shard}
		if err := json.Unmarshal(probe.Header, &f.head); err != nil {
			return nil, fmt.Errorf("%s: header: %v", p, err)
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b shardFile) int { return a.shard.Index - b.shard.Index })
	first := &out[0]
	if first.shard.Count < 1 {
		return nil, fmt.Errorf("%s: shard count %d", first.path, first.shard.Count)
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
		case f.shard.Study != first.shard.Study:
			return nil, fmt.Errorf("%s: a different study from %s (the flags that define it differ)", f.path, first.path)
		case f.shard.Count != first.shard.Count || f.shard.Total != first.shard.Total:
			return nil, fmt.Errorf("%s: shard %d of %d (%d points) does not belong with %s, shard %d of %d (%d points)",
				f.path, f.shard.Index, f.shard.Count, f.shard.Total, first.path, first.shard.Index, first.shard.Count, first.shard.Total)
		case !bytes.Equal(study(f.head), study(first.head)):
			return nil, fmt.Errorf("%s: a different study from %s (command, version, profile, seed or flags differ in the header)", f.path, first.path)
		case f.shard.Index < 0 || f.shard.Index >= f.shard.Count:
			return nil, fmt.Errorf("%s: shard index %d outside [0, %d)", f.path, f.shard.Index, f.shard.Count)
		}
		if p, dup := seen[f.shard.Index]; dup {
			return nil, fmt.Errorf("%s: shard %d given twice (also %s)", f.path, f.shard.Index, p)
		}
		seen[f.shard.Index] = f.path
	}
	if n := first.shard.Count; len(seen) != n {
		// Indices are distinct and below n, so some are missing: name
		// the first few.
		var missing []string
		for i := 0; i < n && len(missing) < 8; i++ {
			if _, ok := seen[i]; !ok {
				missing = append(missing, fmt.Sprint(i))
			}
		}
		return nil, fmt.Errorf("merge: %d of %d shards missing (shard %s…)", n-len(seen), n, strings.Join(missing, ", "))
	}
	return out, nil
}

// mergedSweep is a sweep's unsharded JSON.
type mergedSweep struct {
	Header  json.RawMessage   `json:"header"`
	Results []json.RawMessage `json:"results"`
}

func mergeSweep(shards []shardFile) (*mergedSweep, error) {
	total := shards[0].shard.Total
	docs := make([]sweepShardDoc, len(shards))
	n := 0
	for i, f := range shards {
		doc := &docs[i]
		if err := json.Unmarshal(f.data, doc); err != nil {
			return nil, fmt.Errorf("%s: %v", f.path, err)
		}
		if len(doc.Results) != len(doc.Shard.Points) {
			return nil, fmt.Errorf("%s: %d results for %d points", f.path, len(doc.Results), len(doc.Shard.Points))
		}
		n += len(doc.Results)
	}
	if n != total {
		return nil, fmt.Errorf("merge: %d results in the shards, the sweep has %d points", n, total)
	}
	res := make([]json.RawMessage, total)
	for i, f := range shards {
		doc := &docs[i]
		for i, p := range doc.Shard.Points {
			switch {
			case p < 0 || p >= total:
				return nil, fmt.Errorf("%s: point %d outside the sweep's %d", f.path, p, total)
			case p%f.shard.Count != f.shard.Index:
				return nil, fmt.Errorf("%s: point %d is not shard %d's", f.path, p, f.shard.Index)
			case res[p] != nil:
				return nil, fmt.Errorf("%s: point %d given twice", f.path, p)
			}
			res[p] = doc.Results[i]
		}
	}
	for p, r := range res {
		if r == nil {
			return nil, fmt.Errorf("merge: point %d of the sweep's %d is in no shard", p, total)
		}
	}
	return &mergedSweep{Header: shards[0].raw, Results: res}, nil
}

func mergeSize(shards []shardFile) (report.Header, *sizing.Result, error) {
	var all []sizing.Candidate
	var lim *sizing.Limits
	for _, f := range shards {
		var doc sizeShardDoc
		if err := json.Unmarshal(f.data, &doc); err != nil {
			return report.Header{}, nil, fmt.Errorf("%s: %v", f.path, err)
		}
		if lim == nil {
			lim = &doc.Limits
		} else if *lim != doc.Limits {
			return report.Header{}, nil, fmt.Errorf("%s: limits differ from %s's", f.path, shards[0].path)
		}
		for _, c := range doc.Candidates {
			if c.Index%f.shard.Count != f.shard.Index {
				return report.Header{}, nil, fmt.Errorf("%s: candidate %d is not shard %d's", f.path, c.Index, f.shard.Index)
			}
		}
		all = append(all, doc.Candidates...)
	}
	if len(all) != shards[0].shard.Total {
		return report.Header{}, nil, fmt.Errorf("merge: %d candidates in the shards, the study has %d", len(all), shards[0].shard.Total)
	}
	res, err := sizing.Finish(all, *lim)
	if err != nil {
		return report.Header{}, nil, fmt.Errorf("merge: %w", err)
	}
	return shards[0].head, res, nil
}
