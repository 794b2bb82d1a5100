// Package fault describes what goes wrong under a layer: packets lost or
// corrupted on a class of links, a NIC link that runs below its rate or
// goes down for a while, a congested spine, a rank whose kernels run
// slowly. A Plan is data; the hardware models and the layer read it, and
// every random draw is a hash of the plan's seed and of what the draw is
// about (a link, a queue, a message, a packet, an attempt), never of the
// order events run in, so that a plan and a seed give the same run twice,
// whichever goroutine simulates which phase.
package fault

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"moebench/sim"
)

// Class is a class of links a packet crosses.
type Class uint8

// Link classes: a NIC's link to its leaf switch (a packet crosses the
// sender's and the responder's), and a leaf's link to a spine and back
// down (a packet between leaves crosses one of each).
const (
	Host Class = iota
	Spine
	NumClasses
)

var classNames = [NumClasses]string{"host", "spine"}

func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Slow is a rank whose GPU kernels take Factor times as long.
type Slow struct {
	Rank   int
	Factor float64
}

// Link is a fault of the NIC links of one rank's GPU: they carry Factor of
// their line rate (a degraded link: lanes down, a lower negotiated speed),
// and, where Up > Down, are down from Down to Up (a flap: every packet
// sent or arriving in that window is lost).
type Link struct {
	Rank     int
	Factor   float64
	Down, Up sim.Time
}

// Flaps reports whether the link goes down.
func (l Link) Flaps() bool { return l.Up > l.Down }

// IsDown reports whether the link is down at t.
func (l Link) IsDown(t sim.Time) bool { return l.Flaps() && t >= l.Down && t < l.Up }

// Plan is the faults of a run. The zero Plan is a healthy fabric.
type Plan struct {
	// Seed picks which packets are lost; the same seed, the same losses.
	Seed uint64
	// Loss is the probability that a packet is lost (dropped, or
	// corrupted and dropped by the receiver's CRC check) on one crossing
	// of a link of each class.
	Loss [NumClasses]float64
	// Slow lists ranks whose kernels run slowly, by rank.
	Slow []Slow
	// Links lists the degraded or flapping NIC links, by rank.
	Links []Link
	// SpineFactor is the share of each spine link's rate left to the
	// layer (other traffic takes the rest); 0 means all of it.
	SpineFactor float64
}

// Empty reports whether p changes nothing.
func (p *Plan) Empty() bool {
	return p == nil || (p.Loss == [NumClasses]float64{} && len(p.Slow) == 0 && len(p.Links) == 0 && p.SpineFactor == 0)
}

// Lossy reports whether any link loses packets (a flap included).
func (p *Plan) Lossy() bool {
	if p == nil {
		return false
	}
	for _, l := range p.Links {
		if l.Flaps() {
			return true
		}
	}
	return p.Loss != [NumClasses]float64{}
}

// SlowFactor is how many times as long rank's kernels take (1 when
// healthy).
func (p *Plan) SlowFactor(rank int) float64 {
	if p != nil {
		for _, s := range p.Slow {
			if s.Rank == rank {
				return s.Factor
			}
		}
	}
	return 1
}

// LinkOf is the fault of rank's NIC links, if any.
func (p *Plan) LinkOf(rank int) (Link, bool) {
	if p != nil {
		for _, l := range p.Links {
			if l.Rank == rank {
				return l, true
			}
		}
	}
	return Link{}, false
}

// PacketLoss is the probability that one packet is lost on its way from
// NIC to NIC: it crosses two host links, and an uplink and a downlink when
// it goes between leaves.
func (p *Plan) PacketLoss(crossSpine bool) float64 {
	if p == nil {
		return 0
	}
	keep := (1 - p.Loss[Host]) * (1 - p.Loss[Host])
	if crossSpine {
		keep *= (1 - p.Loss[Spine]) * (1 - p.Loss[Spine])
	}
	return 1 - keep
}

// ForPhase is p as one phase of the layer sees it: its draws salted so
// that two phases lose different packets, and its flaps moved onto the
// phase's clock, which starts at start on the layer's.
func (p *Plan) ForPhase(salt uint64, start sim.Time) *Plan {
	if p.Empty() {
		return nil
	}
	q := *p
	q.Seed = mix(p.Seed ^ mix(salt+1))
	q.Slow = append([]Slow(nil), p.Slow...)
	q.Links = append([]Link(nil), p.Links...)
	for i := range q.Links {
		if l := &q.Links[i]; l.Flaps() {
			l.Down, l.Up = max(0, l.Down-start), max(0, l.Up-start)
		}
	}
	return &q
}

// Draw is a number in [0, 1) that depends only on the plan's seed and
// on keys: what the draw is about. Callers pass keys that name the
// packet and the attempt, so that a retransmission draws afresh.
func (p *Plan) Draw(keys ...uint64) float64 {
	h := mix(p.Seed ^ 0x9e3779b97f4a7c15)
	for _, k := range keys {
		h = mix(h ^ mix(k+0x632be59bd9b4e019))
	}
	return float64(h>>11) / (1 << 53)
}

