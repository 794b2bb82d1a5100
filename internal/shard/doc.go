// Package shard splits a study (a sweep's points, a sizing study's
// candidates) over the tasks of a cluster job and checks the pieces back
// in: Parse reads --shard (I/N, or a Slurm job array's or a Kubernetes
// Indexed Job's index from the environment), Spec says which points a
// task runs, Info is what a shard's JSON says about its slice, Check
// cross-checks the shards of one study, and MergeSweep puts a sweep's
// results back in study order. Point i belongs to shard i mod N, so that
// every shard gets a fair share of a grid whose cost grows along an axis.
package shard
