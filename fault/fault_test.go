package fault

import (
	"errors"
	"math"
	"strings"
	"testing"

	"moebench/sim"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		specs []string
		want  string // the plan, printed; "" for an error
		err   string
	}{
		{specs: nil, want: "none"},
		{specs: []string{"loss:1e-5"}, want: "loss:1e-05@host,loss:1e-05@spine"},
		{specs: []string{"loss:0.01@spine"}, want: "loss:0.01@spine"},
		{specs: []string{"corrupt:0.5@host", "loss:0.5@host"}, want: "loss:0.75@host"},
		{specs: []string{"slow:7:2", "slow:1:1.5"}, want: "slow:1:1.5,slow:7:2"},
		{specs: []string{"link:2:0.5,flap:2:1ms+250us"}, want: "link:2:0.5,flap:2:1ms+250us"},
		{specs: []string{"flap:0:0ns+1s"}, want: "flap:0:0us+1s"},
		{specs: []string{"spine:0.25"}, want: "spine:0.25"},
		{specs: []string{"loss:2"}, err: `rate 2, want 0 to 1`},
		{specs: []string{"loss:x"}, err: `rate "x" is not a number`},
		{specs: []string{"loss:NaN"}, err: `is not a number`},
		{specs: []string{"loss:0.1@nic"}, err: `link class "nic", want host or spine`},
		{specs: []string{"drop:1"}, err: `kind "drop"`},
		{specs: []string{"loss"}, err: `want one of`},
		{specs: []string{""}, err: `want one of`},
		{specs: []string{"slow:3"}, err: `want RANK:VALUE`},
		{specs: []string{"slow:-1:2"}, err: `rank "-1"`},
		{specs: []string{"slow:1:0.5"}, err: `factor "0.5", want 1 to 1e+06`},
		{specs: []string{"slow:1:2,slow:1:3"}, err: `rank 1 is slow twice`},
		{specs: []string{"link:1:0"}, err: `factor 0, want more than 0 and at most 1`},
		{specs: []string{"link:1:0.5", "link:1:0.25"}, err: `degraded twice`},
		{specs: []string{"flap:1:5us"}, err: `want flap:RANK:AT+FOR`},
		{specs: []string{"flap:1:5+1us"}, err: `at "5", want a number and a unit`},
		{specs: []string{"flap:1:5us+1h"}, err: `unit "h"`},
		{specs: []string{"flap:1:5us+0us"}, err: `want a positive duration`},
		{specs: []string{"flap:1:5000s+1us"}, err: `want less than an hour`},
		{specs: []string{"spine:0.5,spine:0.5"}, err: `congested twice`},
	} {
		p, err := Parse(c.specs, 1)
		if c.err != "" {
			if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %v, want an error with %q", c.specs, err, c.err)
			}
			continue
		}
		if err != nil || p.String() != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %s", c.specs, p, err, c.want)
			continue
		}
		// What String prints parses back to the same plan.
		if c.want != "none" {
			q, err := Parse([]string{p.String()}, 1)
			if err != nil || q.String() != c.want {
				t.Errorf("Parse(%q) = %v, %v; want %s again", p.String(), q, err, c.want)
			}
		}
	}
}

