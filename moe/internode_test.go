package moe_test

import (
	"math"
	"sync"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
	"moebench/transport/preset"
)

// opTally counts what one phase posted to the transport.
type opTally struct {
	data, atomic   int64 // non-atomic bytes, atomic ops
	sameIndex      bool  // every op went to the rank of its sender's local index
	crossNode      bool  // every op left its node
	maxCh, dataMax int   // largest channel of any op, of a data op
}

// countingTransport wraps a transport and tallies every op posted, one
// tally per Open (notify, dispatch, combine).
type countingTransport struct {
	transport.Transport
	mu      sync.Mutex // Open may be called concurrently
	tallies []*opTally
}

func (c *countingTransport) Open(env *transport.Env) (transport.Conn, error) {
	conn, err := c.Transport.Open(env)
	if err != nil {
		return nil, err
	}
	t := &opTally{sameIndex: true, crossNode: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tallies = append(c.tallies, t)
	g := env.GPUsPerNode
	if env.NVLDomain > 0 {
		g = env.NVLDomain
	}
	return countingConn{conn, t, g}, nil
}

type countingConn struct {
	transport.Conn
	t *opTally
	g int // GPUs of an NVLink domain
}

func (c countingConn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	if op.Atomic {
		c.t.atomic++
	} else {
		c.t.data += int64(op.Bytes)
		c.t.dataMax = max(c.t.dataMax, op.Channel)
	}
	c.t.maxCh = max(c.t.maxCh, op.Channel)
	c.t.sameIndex = c.t.sameIndex && op.Src%c.g == op.Dst%c.g
	c.t.crossNode = c.t.crossNode && op.Src/c.g != op.Dst/c.g
	c.Conn.Post(e, w, op)
}

// domainShape is s with NVLink domains of d GPUs.
func domainShape(s moe.Shape, d int) moe.Shape {
	s.NVLDomain = d
	return s
}

func nodeShape(ranks, perNode, tokens int) moe.Shape {
	return moe.Shape{Experts: 64, TopK: 8, Hidden: 512, Tokens: tokens, Ranks: ranks, GPUsPerNode: perNode, Dispatch: moe.FP8, Combine: moe.BF16}
}

func runNodes(t *testing.T, s moe.Shape, lim moe.GroupLimit, presetName string, numSMs, chunk int, bg moe.Background, prof *profile.Profile) (*moe.Result, *moe.Routing, *countingTransport) {
	t.Helper()
	r, err := moe.Generate(s, moe.RoutingSpec{Limit: lim}, 11)
	if err != nil {
		t.Fatal(err)
	}
	p, err := preset.Get(presetName)
	if err != nil {
		t.Fatal(err)
	}
	layer, reserved := moe.Channels(s, moe.Normal, numSMs, bg)
	o := preset.Options{LocalExperts: layer}
	if reserved > 0 {
		o.QPsPerPeer = layer + reserved
	}
	tr, err := p.Transport(o)
	if err != nil {
		t.Fatal(err)
	}
	ct := &countingTransport{Transport: tr}
	if prof == nil {
		prof = profile.MustLoad("p-ib")
	}
	// In turn, so that the tallies come in the phases' order (the same
	// results as side by side).
	res, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: moe.Normal, Transport: ct, Profile: prof, NVLink: true,
		NumSMs: numSMs, Chunk: chunk, Background: bg, InTurn: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Correct {
		t.Fatalf("%d problems: %v", res.ProblemCount, res.Problems)
	}
	return res, r, ct
}

// forwardedPairs counts the (token, rank) pairs that cross NVLink: those
// whose rank is not the forwarder (the rank of the source's local index in
// the destination NVLink domain).
func forwardedPairs(r *moe.Routing) int64 {
	s := r.Shape
	n := r.Normal()
	g := s.GPUsPerNode
	if s.NVLDomain > 0 {
		g = s.NVLDomain
	}
	var pairs int64
	for src := range s.Ranks {
		for t := range r.TokensOf(src) {
			for _, dst := range n.RanksOf(src, t) {
				if int(dst) != int(dst)/g*g+src%g {
					pairs++
				}
			}
		}
	}
	return pairs
}

// Across nodes a token crosses the network once per destination node, to
// the rank of its sender's local index, and NVLink once per further rank
// on that node; combine moves the same pairs back.
func TestInternodeMovesOneRDMACopyPerNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    moe.Shape
		lim  moe.GroupLimit
	}{
		{"2x8 uniform", nodeShape(16, 8, 96), moe.GroupLimit{}},
		{"8x4 group-limited", nodeShape(32, 4, 64), moe.GroupLimit{TopK: 3}},
		{"4x2 uniform", nodeShape(8, 2, 48), moe.GroupLimit{}},
		// Two NVLink domains of 8 GPUs on hosts of 4 (a rack-scale
		// domain): only traffic between the domains crosses NICs.
		{"2 domains of 2x4", domainShape(nodeShape(16, 4, 96), 8), moe.GroupLimit{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, r, ct := runNodes(t, tc.s, tc.lim, "mini-gda", 0, 0, moe.Background{}, nil)
			s := tc.s
			n := r.Normal()
			if len(ct.tallies) != 3 {
				t.Fatalf("%d phases opened a connection, want notify, dispatch, combine", len(ct.tallies))
			}
			C := 12 // 24 SMs by default
			// Each rank's channels tell every other domain their counts:
			// an int per domain rank twice, and two for the domain.
			domains, perDomain := s.Nodes(), s.GPUsPerNode
			if s.NVLDomain > 0 {
				domains, perDomain = s.Ranks/s.NVLDomain, s.NVLDomain
			}
			meta := int64(s.Ranks*C*(domains-1)) * int64(4*(2*perDomain+2))
			tb := int64(s.NormalTokenBytes())
			cb := int64(s.NormalCombineTokenBytes())
			for _, ph := range []struct {
				name  string
				tally *opTally
				want  int64
				nvl   int64
				phase *moe.Phase
			}{
				{"dispatch", ct.tallies[1], n.RemoteNodeSends*tb + meta, forwardedPairs(r) * tb, &res.Dispatch},
				{"combine", ct.tallies[2], n.RemoteNodeSends * cb, forwardedPairs(r) * cb, &res.Combine},
			} {
				tl := ph.tally
				if tl.data != ph.want {
					t.Errorf("%s: %d RDMA bytes posted, want %d (one copy per remote (token, node) pair: %d pairs)", ph.name, tl.data, ph.want, n.RemoteNodeSends)
				}
				if !tl.sameIndex || !tl.crossNode {
					t.Errorf("%s: an op stayed in its node (%v) or went to another local index (%v)", ph.name, !tl.crossNode, !tl.sameIndex)
				}
				if got := tl.data + 8*tl.atomic; ph.phase.ScaleOutBytes != got {
					t.Errorf("%s: phase reports %d scale-out bytes, %d were posted", ph.name, ph.phase.ScaleOutBytes, got)
				}
				if ph.phase.NVLinkBytes != ph.nvl {
					t.Errorf("%s: %d NVLink bytes, want %d ((token, rank) pairs past the forwarder × token bytes)", ph.name, ph.phase.NVLinkBytes, ph.nvl)
				}
				if tl.dataMax >= C || tl.maxCh >= 2*C {
					t.Errorf("%s: data on channel %d, largest channel %d: want data on 0..%d and credits on %d..%d", ph.name, tl.dataMax, tl.maxCh, C-1, C, 2*C-1)
				}
			}
			// The one-hop simplification would have sent a copy per remote
			// rank.
			if n.RemoteNodeSends >= n.ByLocality[moe.Remote] {
				t.Errorf("%d remote (token, node) pairs, %d remote (token, rank) pairs: want fewer", n.RemoteNodeSends, n.ByLocality[moe.Remote])
			}
		})
	}
}

