package microbench

import (
	"fmt"
	"math"

	"moebench/profile"
	"moebench/sim"
	"moebench/transport/gda"
	"moebench/transport/proxy"
)

// proxySingleOp is Table 3's mini-proxy rows and Table 9's cold/warm pairs.
func proxySingleOp(p *profile.Profile) ([]Row, error) {
	var rows []Row
	for _, c := range Table3Proxy() {
		for i, st := range []proxy.CPUState{proxy.Cold, proxy.Warm} {
			r, err := proxy.SingleOp(p, proxy.Single(c.Handoff, c.Completion, st), 6)
			if err != nil {
				return nil, fmt.Errorf("proxy-single-op %s, %s: %w", c.Name, st, err)
			}
			src := "Table 3"
			if st == proxy.Warm {
				src = "Table 9"
			}
			name := c.Name + ", " + st.String()
			issueSrc := src
			if i == 1 {
				issueSrc = ""
			}
			rows = append(rows,
				Row{"proxy-single-op", name, "issue (enqueue)", "µs", c.Issue[i], r.Issue.Us(), issueSrc},
				Row{"proxy-single-op", name, "put+completion", "µs", c.PutC[i], r.PutC.Us(), src},
				Row{"proxy-single-op", name, "RTT", "µs", c.RTT[i], r.RTT.Us(), src},
				Row{"proxy-single-op", name, "descriptor to worker pick-up", "µs", nan, r.Handoff.Us(), ""},
			)
		}
	}
	return pibOnly(p, rows), nil
}

// capacity is one message-rate run: T workers polling 8 rings each, one
// tuned producer per ring posting 8 B writes back to back.
func capacity(p *profile.Profile, workers, batch int, st proxy.CPUState) (float64, error) {
	return proxy.Stream(p, proxy.StreamConfig{
		Proxy:          proxy.Config{Workers: workers, Rings: 8 * workers, Batch: batch, Handoff: proxy.Tuned, Completion: proxy.CompletionGPU, State: st},
		ThreadsPerRing: 1, Bytes: 8, Messages: 6000,
	})
}

// proxyCapacity is Table 10's mini-proxy rows and Fig. 7's worker sweep.
func proxyCapacity(p *profile.Profile) ([]Row, error) {
	paper := map[[2]int][2]float64{{1, 1}: {2.6, 6.6}, {1, 16}: {14.4, 28.6}}
	var rows []Row
	got := map[[3]int]float64{}
	for _, b := range []int{1, 16} {
		for _, t := range []int{1, 2, 4, 8} {
			for i, st := range []proxy.CPUState{proxy.Cold, proxy.Warm} {
				v, err := capacity(p, t, b, st)
				if err != nil {
					return nil, fmt.Errorf("proxy-capacity T=%d B=%d %s: %w", t, b, st, err)
				}
				got[[3]int{t, b, i}] = v
				want, src := nan, ""
				if pw, ok := paper[[2]int{t, b}]; ok {
					want, src = pw[i], "Table 10"
				}
				rows = append(rows, Row{"proxy-capacity", fmt.Sprintf("mini-proxy, B=%d, %d workers, %s", b, t, st), "message rate", "M msg/s", want, v, src})
			}
		}
	}
	rows = append(rows, Row{"proxy-capacity", "mini-proxy, 1 worker, cold, B=16 vs B=1", "rate ratio", "ratio", 5.5,
		got[[3]int{1, 16, 0}] / got[[3]int{1, 1, 0}], "Table 10 / §4.2"})
	return pibOnly(p, rows), nil
}

// loadedConfig is the configuration of Table 11's mini-proxy rows:
// T4/R32/B16 with the multi-producer (baseline) handoff, since background
// CTAs share the rings, and warm workers, since the background keeps them
// loaded (App. C.1).
func loadedConfig(ctas int, reserved bool) proxy.LoadedConfig {
	return proxy.LoadedConfig{
		Proxy:          proxy.Config{Workers: 4, Rings: 32, Batch: 16, Handoff: proxy.Baseline, Completion: proxy.CompletionHost, State: proxy.Warm},
		BackgroundCTAs: ctas, ThreadsPerCTA: 8, Reserved: reserved,
		Probes: 3, Warmup: 300 * sim.Microsecond,
	}
}

