// Package profile holds platform profiles: the measured constants that the
// hardware models run on.
//
// A profile is data, not code. Built-in profiles are JSON files embedded from
// data/; users load their own files the same way and override any constant by
// name (moebench --set gpu.sm_clock_mhz=1500). Every constant a model reads is
// declared once in the schema (schema_*.go) with its unit, its valid range and
// what it means; every value in a profile carries the source it came from: a
// table or figure of the paper, a local measurement, or a fit with the data it
// was fitted to. Each value also states its kind (Kind): datasheet, paper,
// fit (to the paper's microbenchmarks), measured (this project's native
// runs) or assumption; every built-in constant states one. A profile names
// a base merged first, and each constant remembers which profile set it,
// so a listing tells a platform's own values from those it inherits.
// Loading checks names against the schema and values against their
// ranges, and errors name the file, the line and the constant.
//
// The hardware models read a profile as typed specs (spec.go: GPU, NIC,
// NVLink, Recovery, Compute), each resolving its constants by name once,
// through Get, so that Unread still tells a --set that no model reads.
package profile
