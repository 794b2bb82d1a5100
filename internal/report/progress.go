package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// Progress reports work that takes longer than a second on stderr. On a
// terminal (or with Force) it draws a bar in place, unless CI is "true";
// elsewhere, a log say, it prints a plain line now and then (see
// lineEvery). Either way Done prints one final line when the work took
// longer than the delay. It never writes to stdout.
type Progress struct {
	w      io.Writer
	label  string
	total  int
	done   int
	live   bool // draw the bar in place
	lines  bool // print a plain line now and then instead
	start  time.Time
	delay  time.Duration
	last   time.Time
	drawn  bool
	lineAt time.Duration // when, after start, the next plain line is due
	now    func() time.Time
	Width  int // bar cells; 0 means 30

	// The rate the ETA divides by: units a second, smoothed over about
	// rateWindow, measured from the first unit done so that setup before
	// the work starts flowing does not count.
	rate      float64
	sampled   time.Time
	sampledAt int // done when sampled
	rateKnown bool
	flowing   bool
}

// ProgressOptions adjust a Progress; the zero value suits a CLI.
type ProgressOptions struct {
	Force bool             // draw even when w is not a terminal
	Quiet bool             // never draw, and no final line
	Delay time.Duration    // show nothing before this much time passed; 0 means 1 s
	Now   func() time.Time // clock, for tests
	CI    *bool            // overrides the CI environment variable, for tests
}

// When the ETA is worth showing: an estimate from the first moments of a
// run (a layer's setup, its first messages) is off by orders of magnitude.
// It waits for etaAfterFrac of the work, or for etaLongAfter and
// etaLongFrac of a long run, and never comes before etaAfter.
const (
	etaAfter     = 2 * time.Second
	etaAfterFrac = 0.10
	etaLongAfter = 30 * time.Second
	etaLongFrac  = 0.01
	// rateWindow is the smoothing's time constant; samples come at most
	// every rateSample.
	rateWindow = 5 * time.Second
	rateSample = 500 * time.Millisecond
	// lineEvery is how often a plain line is printed where no bar is
	// drawn: every lineEvery, or a quarter of the time so far when that
	// is longer, so a long run's log holds a few dozen lines, not
	// thousands. Work done within lineEvery prints none.
	lineEvery = 10 * time.Second
)

// NewProgress starts a progress report of total steps on w; a total of 0
// or less counts without a fraction or an ETA.
func NewProgress(w io.Writer, label string, total int, o ProgressOptions) *Progress {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	ci := os.Getenv("CI") == "true"
	if o.CI != nil {
		ci = *o.CI
	}
	delay := o.Delay
	if delay == 0 {
		delay = time.Second
	}
	p := &Progress{w: w, label: label, total: total, now: now, delay: delay, lineAt: lineEvery}
	p.start = now()
	p.live = !o.Quiet && !ci && (o.Force || IsTerminal(w))
	p.lines = !o.Quiet && !p.live
	if o.Quiet {
		p.w = io.Discard
	}
	return p
}

// IsTerminal reports whether w is a character device such as a TTY.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Step marks one step done; what names it.
func (p *Progress) Step(what string) { p.Add(1, what) }

// Add marks n more units of work done (simulated messages within a long
// run, say); what names the work in progress.
func (p *Progress) Add(n int, what string) {
	p.done += n
	if !p.live && !p.lines {
		return
	}
	t := p.now()
	p.sample(t)
	el := t.Sub(p.start)
	if p.lines {
		if el >= p.lineAt {
			fmt.Fprintln(p.w, p.line(what, el))
			p.lineAt = el + max(lineEvery, el/4)
		}
		return
	}
	if el < p.delay || (p.drawn && t.Sub(p.last) < 100*time.Millisecond && p.done < p.total) {
		return
	}
	p.last = t
	p.drawn = true
	fmt.Fprintf(p.w, "\r\033[K%s", p.bar(what, t))
}

