// Package summary condenses samples into the figures moebench reports:
// mean, minimum, maximum and the 50th and 99th percentiles. Of takes a
// slice (through montanaflynn/stats); a Stream takes values one at a time
// in bounded memory, exactly up to a thousand values and from log buckets
// 0.1% wide past that.
package summary

import (
	"math"
	"slices"

	"github.com/montanaflynn/stats"
)

// Summary is a figure across samples.
type Summary struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

// Of computes mean, min, max and percentiles (linear interpolation
// between closest ranks) of v; the zero Summary when v is empty.
func Of(v []float64) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	var s Summary
	s.Mean, _ = stats.Mean(v)
	s.Min, _ = stats.Min(v)
	s.Max, _ = stats.Max(v)
	s.P50, _ = stats.Percentile(v, 50)
	s.P99, _ = stats.Percentile(v, 99)
	return s
}

// ExactSamples is how many values a Stream keeps exactly; past that it
// folds them into log buckets, so memory stays bounded.
const ExactSamples = 1024

// bucketGrowth is the width of a log bucket: percentiles past
// ExactSamples values are good to 0.1%, the three significant digits the
// tables print.
const bucketGrowth = 1.001

// Stream summarizes a stream of values in bounded memory: count, sum,
// minimum and maximum exactly; percentiles exactly (as Of) up to
// ExactSamples values, then from log buckets 0.1% wide. The zero Stream
// is empty and ready.
type Stream struct {
	n        int
	sum      float64
	min, max float64
	exact    []float64
	buckets  map[int32]int64
}

// Add takes one value.
func (s *Stream) Add(v float64) {
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += v
	if s.buckets == nil && len(s.exact) < ExactSamples {
		s.exact = append(s.exact, v)
		return
	}
	if s.buckets == nil {
		s.buckets = map[int32]int64{}
		for _, x := range s.exact {
			s.buckets[bucketOf(x)]++
		}
		s.exact = nil
	}
	s.buckets[bucketOf(v)]++
}

// Bucketed reports whether the stream has passed ExactSamples values and
// holds buckets, not values.
func (s *Stream) Bucketed() bool { return s.buckets != nil }

func bucketOf(v float64) int32 {
	if v <= 0 {
		return math.MinInt32
	}
	return int32(math.Floor(math.Log(v) / math.Log(bucketGrowth)))
}

// N is how many values were added.
func (s *Stream) N() int { return s.n }

// Max is the largest value (0 when empty).
func (s *Stream) Max() float64 { return s.max }

// Mean is the values' mean (0 when empty).
func (s *Stream) Mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

// Summary is the stream's summary so far.
func (s *Stream) Summary() Summary {
	if s.n == 0 {
		return Summary{}
	}
	if s.buckets == nil {
		sum := Of(s.exact)
		sum.Mean = s.Mean()
		return sum
	}
	return Summary{Mean: s.Mean(), Min: s.min, Max: s.max, P50: s.quantile(50), P99: s.quantile(99)}
}

// quantile is the nearest-rank percentile from the buckets: the geometric
// middle of the bucket holding it, clamped to the observed range.
func (s *Stream) quantile(p float64) float64 {
	keys := make([]int32, 0, len(s.buckets))
	for k := range s.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := max(int64(math.Ceil(p/100*float64(s.n))), 1)
	var seen int64
	for _, k := range keys {
		seen += s.buckets[k]
		if seen >= want {
			if k == math.MinInt32 {
				return max(s.min, 0)
			}
			v := math.Pow(bucketGrowth, float64(k)+0.5)
			return min(max(v, s.min), s.max)
		}
	}
	return s.max
}