// Lost reports whether the packet that keys name is lost, at probability
// rate.
func (p *Plan) Lost(rate float64, keys ...uint64) bool {
	return rate > 0 && p.Draw(keys...) < rate
}

// mix is splitmix64's finalizer: every input bit moves every output bit.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Validate checks p against a layer of ranks ranks.
func (p *Plan) Validate(ranks int) error {
	if p == nil {
		return nil
	}
	for _, s := range p.Slow {
		if s.Rank >= ranks {
			return fmt.Errorf("slow rank %d: the layer has %d ranks (0 to %d)", s.Rank, ranks, ranks-1)
		}
	}
	for _, l := range p.Links {
		if l.Rank >= ranks {
			return fmt.Errorf("link of rank %d: the layer has %d ranks (0 to %d)", l.Rank, ranks, ranks-1)
		}
	}
	return nil
}

// String is p in the syntax Parse reads, one fault after another, in a
// fixed order: the same plan always prints the same.
func (p *Plan) String() string {
	if p.Empty() {
		return "none"
	}
	var parts []string
	for c := Class(0); c < NumClasses; c++ {
		if r := p.Loss[c]; r > 0 {
			parts = append(parts, "loss:"+num(r)+"@"+c.String())
		}
	}
	for _, s := range p.Slow {
		parts = append(parts, "slow:"+strconv.Itoa(s.Rank)+":"+num(s.Factor))
	}
	for _, l := range p.Links {
		if l.Factor != 1 {
			parts = append(parts, "link:"+strconv.Itoa(l.Rank)+":"+num(l.Factor))
		}
		if l.Flaps() {
			parts = append(parts, "flap:"+strconv.Itoa(l.Rank)+":"+dur(l.Down)+"+"+dur(l.Up-l.Down))
		}
	}
	if p.SpineFactor > 0 {
		parts = append(parts, "spine:"+num(p.SpineFactor))
	}
	return strings.Join(parts, ",")
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// dur prints a duration in the largest unit that keeps it whole.
func dur(t sim.Time) string {
	if t == 0 {
		return "0us"
	}
	for _, u := range units {
		if t%u.t == 0 && t >= u.t {
			return strconv.FormatInt(int64(t/u.t), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(t), 10) + "ps"
}

var units = []struct {
	name string
	t    sim.Time
}{{"s", sim.Second}, {"ms", sim.Millisecond}, {"us", sim.Microsecond}, {"ns", sim.Nanosecond}}

// Syntax is the form of one fault, for help and errors.
const Syntax = "loss:RATE[@host|@spine], corrupt:RATE[@host|@spine], slow:RANK:FACTOR, link:RANK:FACTOR, flap:RANK:AT+FOR, spine:FACTOR"

// ErrSyntax marks a fault that does not parse (errors.Is).
var ErrSyntax = errors.New("bad fault")

// maxRank bounds a rank in a fault: more than any layer the model runs.
const maxRank = 1 << 20

// Parse reads faults, each in Syntax (a comma list in one string is
// several), into a plan with seed. loss and corrupt add up per class
// (a corrupted packet is dropped, as a lost one is); a rank appears at
// most once among slow faults and once among link and flap faults.
func Parse(specs []string, seed uint64) (*Plan, error) {
	p := &Plan{Seed: seed}
	for _, spec := range specs {
		for _, f := range strings.Split(spec, ",") {
			if err := p.add(strings.TrimSpace(f)); err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrSyntax, f, err)
			}
		}
	}
	// A link at full rate that never goes down is no fault.
	links := p.Links[:0]
	for _, l := range p.Links {
		if l.Factor != 1 || l.Flaps() {
			links = append(links, l)
		}
	}
	p.Links = links
	sort.Slice(p.Slow, func(i, j int) bool { return p.Slow[i].Rank < p.Slow[j].Rank })
	sort.Slice(p.Links, func(i, j int) bool { return p.Links[i].Rank < p.Links[j].Rank })
	return p, nil
}

// add adds one fault, f in Syntax.
func (p *Plan) add(f string) error {
	kind, arg, ok := strings.Cut(f, ":")
	if !ok || arg == "" {
		return fmt.Errorf("want one of %s", Syntax)
	}
	switch kind {
	case "loss", "corrupt":
		return p.addLoss(arg)
	case "slow":
		return p.addSlow(arg)
	case "link":
		return p.addLink(arg)
	case "flap":
		return p.addFlap(arg)
	case "spine":
		fct, err := fraction(arg, "factor", true)
		if err != nil {
			return err
		}
		if p.SpineFactor != 0 {
			return errors.New("the spine is congested twice")
		}
		p.SpineFactor = fct
		return nil
	}
	return fmt.Errorf("kind %q, want one of %s", kind, Syntax)
}

// addLoss adds loss or corruption, RATE[@host|@spine].
func (p *Plan) addLoss(arg string) error {
	rate, at, _ := strings.Cut(arg, "@")
	r, err := fraction(rate, "rate", false)
	if err != nil {
		return err
	}
	classes := []Class{Host, Spine}
	switch at {
	case "":
	case "host":
		classes = classes[:1]
	case "spine":
		classes = classes[1:]
	default:
		return fmt.Errorf("link class %q, want host or spine", at)
	}
	for _, c := range classes {
		// Independent drops on one crossing: the packet survives
		// both (and a single rate stays the number given).
		if p.Loss[c] == 0 {
			p.Loss[c] = r
		} else {
			p.Loss[c] = 1 - (1-p.Loss[c])*(1-r)
		}
	}
	return nil
}

// addSlow adds a slow rank, RANK:FACTOR.
func (p *Plan) addSlow(arg string) error {
	rank, v, err := rankAnd(arg)
	if err != nil {
		return err
	}
	fct, err := factor(v, 1, 1e6)
	if err != nil {
		return err
	}
	for _, s := range p.Slow {
		if s.Rank == rank {
			return fmt.Errorf("rank %d is slow twice", rank)
		}
	}
	p.Slow = append(p.Slow, Slow{Rank: rank, Factor: fct})
	return nil
}

// addLink adds a degraded link, RANK:FACTOR.
func (p *Plan) addLink(arg string) error {
	rank, v, err := rankAnd(arg)
	if err != nil {
		return err
	}
	fct, err := fraction(v, "factor", true)
	if err != nil {
		return err
	}
	l := p.link(rank)
	if l.Factor != 1 {
		return fmt.Errorf("rank %d's link is degraded twice", rank)
	}
	l.Factor = fct
	return nil
}

// addFlap adds a link that goes down, RANK:AT+FOR.
func (p *Plan) addFlap(arg string) error {
	rank, v, err := rankAnd(arg)
	if err != nil {
		return err
	}
	at, span, ok := strings.Cut(v, "+")
	if !ok {
		return errors.New("want flap:RANK:AT+FOR, e.g. flap:3:50us+2ms")
	}
	down, err := duration(at, "at")
	if err != nil {
		return err
	}
	length, err := duration(span, "for")
	if err != nil {
		return err
	}
	if length == 0 || down > sim.Never-length {
		return fmt.Errorf("for: %s, want a positive duration that ends before %s", span, sim.Never)
	}
	l := p.link(rank)
	if l.Flaps() {
		return fmt.Errorf("rank %d's link flaps twice", rank)
	}
	l.Down, l.Up = down, down+length
	return nil
}

// link is rank's link fault, added healthy when it has none.
func (p *Plan) link(rank int) *Link {
	for i := range p.Links {
		if p.Links[i].Rank == rank {
			return &p.Links[i]
		}
	}
	p.Links = append(p.Links, Link{Rank: rank, Factor: 1})
	return &p.Links[len(p.Links)-1]
}

func rankAnd(arg string) (int, string, error) {
	r, v, ok := strings.Cut(arg, ":")
	if !ok || v == "" {
		return 0, "", errors.New("want RANK:VALUE after the kind")
	}
	rank, err := strconv.Atoi(r)
	if err != nil || rank < 0 || rank >= maxRank {
		return 0, "", fmt.Errorf("rank %q, want 0 to %d", r, maxRank-1)
	}
	return rank, v, nil
}

// fraction reads a probability or a share: within [0, 1], or (0, 1]
// when positive.
func fraction(s, what string, positive bool) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(v):
		return 0, fmt.Errorf("%s %q is not a number", what, s)
	case positive && (v <= 0 || v > 1):
		return 0, fmt.Errorf("%s %s, want more than 0 and at most 1", what, s)
	case v < 0 || v > 1:
		return 0, fmt.Errorf("%s %s, want 0 to 1", what, s)
	}
	return v, nil
}

func factor(s string, lo, hi float64) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < lo || v > hi {
		return 0, fmt.Errorf("factor %q, want %s to %s", s, num(lo), num(hi))
	}
	return v, nil
}

// duration reads a non-negative time with a unit: ns, us (or µs), ms, s.
func duration(s, what string) (sim.Time, error) {
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0, fmt.Errorf("%s %q, want a number and a unit (ns, us, ms, s)", what, s)
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number", what, s)
	}
	var u sim.Time
	switch s[i:] {
	case "ns":
		u = sim.Nanosecond
	case "us", "µs":
		u = sim.Microsecond
	case "ms":
		u = sim.Millisecond
	case "s":
		u = sim.Second
	default:
		return 0, fmt.Errorf("%s %q: unit %q, want ns, us, ms or s", what, s, s[i:])
	}
	t := v * float64(u)
	if t >= float64(sim.Second)*3600 {
		return 0, fmt.Errorf("%s %q, want less than an hour", what, s)
	}
	return sim.Time(math.Round(t)), nil
}
