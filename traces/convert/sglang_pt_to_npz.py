#!/usr/bin/env python3
"""Convert SGLang expert-distribution dumps (.pt) to .npz for `moebench trace convert`.

Reads what SGLang's expert distribution recorder writes into
$SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR:

  per_token mode: one file per rank, records[] with topk_ids_of_layer
                  int32 [layers, tokens, k] (-1 padded), forward_pass_id, rank,
                  plus last_physical_to_logical_map [layers, physical].
  stat mode:      logical_count [steps, layers, logical experts].

and writes arrays the Go side reads:

  topk_ids                 int32 [layers, tokens, k]  (records concatenated on tokens)
  physical_to_logical_map  int32 [layers, physical]   (ids are physical when present)
  segment_offsets          int64 [records + 1]        token range of each record
  segment_steps            int64 [records]            forward_pass_id
  segment_ranks            int64 [records]            rank
  logical_count            int64 [steps, layers, experts]   (stat mode)

Usage:
  python3 sglang_pt_to_npz.py OUT.npz DUMP.pt [DUMP.pt ...]

Several per_token files (one per rank) go into one .npz. Needs torch and numpy.
"""

import sys

import numpy as np
import torch


def as_numpy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def load(path):
    # SGLang dumps plain dicts of tensors; weights_only keeps unpickling safe.
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return torch.load(path, map_location="cpu", weights_only=False)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    out, paths = argv[1], argv[2:]
    ids, steps, ranks, offsets = [], [], [], [0]
    p2l = None
    counts = None
    for path in paths:
        d = load(path)
        if "logical_count" in d:
            if counts is not None:
                raise SystemExit(f"{path}: more than one stat dump given")
            counts = as_numpy(d["logical_count"]).astype(np.int64)
        for i, rec in enumerate(d.get("records", [])):
            if "topk_ids_of_layer" not in rec:
                raise SystemExit(f"{path}: records[{i}] has no topk_ids_of_layer (recorder not in per_token mode?)")
            t = as_numpy(rec["topk_ids_of_layer"]).astype(np.int32)
            if t.ndim != 3:
                raise SystemExit(f"{path}: records[{i}].topk_ids_of_layer has shape {t.shape}, want [layers, tokens, k]")
            if ids and (t.shape[0], t.shape[2]) != (ids[0].shape[0], ids[0].shape[2]):
                raise SystemExit(f"{path}: records[{i}] has shape {t.shape}, earlier records {ids[0].shape}")
            ids.append(t)
            offsets.append(offsets[-1] + t.shape[1])
            steps.append(int(rec.get("forward_pass_id", len(steps))))
            ranks.append(int(rec.get("rank", -1)))
        if "last_physical_to_logical_map" in d:
            m = as_numpy(d["last_physical_to_logical_map"]).astype(np.int32)
            if p2l is not None and not np.array_equal(p2l, m):
                raise SystemExit(f"{path}: last_physical_to_logical_map differs from an earlier file's")
            p2l = m
    arrays = {}
    if ids:
        arrays["topk_ids"] = np.ascontiguousarray(np.concatenate(ids, axis=1))
        arrays["segment_offsets"] = np.asarray(offsets, dtype=np.int64)
        arrays["segment_steps"] = np.asarray(steps, dtype=np.int64)
        arrays["segment_ranks"] = np.asarray(ranks, dtype=np.int64)
        if p2l is not None:
            arrays["physical_to_logical_map"] = np.ascontiguousarray(p2l)
    elif counts is not None:
        arrays["logical_count"] = np.ascontiguousarray(counts)
    else:
        raise SystemExit("no per_token records or logical_count found in " + ", ".join(paths))
    np.savez_compressed(out, **arrays)
    for name, a in arrays.items():
        print(f"{name}: {a.dtype} {list(a.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
