package layer

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/native"
	"moebench/transport/gda"
	"moebench/transport/preset"
	"moebench/transport/srd"
)

// Transport is what moves the layer's messages: a preset over a mechanism
// with the workload's knobs, or the direct-store path.
type Transport struct {
	Direct  bool
	Preset  preset.Preset
	Options preset.Options
}

// Name is the preset's name, or "direct".
func (t Transport) Name() string {
	if t.Direct {
		return "direct"
	}
	return t.Preset.Name
}

// Mechanism is the preset's mechanism, or "direct".
func (t Transport) Mechanism() string {
	if t.Direct {
		return "direct"
	}
	return t.Preset.Mechanism
}

// Options are the native engine's own knobs.
type Options struct {
	GPUs         int // devices used; ranks spread evenly over them
	SMsPerRank   int // 0: DeepEP's choice, within what the GPU leaves
	NICSMs       int // SMs per GPU for the emulated NIC; 0: DefaultNICSMs
	BgSMs        int // SMs per GPU for background posters; 0: DefaultBgSMs when there is background
	Warmup, Reps int
	FlushL2      bool
	NoVerify     bool
	Pace         bool    // pace the emulated NIC to LineGBs and MsgMps per rank
	LineGBs      float64 // pacing rates (the profile's NIC, normally)
	MsgMps       float64
	Timeout      time.Duration
	// Mode is ll or normal (DeepEP's intranode kernels, direct path only).
	Mode moe.Mode
	// Normal mode: tokens per published tail and per ring buffer; 0: the defaults.
	Chunk, BufTokens int
}

// Defaults of the native engine.
const (
	DefaultNICSMs = 4
	DefaultBgSMs  = 4
	DefaultWarmup = 3
	DefaultReps   = 10
	// DefaultTimeout bounds every wait of a run: far above any phase, so
	// only a broken run reaches it.
	DefaultTimeout = 5 * time.Second
	// DefaultNormalChunk and DefaultBufTokens are DeepEP's intranode
	// Config for 8 ranks: num_max_nvl_chunked_send_tokens 6,
	// num_max_nvl_chunked_recv_tokens 256.
	DefaultNormalChunk = 6
	DefaultBufTokens   = 256
)

// ErrPlan marks a request the native engine cannot run; the message says
// which knob.
var ErrPlan = errors.New("native layer")

func planErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrPlan}, args...)...)
}

// haveGPUs refuses a run on more GPUs than the host has.
func haveGPUs(lib Runner, want int) error {
	n, err := lib.DeviceCount()
	if err != nil {
		return err
	}
	if n < want {
		return planErr("%w", field.Valuef("gpus", want, "this host has %s", report.Count(n, "GPU")))
	}
	return nil
}

