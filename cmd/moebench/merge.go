package main

import (
	"encoding/json"
	"fmt"
	"io"

	"moebench/internal/inputfile"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/internal/shard"
	"moebench/results"
	"moebench/sizing"
)

const mergeExamples = `  moebench merge shard-*.json --out sweep.json
  moebench merge size-*.json --format table
  moebench merge size-*.json --out size.json --plot front.svg
`

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "merge SHARD.json... [flags]", mergeExamples, stdout)
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
	if err := checkFiles(out.outputs(outfile.Arg{Name: "--plot", Path: *plotPath}), outfile.Positional(fs.Args())); err != nil {
		return err
	}
	shards, err := readShards(fs.Args())
	if err != nil {
		return err
	}
	switch shards[0].Header.Command {
	case "sweep":
		if out.format != "json" {
			return fmt.Errorf("%w: --format %s: a merged sweep is written as JSON (the table needs the runs themselves)", errUsage, out.format)
		}
		doc, err := shard.MergeSweep(shards)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		// The figure first: one with nothing to draw is refused before
		// the output is written.
		var ld *results.Layer
		if *plotPath != "" {
			if ld, err = mergedLayer(doc); err != nil {
				return err
			}
			if err := checkFigure(*plotPath, ld, "the shards hold no run with a time to draw"); err != nil {
				return err
			}
		}
		out.Hold() // the result and the plot, both or neither
		defer out.Discard()
		if err := out.emit(stdout, func(w io.Writer) error { return report.WriteJSON(w, doc) }); err != nil {
			return err
		}
		if *plotPath != "" {
			if err := out.writePlot(*plotPath, ld); err != nil {
				return err
			}
		}
		return out.Commit()
	case "size":
		h, res, err := mergeSize(shards)
		if err != nil {
			return err
		}
		return emitSize(&out, *plotPath, stdout, h, res)
	}
	return fmt.Errorf("%s: shards of %q cannot be merged (sweep and size can)", shards[0].Path, shards[0].Header.Command)
}

// mergedLayer is the merged sweep's document, read from the shards' runs.
func mergedLayer(m *shard.Merged) (*results.Layer, error) {
	d := &results.Layer{Results: make([]results.Run, len(m.Results))}
	if err := json.Unmarshal(m.Header, &d.Header); err != nil {
		return nil, fmt.Errorf("merge: the header: %w", err)
	}
	for i, r := range m.Results {
		if err := json.Unmarshal(r, &d.Results[i]); err != nil {
			return nil, fmt.Errorf("merge: result %d: %w", i, err)
		}
	}
	return d, nil
}

// readShards reads the shards' files and cross-checks them.
func readShards(paths []string) ([]shard.File, error) {
	var files []shard.File
	for _, p := range paths {
		data, err := readResult(p)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		files = append(files, shard.File{Path: p, Data: data})
	}
	out, err := shard.Check(files)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return out, nil
}

func mergeSize(shards []shard.File) (report.Header, *sizing.Result, error) {
	var all []sizing.Candidate
	var lim *sizing.Limits
	for _, f := range shards {
		var doc results.SizeShard
		if err := inputfile.DecodeJSON(f.Path, f.Data, &doc); err != nil {
			return report.Header{}, nil, err
		}
		if lim == nil {
			lim = &doc.Limits
		} else if !lim.Equal(doc.Limits) {
			return report.Header{}, nil, fmt.Errorf("%s: limits differ from %s's", f.Path, shards[0].Path)
		}
		for _, c := range doc.Candidates {
			if c.Index%f.Info.Count != f.Info.Index {
				return report.Header{}, nil, fmt.Errorf("%s: candidate %d is not shard %d's", f.Path, c.Index, f.Info.Index)
			}
		}
		all = append(all, doc.Candidates...)
	}
	if len(all) != shards[0].Info.Total {
		return report.Header{}, nil, fmt.Errorf("merge: %d candidates in the shards, the study has %d", len(all), shards[0].Info.Total)
	}
	res, err := sizing.Finish(all, *lim)
	if err != nil {
		return report.Header{}, nil, fmt.Errorf("merge: %w", err)
	}
	return shards[0].Header, res, nil
}
