package moe_test

import (
	"fmt"
	"runtime"
	"testing"

	"moebench/internal/hugepage"
	"moebench/moe"
	"moebench/transport/preset"
)

// BenchmarkLayerLLScale runs DeepSeek-V3's LL layer over mini-gda with one
// expert per rank past 256 ranks, at the default EP16 and at 1,024 ranks,
// and reports simulated events per second and bytes allocated per
// transport message (on the heap and mapped beside it).
func BenchmarkLayerLLScale(b *testing.B) { benchLayerScale(b, "mini-gda") }

// BenchmarkProxyLayerScale is the same layer over mini-proxy, whose
// producers, rings and CPU workers add records and events of their own.
// (Its name keeps it out of the PGO profile's -bench LayerLLScale.)
func BenchmarkProxyLayerScale(b *testing.B) { benchLayerScale(b, "mini-proxy") }

func benchLayerScale(b *testing.B, presetName string) {
	for _, ranks := range []int{16, 1024} {
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			b.ReportAllocs()
			s := moe.Shape{Experts: max(256, ranks), TopK: 8, Hidden: 7168, Tokens: 128, Ranks: ranks, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
			var msgs int64
			var events uint64
			allocated := func() int64 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return int64(ms.TotalAlloc) + hugepage.MappedTotal()
			}
			alloc := allocated()
			for b.Loop() {
				res := runLayer(b, s, moe.LL, presetName, preset.Options{}, moe.Background{}, false)
				msgs += res.Dispatch.Messages + res.Combine.Messages
				events += res.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds()/1e6, "Mevents/s")
			b.ReportMetric(float64(allocated()-alloc)/float64(msgs), "B/msg")
		})
	}
}