// Plan is the native launch of rt over tr on GPUs like dev.
func Plan(rt *moe.Routing, tr Transport, o Options, dev native.DeviceInfo, bg moe.Background) (native.LayerConfig, error) {
	s := rt.Shape
	gpus := max(1, o.GPUs)
	if s.Ranks%gpus != 0 {
		return native.LayerConfig{}, planErr("%d ranks do not spread evenly over %d GPUs", s.Ranks, gpus)
	}
	rd := s.Ranks / gpus
	c := native.LayerConfig{
		Ranks: s.Ranks, GPUs: gpus, Tokens: s.Tokens, Hidden: s.Hidden, TopK: s.TopK, Experts: s.Physical(),
		FP8: s.Dispatch == moe.FP8, Warmup: o.Warmup, Reps: o.Reps, FlushL2: o.FlushL2, Verify: !o.NoVerify,
		Timeout: o.Timeout, Pace: o.Pace, LineGBs: o.LineGBs, MsgMps: o.MsgMps,
	}
	if c.Reps == 0 {
		c.Reps = DefaultReps
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if s.Combine != moe.BF16 {
		return c, planErr("combine dtype %s: the native kernels combine in bf16", s.Combine)
	}
	if s.Dispatch != moe.FP8 && s.Dispatch != moe.BF16 {
		return c, planErr("dispatch dtype %s: the native kernels dispatch fp8 or bf16", s.Dispatch)
	}
	if o.Mode == moe.Normal {
		return planNormal(c, tr, o, dev, bg)
	}
	if msg := s.LLDispatchBytes(); msg%16 != 0 {
		return c, planErr("hidden %d: a %d B dispatch message is not a whole number of 16 B vectors (DeepEP asserts the same)", s.Hidden, msg)
	}
	if s.TopK > 31 {
		return c, planErr("top-k %d: the native dispatch posts from one of 31 warps per selection", s.TopK)
	}
	if err := planPath(&c, tr, s); err != nil {
		return c, err
	}
	if c.Path != native.PathDirect {
		c.NICSMs = o.NICSMs
		if c.NICSMs == 0 {
			c.NICSMs = DefaultNICSMs
		}
	}
	if bg.CTAs > 0 {
		if s.Ranks < 2 {
			return c, planErr("background traffic needs at least 2 ranks")
		}
		c.BackgroundSMs = o.BgSMs
		if c.BackgroundSMs == 0 {
			c.BackgroundSMs = DefaultBgSMs
		}
		posters := bg.CTAs * bgThreads(bg)
		c.BgWarps = min(posters, c.BackgroundSMs*32/rd)
		if c.BgWarps < 1 {
			return c, planErr("background: %d background SMs per GPU leave no posting warp for %d ranks", c.BackgroundSMs, rd)
		}
		c.BgBytes = (bg.Bytes + 15) / 16 * 16
		layer, _ := moe.Channels(s, moe.LL, 0, moe.Background{})
		c.BgChannel0, c.BgChannels = 0, layer
		if bg.Reserved {
			// Queues of its own past the layer's, as the model builds
			// them: more QPs per peer, or more rings that only it uses.
			q := max(1, bg.Queues)
			c.BgChannel0, c.BgChannels = layer, q
			switch c.Path {
			case native.PathGDA:
				c.QPsPerPeer = max(c.QPsPerPeer, layer) + q
			case native.PathProxy:
				c.ReservedRing0 = c.Rings
				c.Rings += q
			case native.PathDC, native.PathEFA:
				// The kernels pick a DCI (an SRD queue) as channel mod DCIs, so the
				// background's channels would land on the layer's DCIs:
				// a reserved DCI needs kernels that count it apart.
				return c, planErr("reserved background over %v: the native path has no queue of its own to give it (the model does); use shared background", c.Path)
			}
		}
		c.BgHeadUs = int(moe.BackgroundWarmup.Us())
	}
	left := dev.SMs - c.NICSMs - c.BackgroundSMs
	if left < rd {
		return c, planErr("%d ranks per GPU: %d SMs left after %d for the emulated NIC and %d for background", rd, left, c.NICSMs, c.BackgroundSMs)
	}
	avail := left / rd
	if o.SMsPerRank > 0 {
		if o.SMsPerRank > avail {
			return c, planErr("%w", field.Valuef("num-sms", o.SMsPerRank, "%d ranks on a GPU of %d SMs leave at most %d SMs each (after %d for the emulated NIC, %d for background)",
				rd, dev.SMs, avail, c.NICSMs, c.BackgroundSMs))
		}
		c.SMsPerRank = o.SMsPerRank
	} else {
		deepep, _, _ := moe.LLLaunch(s, 0, dev.SMs)
		c.SMsPerRank = min(deepep, avail)
	}
	return c, nil
}

// planNormal is Plan for normal mode: the direct path, a sender and a
// receiver SM per channel, DeepEP's SM count where the GPU has room.
func planNormal(c native.LayerConfig, tr Transport, o Options, dev native.DeviceInfo, bg moe.Background) (native.LayerConfig, error) {
	s := c.Ranks
	switch {
	case !tr.Direct:
		return c, planErr("%w", field.Valuef("transport", tr.Name(), "the native engine runs normal mode on the direct path only"))
	case bg.CTAs > 0:
		return c, planErr("%w", field.Errorf("background", "the native engine runs normal mode without background traffic"))
	case s > native.MaxNormalRanks:
		return c, planErr("%w", field.Valuef("mode", "normal", "%d ranks; DeepEP's intranode kernels serve at most %d", s, native.MaxNormalRanks))
	}
	c.Path, c.Normal = native.PathDirect, true
	c.Chunk, c.BufTokens = o.Chunk, o.BufTokens
	if c.Chunk == 0 {
		c.Chunk = DefaultNormalChunk
	}
	if c.BufTokens == 0 {
		c.BufTokens = DefaultBufTokens
	}
	if c.Chunk < 1 || c.Chunk > c.BufTokens/2 {
		return c, planErr("%w", field.Valuef("chunk", c.Chunk, "normal mode needs 1 to half the %d-token buffer", c.BufTokens))
	}
	rd := c.Ranks / c.GPUs
	avail := dev.SMs / rd / 2 * 2
	if avail < 2 {
		return c, planErr("%d ranks per GPU: a GPU of %d SMs leaves fewer than 2 each (a sender and a receiver)", rd, dev.SMs)
	}
	switch {
	case o.SMsPerRank > 0 && o.SMsPerRank%2 != 0:
		return c, planErr("--num-sms %d: normal mode takes an even number (a sender and a receiver SM per channel)", o.SMsPerRank)
	case o.SMsPerRank > avail:
		return c, planErr("--num-sms %d: %d ranks on a GPU of %d SMs leave at most %d SMs each", o.SMsPerRank, rd, dev.SMs, avail)
	case o.SMsPerRank > 0:
		c.SMsPerRank = o.SMsPerRank
	default:
		c.SMsPerRank = min(moe.DefaultNormalSMs, avail)
	}
	return c, nil
}

func bgThreads(b moe.Background) int {
	if b.Threads > 0 {
		return b.Threads
	}
	return moe.DefaultBackgroundThreads
}

// planPath translates the transport's mechanism into the library's knobs.
func planPath(c *native.LayerConfig, tr Transport, s moe.Shape) error {
	if tr.Direct {
		c.Path = native.PathDirect
		return nil
	}
	o := tr.Options
	if o.LocalExperts == 0 {
		o.LocalExperts = s.LocalExperts()
	}
	if g, ok, err := gdaConfig(tr.Preset, o); ok {
		if err != nil {
			return planErr("%v", err)
		}
		if g.Publication != gda.PubHandoff {
			return planErr("preset %s: the native posters publish in reservation order (handoff), not %v", tr.Preset.Name, g.Publication)
		}
		if g.Ordering == gda.OrderNone {
			return planErr("preset %s: ordering none leaves the emulated NIC reading unwritten WQEs", tr.Preset.Name)
		}
		c.Ordering = g.Ordering.String()
		c.PerDoorbell = g.PerDoorbell
		// A WQE is one basic block; a DC atomic (address vector) two.
		c.SQBBs = pow2(max(8, g.Depth))
		if g.DCIs > 0 {
			c.SQBBs *= 2
			c.Path, c.DCIs = native.PathDC, g.DCIs
		} else {
			c.Path, c.QPsPerPeer = native.PathGDA, g.QPsPerPeer
		}
		c.PerDoorbell = min(c.PerDoorbell, c.SQBBs/2)
		return nil
	}
	if e, ok, err := srdConfig(tr.Preset, o); ok {
		if err != nil {
			return planErr("%v", err)
		}
		if e.Style != srd.GPU {
			return planErr("preset %s: the native engine posts SRD entries from the GPU (EFA DP Direct); a proxy posting them has no native path", tr.Preset.Name)
		}
		// DP Direct rings every post, after a system-scope fence, on
		// queues of EFA's depth.
		c.Path, c.DCIs = native.PathEFA, e.QPsPerNIC
		c.Ordering, c.PerDoorbell, c.SQBBs = "fence-sys", 1, srd.SQDepth
		return nil
	}
	if p, ok, err := proxyConfig(tr.Preset, o); ok {
		if err != nil {
			return planErr("%v", err)
		}
		if p.ReservedRings > 0 {
			return planErr("preset %s: reserved rings would carry counts apart from their data; the native layer keeps them on one queue", tr.Preset.Name)
		}
		c.Path = native.PathProxy
		c.Workers, c.Rings, c.Batch = p.Workers, p.Rings, p.Batch
		c.Handoff = p.Handoff.String()
		slots := p.RingSlots
		if slots == 0 {
			slots = 1024
		}
		c.RingEntries = pow2(slots)
		return nil
	}
	return planErr("preset %s configures no mechanism the native engine runs", tr.Preset.Name)
}

// pow2 is the least power of two at least n.
func pow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}
