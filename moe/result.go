package moe

import (
	"github.com/montanaflynn/stats"

	"moebench/transport"
	"moebench/transport/sim"
)

// Cause is one mechanism a phase's critical path is attributed to.
type Cause uint8

// The causes, in the order the critical path passes through them.
const (
	CauseSender    Cause = iota // sender work before the critical post: casts, earlier posts, waiting for the expert's writes
	CauseIssue                  // the critical post itself (IssueStart→IssueEnd), incl. a local copy
	CauseQueue                  // IssueEnd→Served: doorbell, batching and queueing before the NIC serves it
	CauseNIC                    // Served→Sent: the NIC's own processing (WQE, payload read, transmit)
	CauseEgress                 // Served→Sent beyond that: the NIC pipeline and egress link busy with other messages
	CauseConnMiss               // NIC time fetching connection context
	CauseDCISwitch              // NIC time re-targeting a DCI
	CauseWire                   // Sent→Arrived over the network
	CauseNVLink                 // Sent→Arrived over NVLink
	CauseObserve                // Arrived→Visible, then the receiver's poll noticing it
	CauseSync                   // waiting beyond the critical delivery: the grid sync on the rank's own sends, a busy warp group, the host
	CauseCopy                   // receive-side copy into the packed layout (dispatch)
	CauseReduce                 // weighted top-k reduction (combine)
	NumCauses
)

var causeNames = [NumCauses]string{"sender", "issue", "queue", "nic", "egress", "conn_miss", "dci_switch", "wire", "nvlink", "observe", "sync", "copy", "reduce"}

// String is the cause's key in reports.
func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return "cause?"
}

// CauseNames lists the causes in path order.
func CauseNames() []string { return causeNames[:] }

// Breakdown is time in µs by cause. Its entries sum to the phase time it
// explains.
type Breakdown [NumCauses]float64

// Map returns the breakdown keyed by cause name, for JSON.
func (b Breakdown) Map() map[string]float64 {
	m := make(map[string]float64, NumCauses)
	for i, v := range b {
		m[causeNames[i]] = v
	}
	return m
}

// Largest is the cause with the largest share (the first on ties).
func (b Breakdown) Largest() Cause {
	best := Cause(0)
	for i := range b {
		if b[i] > b[best] {
			best = Cause(i)
		}
	}
	return best
}

// Total is the sum of the entries.
func (b Breakdown) Total() float64 {
	var s float64
	for _, v := range b {
		s += v
	}
	return s
}

// Summary is a figure across ranks, in µs.
type Summary struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