// sample updates the smoothed rate: an exponential average of the rates
// between samples, so one burst or stall moves the ETA only a little.
func (p *Progress) sample(t time.Time) {
	if !p.flowing {
		if p.done > 0 {
			p.flowing, p.sampled, p.sampledAt = true, t, p.done
		}
		return
	}
	dt := t.Sub(p.sampled)
	if dt < rateSample {
		return
	}
	r := float64(p.done-p.sampledAt) / dt.Seconds()
	if !p.rateKnown {
		p.rate, p.rateKnown = r, true
	} else {
		p.rate += (1 - math.Exp(-dt.Seconds()/rateWindow.Seconds())) * (r - p.rate)
	}
	p.sampled, p.sampledAt = t, p.done
}

// eta is the time the work has left, once that is worth showing.
func (p *Progress) eta(el time.Duration) (time.Duration, bool) {
	if p.total <= 0 || p.done >= p.total || !p.rateKnown || p.rate <= 0 || el < etaAfter {
		return 0, false
	}
	frac := float64(p.done) / float64(p.total)
	if frac < etaAfterFrac && (el < etaLongAfter || frac < etaLongFrac) {
		return 0, false
	}
	left := time.Duration(float64(p.total-p.done) / p.rate * float64(time.Second))
	return left.Round(time.Second), true
}

// line is the plain progress line for a log.
func (p *Progress) line(what string, el time.Duration) string {
	s := fmt.Sprintf("%s: %d done after %s", p.label, p.done, el.Round(time.Second))
	if p.total > 0 {
		s = fmt.Sprintf("%s: %d%% after %s", p.label, int(100*min(1, float64(p.done)/float64(p.total))), el.Round(time.Second))
	}
	if left, ok := p.eta(el); ok {
		s += fmt.Sprintf(", about %s left", left)
	}
	if what != "" {
		s += " (" + shorten(what) + ")"
	}
	return s
}

func shorten(what string) string {
	if len(what) > 40 {
		return what[:39] + "…"
	}
	return what
}

func (p *Progress) bar(what string, t time.Time) string {
	width := p.Width
	if width == 0 {
		width = 30
	}
	frac := 1.0
	if p.total > 0 {
		frac = min(1, float64(p.done)/float64(p.total))
	}
	fill := int(frac * float64(width))
	el := t.Sub(p.start)
	eta := ""
	if left, ok := p.eta(el); ok {
		eta = " eta " + left.String()
	}
	return fmt.Sprintf("%s [%s%s] %d/%d %s%s %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
		p.done, p.total, el.Round(100*time.Millisecond), eta, shorten(what))
}

// Done clears the bar and, when the work took longer than the delay,
// prints one final line.
func (p *Progress) Done() {
	el := p.now().Sub(p.start)
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	if el >= p.delay {
		fmt.Fprintf(p.w, "%s: %d/%d done in %s\n", p.label, p.done, p.total, el.Round(10*time.Millisecond))
	}
}

// Deferred is a Progress started at its first step, for work that knows
// its total only once it runs: its clock starts there too, so setup
// before the work does not count.
type Deferred struct {
	w     io.Writer
	label string
	o     ProgressOptions
	p     *Progress
}

// NewDeferred is a Deferred progress report on w.
func NewDeferred(w io.Writer, label string, o ProgressOptions) *Deferred {
	return &Deferred{w: w, label: label, o: o}
}

// Step marks one step of total done, what naming it; the first starts
// the Progress of total steps.
func (d *Deferred) Step(done, total int, what string) {
	if d.p == nil {
		d.p = NewProgress(d.w, d.label, total, d.o)
	}
	d.p.Step(what)
}

// Done ends the Progress if a step started it; otherwise there is
// nothing to end, and it prints nothing.
func (d *Deferred) Done() {
	if d.p != nil {
		d.p.Done()
	}
}