func TestLink(t *testing.T) {
	p, err := Parse([]string{"flap:3:10us+5us", "slow:3:4"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := p.LinkOf(3)
	if !ok || l.Factor != 1 || !l.Flaps() {
		t.Fatalf("LinkOf(3) = %+v, %v; want a flap at full rate", l, ok)
	}
	for _, c := range []struct {
		at   sim.Time
		down bool
	}{{9999 * sim.Nanosecond, false}, {10 * sim.Microsecond, true}, {14999 * sim.Nanosecond, true}, {15 * sim.Microsecond, false}} {
		if got := l.IsDown(c.at); got != c.down {
			t.Errorf("IsDown(%s) = %v, want %v", c.at, got, c.down)
		}
	}
	if _, ok := p.LinkOf(2); ok {
		t.Error("LinkOf(2) found a fault on a healthy rank")
	}
	if !p.Lossy() || p.Empty() {
		t.Error("a flapping link loses packets")
	}
	if err := p.Validate(3); err == nil || !strings.Contains(err.Error(), "slow rank 3: the layer has 3 ranks") {
		t.Errorf("Validate(3) = %v", err)
	}
	if err := p.Validate(4); err != nil {
		t.Errorf("Validate(4) = %v", err)
	}
}

// The draws are uniform and independent of one another: over many keys
// the share under a rate is the rate, and the same keys draw the same.
func TestDraw(t *testing.T) {
	p := &Plan{Seed: 42}
	const n = 200000
	const rate = 0.01
	lost := 0
	for i := range uint64(n) {
		if p.Lost(rate, 7, i) {
			lost++
		}
		if p.Draw(7, i) != p.Draw(7, i) {
			t.Fatal("the same keys drew twice differently")
		}
	}
	// Binomial: 2000 ± 44.5 (1 σ); 5 σ.
	if math.Abs(float64(lost)-n*rate) > 5*math.Sqrt(n*rate*(1-rate)) {
		t.Errorf("lost %d of %d at rate %g", lost, n, rate)
	}
	other := &Plan{Seed: 43}
	same := 0
	for i := range uint64(1000) {
		if p.Draw(1, i) == other.Draw(1, i) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 42 and 43 drew %d of 1000 numbers alike", same)
	}
	if p.Lost(0, 1, 2) || (&Plan{}).PacketLoss(true) != 0 {
		t.Error("a rate of 0 loses packets")
	}
	q := &Plan{Loss: [NumClasses]float64{0.1, 0.2}}
	if got, want := q.PacketLoss(false), 1-0.9*0.9; math.Abs(got-want) > 1e-15 {
		t.Errorf("PacketLoss(false) = %g, want %g", got, want)
	}
	if got, want := q.PacketLoss(true), 1-0.9*0.9*0.8*0.8; math.Abs(got-want) > 1e-15 {
		t.Errorf("PacketLoss(true) = %g, want %g", got, want)
	}
}

func TestFailure(t *testing.T) {
	f := &Failure{Mechanism: "mini-gda", Rank: 3, Peer: 12, NIC: 3, QP: 17, At: 4 * sim.Millisecond, Retries: 7,
		Status: "IBV_WC_RETRY_EXC_ERR", Reason: "a packet lost 8 times in a row"}
	var err error = f
	if !errors.Is(err, ErrFailed) {
		t.Error("a Failure is not ErrFailed")
	}
	want := "mini-gda: rank 3's queue 17 on NIC 3 to rank 12 failed at 4ms with IBV_WC_RETRY_EXC_ERR after 7 retransmissions: a packet lost 8 times in a row"
	if f.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", f.Error(), want)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"loss:1e-4", "corrupt:0.1@spine,slow:2:3", "flap:1:5us+2ms", "link:0:0.5", "spine:0.3", "x:y:z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse([]string{s}, 1)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): %v is not ErrSyntax", s, err)
			}
			return
		}
		q, err := Parse([]string{p.String()}, 1)
		if p.Empty() {
			return
		}
		if err != nil || q.String() != p.String() {
			t.Fatalf("Parse(%q) printed %q, which parses to %v, %v", s, p, q, err)
		}
	})
}

func TestForPhase(t *testing.T) {
	p, err := Parse([]string{"loss:0.5", "flap:1:30us+20us", "flap:2:5us+10us"}, 9)
	if err != nil {
		t.Fatal(err)
	}
	if (&Plan{}).ForPhase(1, 0) != nil {
		t.Error("a healthy plan has a phase plan")
	}
	a, b := p.ForPhase(0, 0), p.ForPhase(1, 20*sim.Microsecond)
	if a.Seed == b.Seed || a.Seed == p.Seed {
		t.Errorf("phases drew alike: seeds %d, %d of %d", a.Seed, b.Seed, p.Seed)
	}
	// Layer time 30-50 µs is 10-30 µs on a clock that starts at 20 µs;
	// a flap over before the phase starts is over at 0.
	l1, _ := b.LinkOf(1)
	l2, _ := b.LinkOf(2)
	if l1.Down != 10*sim.Microsecond || l1.Up != 30*sim.Microsecond || l2.Flaps() {
		t.Errorf("phase flaps %+v, %+v", l1, l2)
	}
	if l, _ := p.LinkOf(1); l.Down != 30*sim.Microsecond {
		t.Errorf("ForPhase moved the plan's own flap to %s", l.Down)
	}
}
