package main

import (
	"fmt"
	"io"

	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/internal/shard"
	"moebench/results"
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
	shards, err := results.ReadShards(fs.Args())
	if err != nil {
		return fmt.Errorf("merge: %w", err)
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
		var ld *results.Layer
		if *plotPath != "" {
			if ld, err = results.MergedSweep(doc); err != nil {
				return err
			}
		}
		return out.emitPlotted(stdout, func(w io.Writer) error { return report.WriteJSON(w, doc) },
			*plotPath, ld, "the shards hold no run with a time to draw", nil)
	case "size":
		doc, err := results.MergeSize(shards)
		if err != nil {
			return err
		}
		return emitSize(&out, *plotPath, stdout, doc.Header, doc.Result)
	}
	return fmt.Errorf("%s: shards of %q cannot be merged (sweep and size can)", shards[0].Path, shards[0].Header.Command)
}
