package results

import (
	"encoding/json"
	"fmt"

	"moebench/internal/inputfile"
	"moebench/internal/shard"
	"moebench/sizing"
)

// MergedSweep is the document of a merged sweep (shard.MergeSweep), its
// runs read back from the shards' JSON for the figure.
func MergedSweep(m *shard.Merged) (*Layer, error) {
	d := &Layer{Results: make([]Run, len(m.Results))}
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

// MergeSize finishes a sizing study from its checked shards (shard.Check):
// every shard's candidates, judged together against the limits they all
// carry, under the first shard's header. An error about one shard names
// its file; one about the whole study says merge.
func MergeSize(shards []shard.File) (*Size, error) {
	var all []sizing.Candidate
	var lim *sizing.Limits
	for _, f := range shards {
		var doc SizeShard
		if err := inputfile.DecodeJSON(f.Path, f.Data, &doc); err != nil {
			return nil, err
		}
		if lim == nil {
			lim = &doc.Limits
		} else if !lim.Equal(doc.Limits) {
			return nil, fmt.Errorf("%s: limits differ from %s's", f.Path, shards[0].Path)
		}
		for _, c := range doc.Candidates {
			if c.Index%f.Info.Count != f.Info.Index {
				return nil, fmt.Errorf("%s: candidate %d is not shard %d's", f.Path, c.Index, f.Info.Index)
			}
		}
		all = append(all, doc.Candidates...)
	}
	if len(all) != shards[0].Info.Total {
		return nil, fmt.Errorf("merge: %d candidates in the shards, the study has %d", len(all), shards[0].Info.Total)
	}
	res, err := sizing.Finish(all, *lim)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return &Size{Header: shards[0].Header, Result: res}, nil
}
