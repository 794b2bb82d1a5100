package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestProgress(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, tc := range []struct {
		name      string
		o         ProgressOptions
		step      time.Duration
		wantBar   bool
		wantFinal bool
	}{
		{"forced and slow draws and ends with a line", ProgressOptions{Force: true, CI: &no}, 600 * time.Millisecond, true, true},
		{"not a terminal stays quiet but for the final line", ProgressOptions{CI: &no}, 600 * time.Millisecond, false, true},
		{"CI stays quiet but for the final line", ProgressOptions{Force: true, CI: &yes}, 600 * time.Millisecond, false, true},
		{"fast work prints nothing", ProgressOptions{Force: true, CI: &no}, time.Millisecond, false, false},
		{"quiet prints nothing", ProgressOptions{Force: true, Quiet: true, CI: &no}, time.Second, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			c := &fakeClock{t: time.Unix(0, 0)}
			tc.o.Now = c.now
			p := NewProgress(&b, "sweep", 4, tc.o)
			for i := range 4 {
				c.t = c.t.Add(tc.step)
				p.Step("run " + string(rune('a'+i)))
			}
			p.Done()
			out := b.String()
			if got := strings.Contains(out, "[="); got != tc.wantBar {
				t.Errorf("bar drawn %v, want %v: %q", got, tc.wantBar, out)
			}
			if got := strings.Contains(out, "sweep: 4/4 done in"); got != tc.wantFinal {
				t.Errorf("final line %v, want %v: %q", got, tc.wantFinal, out)
			}
			if tc.wantBar && !strings.HasSuffix(out, "\n") {
				t.Errorf("output does not end with a newline: %q", out)
			}
		})
	}
}

func TestIsTerminalOnBuffer(t *testing.T) {
	t.Parallel()
	if IsTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer is not a terminal")
	}
}

// Within one long step the bar moves with Add.
func TestProgressAddMovesWithinARun(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	no := false
	c := &fakeClock{t: time.Unix(0, 0)}
	p := NewProgress(&b, "run", 1000, ProgressOptions{Force: true, CI: &no, Now: c.now})
	for range 10 {
		c.t = c.t.Add(time.Second)
		p.Add(50, "mini-gda")
	}
	if !strings.Contains(b.String(), "500/1000") || !strings.Contains(b.String(), "[===============") {
		t.Errorf("bar did not reach half way: %q", b.String())
	}
}

// etas lists the ETAs a bar or line output shows, in order.
func etas(t *testing.T, out string) []time.Duration {
	t.Helper()
	var d []time.Duration
	for _, marker := range []string{" eta ", ", about "} {
		for _, part := range strings.Split(out, marker)[1:] {
			f := strings.Fields(part)[0]
			v, err := time.ParseDuration(f)
			if err != nil {
				t.Fatalf("ETA %q: %v", f, err)
			}
			d = append(d, v)
		}
	}
	return d
}

// A run of a few seconds whose first second is setup shows no ETA until
// a tenth of the work is done and two seconds passed, and then one near
// the truth, never hours.
func TestProgressETAWaitsUntilMeaningful(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	no := false
	c := &fakeClock{t: time.Unix(0, 0)}
	p := NewProgress(&b, "run", 1000, ProgressOptions{Force: true, CI: &no, Now: c.now})
	c.t = c.t.Add(1100 * time.Millisecond) // setup: nothing flows
	p.Add(1, "mini-gda")
	if got := etas(t, b.String()); len(got) > 0 {
		t.Fatalf("an ETA at 0.1%% done: %v in %q", got, b.String())
	}
	// Then 333 units a second: three seconds of work.
	shown := 0
	for done := 1; done < 999; done += 33 {
		c.t = c.t.Add(100 * time.Millisecond)
		frac := float64(done) / 1000
		b.Reset()
		p.Add(33, "mini-gda")
		el := c.t.Sub(time.Unix(0, 0))
		got := etas(t, b.String())
		if len(got) > 0 && (frac < etaAfterFrac || el < etaAfter) {
			t.Fatalf("an ETA %v at %.0f%% after %v", got, 100*frac, el)
		}
		truth := time.Duration(float64(1000-p.done) / 333 * float64(time.Second))
		shown += len(got)
		for _, e := range got {
			if d := e - truth; d > time.Second || d < -time.Second {
				t.Errorf("at %v: ETA %v, %v left", el, e, truth)
			}
		}
	}
	if shown == 0 {
		t.Error("no ETA shown")
	}
}

