package moe

import (
	"fmt"
	"slices"

	"moebench/fault"
	"moebench/internal/summary"
	"moebench/sim"
	"moebench/transport"
)

// Cause is one mechanism a phase's critical path is attributed to: the
// workload's own, or one a registered transport mechanism declares for
// its NIC time (transport.Mechanism.Causes).
type Cause uint8

// The workload's causes, in the order the critical path passes through
// them; the mechanisms' causes come between CauseEgress and CauseWire.
const (
	CauseSender  Cause = iota // sender work before the critical post: casts, earlier posts, waiting for the expert's writes
	CauseIssue                // the critical post itself (IssueStart→IssueEnd), incl. a local copy
	CauseQueue                // IssueEnd→Served: doorbell, batching and queueing before the NIC serves it
	CauseNIC                  // Served→Sent: the NIC's own processing (WQE, payload read, transmit)
	CauseMsgRate              // Served→Sent beyond that, when the NIC's message rate held it: its pipeline busy with other messages
	CauseEgress               // Served→Sent beyond that otherwise: the egress link (or the switch beyond it) busy with other messages
	CauseWire                 // Sent→Arrived over the network
	CauseNVLink               // Sent→Arrived over NVLink
	CauseObserve              // Arrived→Visible, then the receiver's poll noticing it
	CauseSync                 // waiting beyond the critical delivery: the grid sync on the rank's own sends, a busy warp group, the host
	CauseCopy                 // receive-side copy into the packed layout (dispatch)
	CauseReduce               // weighted top-k reduction (combine)
	numOwn
	// MaxCauses bounds the workload's causes and those of the registered
	// mechanisms together: room for eight, as four mechanisms declare
	// four and a fifth (a test's) one more.
	MaxCauses = numOwn + 8
)

var causeNames = [numOwn]string{"sender", "issue", "queue", "nic", "msg_rate", "egress", "wire", "nvlink", "observe", "sync", "copy", "reduce"}

// mechCauses are the registered mechanisms' causes that fit a Breakdown.
func mechCauses() []transport.Cause {
	c := transport.Causes()
	return c[:min(len(c), int(MaxCauses-numOwn))]
}

// String is the cause's key in reports.
func (c Cause) String() string {
	if c < numOwn {
		return causeNames[c]
	}
	if m := mechCauses(); int(c-numOwn) < len(m) {
		return m[c-numOwn].Name
	}
	return "cause?"
}

// Causes lists the causes in path order: the workload's up to egress, the
// registered mechanisms' in registration order, then the rest.
func Causes() []Cause {
	var out []Cause
	for c := CauseSender; c <= CauseEgress; c++ {
		out = append(out, c)
	}
	for i := range mechCauses() {
		out = append(out, numOwn+Cause(i))
	}
	for c := CauseWire; c < numOwn; c++ {
		out = append(out, c)
	}
	return out
}

// CauseNames lists the causes' names in path order.
func CauseNames() []string {
	var n []string
	for _, c := range Causes() {
		n = append(n, c.String())
	}
	return n
}

// ownCauses maps a transport's Times.Own entries to causes; entries past
// its declared causes map to noCause.
type ownCauses [transport.MaxOwnCauses]Cause

const noCause = Cause(MaxCauses)

// ownCausesOf maps the causes t declares to the registered ones.
func ownCausesOf(t transport.Transport) (ownCauses, error) {
	var o ownCauses
	for i := range o {
		o[i] = noCause
	}
	decl := t.Causes()
	if len(decl) > len(o) {
		return o, fmt.Errorf("transport %s declares %d causes of its own, at most %d fit", t.Name(), len(decl), len(o))
	}
	reg := mechCauses()
	for i, c := range decl {
		j := slices.IndexFunc(reg, func(r transport.Cause) bool { return r.Name == c.Name })
		if j < 0 {
			return o, fmt.Errorf("transport %s: cause %q is not declared by a registered mechanism (or past the %d that fit a breakdown)", t.Name(), c.Name, MaxCauses-numOwn)
		}
		o[i] = numOwn + Cause(j)
	}
	return o, nil
}

// Breakdown is time in µs by cause. Its entries sum to the phase time it
// explains.
type Breakdown [MaxCauses]float64

// Values are the entries in path order (Causes).
func (b Breakdown) Values() []float64 {
	cs := Causes()
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = b[c]
	}
	return v
}

// Map returns the breakdown keyed by cause name, for JSON.
func (b Breakdown) Map() map[string]float64 {
	cs := Causes()
	m := make(map[string]float64, len(cs))
	for _, c := range cs {
		m[c.String()] = b[c]
	}
	return m
}

// Largest is the cause with the largest share (the first in path order
// on ties).
func (b Breakdown) Largest() Cause {
	best := Cause(0)
	for _, c := range Causes() {
		if b[c] > b[best] {
			best = c
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
type Summary = summary.Summary

// Summarize computes mean, min, max and percentiles (linear interpolation
// between closest ranks) of v.
func Summarize(v []float64) Summary { return summary.Of(v) }

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
	// what test_internode.py prints as "GB/s (RDMA)"; on one node, the
	// tokens the rank receives, its own among them, × the same bytes:
	// test_intranode.py's "GB/s (NVL)".
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
	// Failure, when not nil, is why the phase did not complete under the
	// layer's faults: the first failure its transport reported. The phase
	// stopped there: a rank not ready by then counts as ready at the
	// failure, and the checks skip what it left undelivered.
	Failure *fault.Failure
	faults  phaseFaults
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
	// Faults is what went wrong under the layer (nil when healthy);
	// Failed says which phase it made fail, if any.
	Faults *fault.Plan
	// Compute is the layer with its experts' compute (RunWithCompute);
	// nil for communication alone.
	Compute *Timeline
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
// nic is the NIC's own processing time for the op (Served→Sent on an
// idle NIC) and the causes of the transport's own NIC time; what
// Served→Sent takes beyond both is queueing behind other messages: for
// the NIC's message rate when its pipeline held the op (msg_rate), else
// for the link (egress).
func attribute(origin sim.Time, t transport.Times, local bool, nic nicShare, detect, start, end sim.Time, work Cause) Breakdown {
	p := critPath{cur: origin}
	p.delivery(t, local, nic)
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
func (p *critPath) delivery(t transport.Times, local bool, ns nicShare) {
	p.step(CauseSender, t.IssueStart)
	p.step(CauseIssue, t.IssueEnd)
	if local {
		p.step(CauseIssue, t.Arrived)
		return
	}
	p.step(CauseQueue, t.Served)
	if t.Sent > p.cur {
		nic := t.Sent - p.cur
		for i, c := range ns.own {
			if c == noCause {
				continue
			}
			x := min(nic, t.Own[i])
			p.b[c] += x.Us()
			nic -= x
		}
		own := min(nic, ns.floor)
		p.b[CauseNIC] += own.Us()
		wait := CauseEgress
		if t.RateBound {
			wait = CauseMsgRate
		}
		p.b[wait] += (nic - own).Us()
		p.cur = t.Sent
	}
	if t.NVLink {
		p.step(CauseNVLink, t.Arrived)
	} else {
		p.step(CauseWire, t.Arrived)
	}
}
