package report

import (
	"bytes"
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
