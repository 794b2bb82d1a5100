package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Progress draws a bar on stderr for work that takes longer than a second:
// only when stderr is a terminal (or Force is set) and CI is not "true".
// Otherwise it stays quiet until Done, which prints one final line when the
// work took longer than the delay. It never writes to stdout.
type Progress struct {
	w     io.Writer
	label string
	total int
	done  int
	live  bool // draw the bar in place
	start time.Time
	delay time.Duration
	last  time.Time
	drawn bool
	now   func() time.Time
	Width int // bar cells; 0 means 30
}

// ProgressOptions adjust a Progress; the zero value suits a CLI.
type ProgressOptions struct {
	Force bool             // draw even when w is not a terminal
	Quiet bool             // never draw, and no final line
	Delay time.Duration    // show nothing before this much time passed; 0 means 1 s
	Now   func() time.Time // clock, for tests
	CI    *bool            // overrides the CI environment variable, for tests
}

// NewProgress starts a progress report of total steps on w.
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
	p := &Progress{w: w, label: label, total: total, now: now, delay: delay}
	p.start = now()
	p.live = !o.Quiet && !ci && (o.Force || IsTerminal(w))
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
	if !p.live {
		return
	}
	t := p.now()
	if t.Sub(p.start) < p.delay || (p.drawn && t.Sub(p.last) < 100*time.Millisecond && p.done < p.total) {
		return
	}
	p.last = t
	p.drawn = true
	fmt.Fprintf(p.w, "\r\033[K%s", p.bar(what, t))
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
	if p.done > 0 && p.done < p.total {
		left := time.Duration(float64(el) / float64(p.done) * float64(p.total-p.done))
		eta = " eta " + left.Round(time.Second).String()
	}
	if len(what) > 40 {
		what = what[:39] + "…"
	}
	return fmt.Sprintf("%s [%s%s] %d/%d %s%s %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
		p.done, p.total, el.Round(100*time.Millisecond), eta, what)
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
