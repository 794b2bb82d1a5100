package workloads

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/report"
	"moebench/moe"
)

// BackgroundLoad is a named background traffic source that runs beside
// the MoE layer on every rank.
type BackgroundLoad struct {
	Name        string
	Description string
	Source      string
	Background  moe.Background
}

// defaultBackgroundBytes is the write size of bulk background CTAs: the
// 8 B writes of the paper's loaded-RTT experiment (Fig. 6, Table 11),
// which load a queue with the most WQEs per byte.
const defaultBackgroundBytes = 8

var backgrounds = []BackgroundLoad{
	{Name: "none", Description: "no background traffic", Source: "—"},
	{Name: "bulk-shared", Description: "64 CTAs per rank streaming 8 B writes on the layer's own queues",
		Source:     "paper Fig. 6 / Table 11: 64 background CTAs, probe sharing their queue",
		Background: moe.Background{CTAs: 64, Bytes: defaultBackgroundBytes}},
	{Name: "bulk-reserved", Description: "64 CTAs per rank streaming 8 B writes on a queue reserved for them",
		Source:     "paper Fig. 6 / Table 11: 64 background CTAs, probe on its own queue",
		Background: moe.Background{CTAs: 64, Bytes: defaultBackgroundBytes, Reserved: true}},
}

// BackgroundNames lists the named background loads, sorted.
func BackgroundNames() []string {
	var n []string
	for _, b := range backgrounds {
		n = append(n, b.Name)
	}
	slices.Sort(n)
	return n
}

// Backgrounds returns copies of the named background loads.
func Backgrounds() []BackgroundLoad { return slices.Clone(backgrounds) }

// ParseBackground reads a named load ("none", "bulk-shared",
// "bulk-reserved") or a source "bulk:N[:shared|reserved][:BYTES]": N
// background CTAs per rank streaming BYTES-byte writes (default 8) on the
// layer's queues (shared, the default) or on queues of their own.
func ParseBackground(s string) (moe.Background, error) {
	spec := strings.ToLower(strings.TrimSpace(s))
	for _, b := range backgrounds {
		if b.Name == spec {
			return b.Background, nil
		}
	}
	parts := strings.Split(spec, ":")
	if parts[0] != "bulk" {
		return moe.Background{}, fmt.Errorf("background %s: want none, bulk-shared, bulk-reserved or bulk:N[:shared|reserved][:BYTES]", report.Quote(s))
	}
	if len(parts) < 2 || parts[1] == "" {
		return moe.Background{}, fmt.Errorf("background %s: bulk needs a CTA count, e.g. bulk:64", report.Quote(s))
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 {
		return moe.Background{}, fmt.Errorf("background %s: CTA count %s is not a non-negative integer", report.Quote(s), report.Quote(parts[1]))
	}
	b := moe.Background{CTAs: n, Bytes: defaultBackgroundBytes}
	for _, p := range parts[2:] {
		switch p {
		case "shared":
			b.Reserved = false
		case "reserved":
			b.Reserved = true
		default:
			v, err := strconv.Atoi(p)
			if err != nil || v < 1 {
				return moe.Background{}, fmt.Errorf("background %s: %s is neither shared, reserved nor a write size in bytes", report.Quote(s), report.Quote(p))
			}
			b.Bytes = v
		}
	}
	if err := b.Validate(); err != nil {
		return moe.Background{}, fmt.Errorf("background %s: %w", report.Quote(s), err)
	}
	return b, nil
}
