package moe

import (
	"fmt"
	"strings"

	"moebench/internal/report"
)

// Mode is DeepEP's kernel family.
type Mode uint8

// The modes. The zero Mode is invalid.
const (
	LL     Mode = iota + 1 // low latency: one write per selection, QP = local expert
	Normal                 // high throughput: deduplicated per rank, chunked, tail atomics
)

// String returns the name ParseMode reads.
func (m Mode) String() string {
	switch m {
	case LL:
		return "ll"
	case Normal:
		return "normal"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode reads "ll" or "normal".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ll", "low-latency":
		return LL, nil
	case "normal", "ht":
		return Normal, nil
	}
	return 0, fmt.Errorf("unknown mode %s (want ll or normal)", report.Quote(s))
}