// A rate that jumps between bursts and lulls moves the ETA little.
func TestProgressETAIsSmoothed(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	no := false
	c := &fakeClock{t: time.Unix(0, 0)}
	const total = 100_000
	p := NewProgress(&b, "sweep", total, ProgressOptions{Force: true, CI: &no, Now: c.now})
	for i := range 600 {
		c.t = c.t.Add(100 * time.Millisecond)
		n := 50 // a second at 500 a second, then a second at 1500
		if i/10%2 == 1 {
			n = 150
		}
		b.Reset()
		p.Add(n, "x")
		got := etas(t, b.String())
		if i >= 100 && len(got) == 0 {
			t.Fatalf("at %v: no ETA: %q", c.t.Sub(time.Unix(0, 0)), b.String())
		}
		if i < 100 {
			continue
		}
		// The mean rate is 1000 a second; an unsmoothed ETA would swing
		// between half and one and a half times the truth.
		truth := float64(total-p.done) / 1000
		if e := got[0].Seconds(); e < 0.8*truth-1 || e > 1.2*truth+1 {
			t.Errorf("at %v: ETA %.0fs, about %.0fs left", c.t.Sub(time.Unix(0, 0)), e, truth)
		}
	}
}

// Where no bar is drawn, a long run prints a plain line every ten
// seconds, less often as it goes on; a short one prints none.
func TestProgressLinesOnANonTerminal(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		o     ProgressOptions
		run   time.Duration
		total int
		want  []string // the lines before the final one, by prefix
	}{
		{"a 9 s run prints only the final line", ProgressOptions{CI: &no}, 9 * time.Second, 900, nil},
		{"an 11 s run prints one line", ProgressOptions{CI: &no}, 11 * time.Second, 1100, []string{"sweep: 90% after 10s, about 1s left (point 100)"}},
		{"CI prints lines too", ProgressOptions{CI: &yes}, 11 * time.Second, 1100, []string{"sweep: 90% after 10s"}},
		{"an unknown total counts", ProgressOptions{CI: &no}, 11 * time.Second, 0, []string{"sweep: 1000 done after 10s (point 100)"}},
		{"a long run spaces its lines out", ProgressOptions{CI: &no}, 100 * time.Second, 10000,
			[]string{"sweep: 10% after 10s", "sweep: 20% after 20s", "sweep: 30% after 30s", "sweep: 40% after 40s",
				"sweep: 50% after 50s", "sweep: 62% after 1m3s", "sweep: 78% after 1m18s", "sweep: 97% after 1m38s"}},
		{"quiet prints nothing", ProgressOptions{CI: &no, Quiet: true}, 30 * time.Second, 3000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			c := &fakeClock{t: time.Unix(0, 0)}
			tc.o.Now = c.now
			p := NewProgress(&b, "sweep", tc.total, tc.o)
			for i := range int(tc.run / (100 * time.Millisecond)) {
				c.t = c.t.Add(100 * time.Millisecond)
				p.Add(10, fmt.Sprintf("point %d", i+1))
			}
			p.Done()
			out := b.String()
			if strings.ContainsAny(out, "\r\033") {
				t.Errorf("a bar's control characters in a log: %q", out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if tc.o.Quiet {
				if out != "" {
					t.Errorf("quiet wrote %q", out)
				}
				return
			}
			if final := lines[len(lines)-1]; !strings.HasPrefix(final, "sweep: ") || !strings.Contains(final, " done in ") {
				t.Errorf("last line %q, want the final one", final)
			}
			lines = lines[:len(lines)-1]
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines before the final one, want %d:\n%s", len(lines), len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d %q, want it to start %q", i, lines[i], w)
				}
			}
		})
	}
}

// A deferred progress starts its clock and total at the first step, and
// without one prints nothing.
func TestDeferred(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	no := false
	c := &fakeClock{t: time.Unix(0, 0)}
	o := ProgressOptions{Force: true, CI: &no, Now: c.now}
	NewDeferred(&b, "size", o).Done()
	if b.Len() != 0 {
		t.Fatalf("no step: %q, want nothing", b.String())
	}
	d := NewDeferred(&b, "size", o)
	c.t = c.t.Add(time.Hour) // setup before the first step
	for i := range 4 {
		c.t = c.t.Add(600 * time.Millisecond)
		d.Step(i, 4, "mini-gda")
	}
	d.Done()
	out := b.String()
	if !strings.Contains(out, "4/4") || !strings.Contains(out, "size: 4/4 done in 1.8s") {
		t.Errorf("%q: want 4 of 4 steps timed from the first", out)
	}
}