// Summarize computes mean, min, max and percentiles (linear interpolation
// between closest ranks) of v.
func Summarize(v []float64) Summary {
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

// RankTiming is one rank's view of a phase, all from the phase start.
type RankTiming struct {
	Ready         sim.Time // receiver-ready: every expected token packed (dispatch) or reduced (combine)
	LastDelivered sim.Time // the last byte addressed to the rank became visible
	IssueDone     sim.Time // the rank's sending warps finished posting
	// Launch and End bound the rank's kernel: launched (after the notify
	// step in normal mode) and done with its last work in any role.
	Launch, End sim.Time
	Breakdown   Breakdown // the critical path to Ready, µs
}

// Phase is the outcome of dispatch or combine across ranks.
type Phase struct {
	// Time is start → receiver-ready across ranks, µs.
	Time Summary
	// Delivered is start → last byte delivered across ranks, µs.
	Delivered Summary
	// IssueDone is when the sending warps finished posting, µs.
	IssueDone Summary
	// AlgoGBps is the algorithm bandwidth: every valid selection's bytes
	// (the mode's message or token size), local and NVLink deliveries
	// included, over the phase time, averaged over ranks.
	AlgoGBps float64
	// DeepEPGBps is bandwidth as DeepEP's own tests count it, averaged
	// over ranks. LL: every valid selection × the message bytes over the
	// phase time (the same as AlgoGBps). Normal: the rank's (token,
	// destination node) pairs, its own node included, × hidden bytes
	// (plus FP8 scales) over the kernel time without the notify step:
	// what test_internode.py prints as "GB/s (RDMA)".
	DeepEPGBps float64
	// Bytes leaving the GPUs: through the NICs and over NVLink, summed over
	// ranks; the rates are per rank over the mean phase time.
	ScaleOutBytes, NVLinkBytes int64
	ScaleOutGBps, NVLinkGBps   float64
	// Messages counts the operations posted to the transport, local
	// copies excluded; Background counts background writes delivered.
	Messages, Background int64
	// Events is the number of simulation events the phase ran.
	Events uint64
	// Breakdown is the mean over ranks of each rank's critical-path
	// attribution, µs; BoundBy its largest cause.
	Breakdown Breakdown
	BoundBy   string
	Ranks     []RankTiming
}

// Resources are what the run held: the transport's own report plus the
// layer's communication buffer.
type Resources struct {
	transport.Resources
	// BufferBytesPerRank is the layer's registered communication buffer
	// (DeepEP's size hint for the mode).
	BufferBytesPerRank int64 `json:"buffer_bytes_per_rank"`
}

// Result is one layer run: dispatch then combine, timed separately as
// DeepEP's tests time each kernel.
type Result struct {
	Transport string
	Mode      Mode
	Shape     Shape
	NVLink    bool
	NumSMs    int
	Dispatch  Phase
	Combine   Phase
	Resources Resources
	RouteHash string
	// BoundBy is the largest cause over both phases' breakdowns.
	BoundBy string
	// Correct is true when every check passed; Problems says what failed.
	Correct  bool
	Problems []string
	// ProblemCount counts every problem; Problems spells out the first few.
	ProblemCount int
	// Events is the number of simulation events run.
	Events uint64
}

// finish fills a phase's summaries from its per-rank timings, measured
// from origin (the kernels' launch).
func (p *Phase) finish(bytesPerRank []int64, origin sim.Time) {
	n := len(p.Ranks)
	for i := range p.Ranks {
		r := &p.Ranks[i]
		r.Ready = max(0, r.Ready-origin)
		r.LastDelivered = max(0, r.LastDelivered-origin)
		r.IssueDone = max(0, r.IssueDone-origin)
		r.Launch = max(0, r.Launch-origin)
		r.End = max(0, r.End-origin, r.Ready, r.IssueDone)
	}
	ready := make([]float64, n)
	deliv := make([]float64, n)
	issue := make([]float64, n)
	var algo float64
	var algoN int
	for i, r := range p.Ranks {
		ready[i] = r.Ready.Us()
		deliv[i] = r.LastDelivered.Us()
		issue[i] = r.IssueDone.Us()
		for c := range p.Breakdown {
			p.Breakdown[c] += r.Breakdown[c] / float64(n)
		}
		if r.Ready > 0 && bytesPerRank != nil {
			algo += float64(bytesPerRank[i]) / (r.Ready.Us() * 1e3)
			algoN++
		}
	}
	p.Time = Summarize(ready)
	p.Delivered = Summarize(deliv)
	p.IssueDone = Summarize(issue)
	if algoN > 0 {
		p.AlgoGBps = algo / float64(algoN)
	}
	if p.Time.Mean > 0 && n > 0 {
		ns := p.Time.Mean * 1e3
		p.ScaleOutGBps = float64(p.ScaleOutBytes) / float64(n) / ns
		p.NVLinkGBps = float64(p.NVLinkBytes) / float64(n) / ns
	}
	p.BoundBy = p.Breakdown.Largest().String()
	if p.Breakdown.Total() == 0 {
		p.BoundBy = ""
	}
}

// deepepOver sets DeepEPGBps: per rank, bytes[r] over its kernel time
// (Launch to End), averaged over the ranks that ran.
func (p *Phase) deepepOver(bytes []int64) {
	var sum float64
	var n int
	for r, rt := range p.Ranks {
		if d := rt.End - rt.Launch; d > 0 {
			sum += float64(bytes[r]) / (d.Us() * 1e3)
			n++
		}
	}
	if n > 0 {
		p.DeepEPGBps = sum / float64(n)
	}
}

// attribute splits the path of one critical delivery into causes: the
// checkpoints are made monotone so the parts sum exactly to end − origin,
// the rank's time from the kernels' launch (background traffic's head
// start before origin is no part of it).
//
//	origin → IssueStart → IssueEnd → Served → Sent → Arrived → detect → start → end
//
// detect is when the receiver noticed the delivery, start when the work it
// gated began (later when the receiver waited for something else).
//
// nicFloor is the NIC's own processing time for the op (Served→Sent on an
// idle NIC); what Served→Sent takes beyond it, less context misses and DCI
// switches, is queueing behind other messages (egress).
func attribute(origin sim.Time, t transport.Times, local bool, nicFloor sim.Time, detect, start, end sim.Time, work Cause) Breakdown {
	p := critPath{cur: origin}
	p.delivery(t, local, nicFloor)
	p.step(CauseObserve, detect)
	p.step(CauseSync, start)
	p.step(work, end)
	return p.b
}

// critPath accumulates a critical path checkpoint by checkpoint; time
// that does not move the path forward is not counted, so the parts sum to
// the last checkpoint.
type critPath struct {
	b   Breakdown
	cur sim.Time
}

func (p *critPath) step(c Cause, at sim.Time) {
	if at > p.cur {
		p.b[c] += (at - p.cur).Us()
		p.cur = at
	}
}

// delivery walks one delivery from its sender's work to its arrival.
func (p *critPath) delivery(t transport.Times, local bool, nicFloor sim.Time) {
	p.step(CauseSender, t.IssueStart)
	p.step(CauseIssue, t.IssueEnd)
	if local {
		p.step(CauseIssue, t.Arrived)
		return
	}
	p.step(CauseQueue, t.Served)
	if t.Sent > p.cur {
		nic := t.Sent - p.cur
		miss := min(nic, t.ConnMiss)
		sw := min(nic-miss, t.DCISwitch)
		own := min(nic-miss-sw, nicFloor)
		p.b[CauseConnMiss] += miss.Us()
		p.b[CauseDCISwitch] += sw.Us()
		p.b[CauseNIC] += own.Us()
		p.b[CauseEgress] += (nic - miss - sw - own).Us()
		p.cur = t.Sent
	}
	if t.NVLink {
		p.step(CauseNVLink, t.Arrived)
	} else {
		p.step(CauseWire, t.Arrived)
	}
}