// proxyLoaded is Fig. 6 / Table 11: the probe's round trip with the
// background sharing its ring, against a ring of its own.
func proxyLoaded(p *profile.Profile) ([]Row, error) {
	var rows []Row
	rtt := map[bool]float64{}
	for _, ctas := range []int{0, 1, 4, 16, 64} {
		for _, reserved := range []bool{false, true} {
			r, err := proxy.Loaded(p, loadedConfig(ctas, reserved))
			if err != nil {
				return nil, fmt.Errorf("proxy-loaded %d CTAs: %w", ctas, err)
			}
			ring := "shared ring"
			if reserved {
				ring = "reserved ring"
			}
			name := fmt.Sprintf("T4/R32/B16, %s, %d background CTAs", ring, ctas)
			want, wantRate, src := nan, nan, ""
			if ctas == 64 {
				src = "Table 11"
				want, wantRate = 2190, 47.5
				if reserved {
					want, wantRate = 115, 44.9
				}
				rtt[reserved] = r.RTT.Us()
			}
			rows = append(rows, Row{"proxy-loaded", name, "probe RTT p50", "µs", want, r.RTT.Us(), src})
			if ctas > 0 {
				rows = append(rows, Row{"proxy-loaded", name, "background carried", "M msg/s", wantRate, r.BgRate, src})
			}
		}
	}
	rows = append(rows, Row{"proxy-loaded", "T4/R32/B16, 64 background CTAs", "RTT shared / reserved", "ratio", 2190.0 / 115, rtt[false] / rtt[true], "Table 11"})
	return pibOnly(p, rows), nil
}

var goodputSizes = []int{8, 64, 256, 512, 1024, 2048, 4096, 7168, 8192, 16384, 32768}

// goodput is Fig. 8: pipelined pointer-write goodput against payload size,
// and the first size that reaches 90% of the 24.8 GB/s reference.
func goodput(p *profile.Profile) ([]Row, error) {
	ref := p.Get("link.reference_gbs")
	var rows []Row
	first := func(path string, paper float64, gbs func(size int) (float64, error)) error {
		hit := nan
		for _, size := range goodputSizes {
			v, err := gbs(size)
			if err != nil {
				return fmt.Errorf("goodput %s %d B: %w", path, size, err)
			}
			if v >= 0.9*ref && math.IsNaN(hit) {
				hit = float64(size)
			}
			rows = append(rows, Row{"goodput", fmt.Sprintf("%s, %d B", path, size), "goodput", "GB/s", nan, v, ""})
		}
		rows = append(rows, Row{"goodput", path, "first size at 90% of reference", "B", paper, hit, "Fig. 8"})
		return nil
	}
	// mini-proxy T4/R32/B16, one producer thread per ring, cold workers.
	err := first("mini-proxy T4/R32/B16", 2048, func(size int) (float64, error) {
		v, err := proxy.Stream(p, proxy.StreamConfig{
			Proxy:          proxy.Config{Workers: 4, Rings: 32, Batch: 16, Handoff: proxy.Baseline, Completion: proxy.CompletionHost, State: proxy.Cold},
			ThreadsPerRing: 1, Bytes: size, Messages: 3200,
		})
		return v * float64(size) / 1000, err
	})
	if err != nil {
		return nil, err
	}
	// mini-gda: 16 threads, each with its own QP on its own SM, 16 WQEs
	// per doorbell, payload named by pointer.
	err = first("mini-gda 16 QPs", 512, func(size int) (float64, error) {
		v, err := gda.Rate(p, gda.RateConfig{Threads: 16, QPs: 16, SMs: 16, PerDoorbell: 16, Style: gda.PubThread,
			Ordering: gda.OrderGPUFence, Payload: size, Inline: false, Depth: 1024, Messages: 3200})
		return v * float64(size) / 1000, err
	})
	if err != nil {
		return nil, err
	}
	return pibOnly(p, rows), nil
}