// At EP16 (two nodes of eight) with uniform top-8 routing over 256
// experts, sending per rank would multiply the scale-out copies by about 3.
func TestPerNodeSendingSavesAboutThreeTimes(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 512, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	n := mustGenerate(t, s, "uniform", 1).Normal()
	ratio := float64(n.ByLocality[moe.Remote]) / float64(n.RemoteNodeSends)
	t.Logf("remote (token, rank) / (token, node) pairs = %.2f", ratio)
	if ratio < 2.9 || ratio > 3.5 {
		t.Fatalf("ratio %.2f, want about 3 (16 ranks, 8 per node, top-8)", ratio)
	}
}

// DeepEP's count: per rank, its (token, node) pairs including its own node
// × hidden bytes (+ FP8 scales) over its kernel time.
func TestInternodeDeepEPAccounting(t *testing.T) {
	t.Parallel()
	s := nodeShape(16, 4, 64)
	res, r, _ := runNodes(t, s, moe.GroupLimit{}, "mini-gda", 0, 0, moe.Background{}, nil)
	n := r.Normal()
	for _, ph := range []struct {
		p     *moe.Phase
		bytes int64
	}{
		{&res.Dispatch, int64(s.Hidden + s.Scales()*4)},
		{&res.Combine, int64(s.Hidden * 2)},
	} {
		var sum float64
		for src, rt := range ph.p.Ranks {
			var pairs int64
			for tok := range r.TokensOf(src) {
				pairs += int64(len(n.NodesOf(src, tok)))
			}
			if rt.End <= rt.Launch || rt.End < rt.Ready {
				t.Fatalf("rank %d: kernel %v..%v, ready %v", src, rt.Launch, rt.End, rt.Ready)
			}
			sum += float64(pairs*ph.bytes) / ((rt.End - rt.Launch).Us() * 1e3)
		}
		want := sum / float64(s.Ranks)
		if math.Abs(ph.p.DeepEPGBps-want) > 1e-9*want {
			t.Errorf("DeepEP GB/s %v, want %v", ph.p.DeepEPGBps, want)
		}
	}
	if res.Dispatch.Ranks[0].Launch == 0 {
		t.Error("dispatch kernels launch at 0: the notify step should come first")
	}
	ll := runLayer(t, layerShape(16, 4, 64, 16, 512), moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	if ll.Dispatch.DeepEPGBps != ll.Dispatch.AlgoGBps || ll.Combine.DeepEPGBps != ll.Combine.AlgoGBps {
		t.Errorf("LL: DeepEP %v/%v, algo %v/%v: DeepEP's LL count is every selection's message", ll.Dispatch.DeepEPGBps,
			ll.Combine.DeepEPGBps, ll.Dispatch.AlgoGBps, ll.Combine.AlgoGBps)
	}
}

// Every transport and knob keeps internode normal mode correct: exactly
// once per (token, rank), payloads, the weighted combine, data before its
// tail; the breakdown sums to the phase time.
func TestInternodeCorrectEverywhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		s      moe.Shape
		preset string
		numSMs int
		chunk  int
		bg     moe.Background
	}{
		{"dc", nodeShape(16, 8, 64), "dc", 0, 0, moe.Background{}},
		{"mini-proxy", nodeShape(16, 4, 64), "mini-proxy", 0, 0, moe.Background{}},
		{"nvshmem-ibgda 2 SMs", nodeShape(8, 4, 64), "nvshmem-ibgda", 2, 0, moe.Background{}},
		{"deepep-v1 chunk 3", nodeShape(32, 8, 40), "deepep-v1", 6, 3, moe.Background{}},
		{"gdaki shared background", nodeShape(8, 4, 32), "gdaki", 4, 0, moe.Background{CTAs: 2, Bytes: 64}},
		{"mini-gda reserved background", nodeShape(8, 2, 32), "mini-gda", 0, 5, moe.Background{CTAs: 2, Bytes: 64, Reserved: true}},
		{"one token", nodeShape(16, 4, 1), "mini-gda", 0, 0, moe.Background{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, _, _ := runNodes(t, tc.s, moe.GroupLimit{}, tc.preset, tc.numSMs, tc.chunk, tc.bg, nil)
			if want := max(tc.numSMs, 24*btoi(tc.numSMs == 0)); res.NumSMs != want {
				t.Errorf("num SMs %d, want %d", res.NumSMs, want)
			}
			for _, ph := range []*moe.Phase{&res.Dispatch, &res.Combine} {
				if ph.Time.Mean <= 0 || ph.Time.P50 > ph.Time.Max || ph.DeepEPGBps <= 0 || ph.ScaleOutBytes == 0 {
					t.Errorf("time %+v, DeepEP %v GB/s, %d scale-out bytes", ph.Time, ph.DeepEPGBps, ph.ScaleOutBytes)
				}
				if got := ph.Breakdown.Total(); math.Abs(got-ph.Time.Mean) > 1e-6*ph.Time.Mean+1e-6 {
					t.Errorf("breakdown sums to %v µs, phase mean is %v µs", got, ph.Time.Mean)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// --num-sms sets the channels: num_sms/2 data QPs per peer plus as many for
// credits, and the run uses them.
func TestInternodeNumSMsSetsChannels(t *testing.T) {
	t.Parallel()
	// Long enough streams that every channel returns credit.
	s := nodeShape(16, 8, 2048)
	for _, sms := range []int{4, 24, 40} {
		res, _, ct := runNodes(t, s, moe.GroupLimit{}, "mini-gda", sms, 0, moe.Background{}, nil)
		if got, want := res.Resources.QPsPerNIC, s.Ranks*sms; got != want {
			t.Errorf("%d SMs: %d QPs per NIC, want %d (16 peers × %d)", sms, got, want, sms)
		}
		if d := ct.tallies[1]; d.dataMax != sms/2-1 || d.maxCh != sms-1 {
			t.Errorf("%d SMs: data up to channel %d, credits up to %d; want %d and %d", sms, d.dataMax, d.maxCh, sms/2-1, sms-1)
		}
	}
}

// A slow NVLink makes forwarding the bottleneck: senders wait for credit
// and the critical path runs through NVLink.
func TestSlowNVLinkBoundsInternodeDispatch(t *testing.T) {
	t.Parallel()
	s := nodeShape(16, 8, 256)
	s.Hidden = 2048
	fast, _, _ := runNodes(t, s, moe.GroupLimit{}, "mini-gda", 0, 0, moe.Background{}, nil)
	prof := profile.MustLoad("p-ib")
	if err := prof.Set("nvlink.gbs", "2"); err != nil {
		t.Fatal(err)
	}
	slow, _, _ := runNodes(t, s, moe.GroupLimit{}, "mini-gda", 0, 0, moe.Background{}, prof)
	t.Logf("dispatch %.1f µs (bound by %s) at 450 GB/s NVLink, %.1f µs (%s) at 2 GB/s", fast.Dispatch.Time.Mean, fast.Dispatch.BoundBy,
		slow.Dispatch.Time.Mean, slow.Dispatch.BoundBy)
	if slow.Dispatch.Time.Mean < 3*fast.Dispatch.Time.Mean || slow.Dispatch.BoundBy != "nvlink" {
		t.Fatalf("slow NVLink: %.1f µs bound by %s, fast %.1f µs: want NVLink-bound and much slower", slow.Dispatch.Time.Mean, slow.Dispatch.BoundBy, fast.Dispatch.Time.Mean)
	}
}

func TestInternodeRejects(t *testing.T) {
	t.Parallel()
	s := nodeShape(16, 8, 16)
	r := mustGenerate(t, s, "uniform", 1)
	p, _ := preset.Get("mini-gda")
	tr, _ := p.Transport(preset.Options{LocalExperts: 24})
	prof := profile.MustLoad("p-ib")
	for _, tc := range []struct {
		cfg  moe.LayerConfig
		want string
	}{
		{moe.LayerConfig{Routing: r, Mode: moe.Normal, Transport: tr, Profile: prof}, "nvlink:"},
		{moe.LayerConfig{Routing: r, Mode: moe.Normal, Transport: tr, Profile: prof, NVLink: true, Chunk: 65}, "chunk: 65"},
	} {
		if _, err := moe.RunLayer(tc.cfg); err == nil || !containsPrefix(err.Error(), tc.want) {
			t.Errorf("error %v, want one starting %q", err, tc.want)
		}
	}
}

func containsPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// BenchmarkLayerNormalInternode runs EP32 (four nodes of eight) normal mode
// at 1,024 tokens per rank and reports tokens simulated per second.
func BenchmarkLayerNormalInternode(b *testing.B) {
	b.ReportAllocs()
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 1024, Ranks: 32, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	r, err := moe.Generate(s, moe.RoutingSpec{Limit: moe.GroupLimit{Groups: 8, TopK: 4}}, 1)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := preset.Get("mini-gda")
	layer, _ := moe.Channels(s, moe.Normal, 0, moe.Background{})
	tr, _ := p.Transport(preset.Options{LocalExperts: layer})
	prof := profile.MustLoad("p-ib")
	var tokens int
	for b.Loop() {
		if _, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: moe.Normal, Transport: tr, Profile: prof, NVLink: true}); err != nil {
			b.Fatal(err)
		}
		tokens += s.Ranks * s.Tokens
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

func TestNodeConfigs(t *testing.T) {
	t.Parallel()
	// DeepEP's get_dispatch_config / get_combine_config at EP64 and EP16;
	// a count it does not list takes the largest listed below it.
	for _, tc := range []struct {
		ranks, chunk int
		d, c         moe.NodeConfig
	}{
		{64, 0, moe.NodeConfig{RDMAChunk: 8, NVLChunk: 32, RDMABuf: 128, NVLBuf: 288}, moe.NodeConfig{RDMAChunk: 8, NVLChunk: 1, RDMABuf: 128, NVLBuf: 288}},
		{16, 0, moe.NodeConfig{RDMAChunk: 20, NVLChunk: 36, RDMABuf: 128, NVLBuf: 288}, moe.NodeConfig{RDMAChunk: 12, NVLChunk: 4, RDMABuf: 128, NVLBuf: 288}},
		{40, 5, moe.NodeConfig{RDMAChunk: 5, NVLChunk: 32, RDMABuf: 128, NVLBuf: 288}, moe.NodeConfig{RDMAChunk: 5, NVLChunk: 1, RDMABuf: 128, NVLBuf: 288}},
		{1, 0, moe.NodeConfig{RDMAChunk: 6, NVLChunk: 24, RDMABuf: 128, NVLBuf: 256}, moe.NodeConfig{RDMAChunk: 6, NVLChunk: 10, RDMABuf: 128, NVLBuf: 256}},
	} {
		d, c := moe.NodeConfigs(tc.ranks, tc.chunk)
		if d != tc.d || c != tc.c {
			t.Errorf("EP%d chunk %d: %+v / %+v, want %+v / %+v", tc.ranks, tc.chunk, d, c, tc.d, tc.c)
		}
	}
}
