package profile

import (
	"slices"
	"strings"
	"testing"
)

// Every constant of every built-in profile states its kind, and the kind
// agrees with what its source says: a "fit:" is a fit to the paper, a
// "bounded fit" one to this project's native measurements, and an
// assumption says that it is one.
func TestBuiltinKinds(t *testing.T) {
	t.Parallel()
	for _, name := range Builtins() {
		p, err := Load(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, c := range p.Constants() {
			if !slices.Contains(Kinds(), c.Kind) {
				t.Errorf("%s: %s has kind %q, want one of %v", name, c.Name, c.Kind, Kinds())
				continue
			}
			s := c.Source
			var want Kind
			switch {
			case strings.HasPrefix(s, "fit:"):
				want = KindFit
			case strings.HasPrefix(s, "bounded fit"):
				want = KindMeasured
			case strings.HasPrefix(s, "model assumption"):
				want = KindAssumption
			}
			if want != "" && c.Kind != want {
				t.Errorf("%s: %s is %s, but its source %q makes it %s", name, c.Name, c.Kind, s, want)
			}
			if c.Kind == KindAssumption && !strings.Contains(s, "assumption") {
				t.Errorf("%s: %s is an assumption its source does not call one: %q", name, c.Name, s)
			}
			if c.Kind == KindFit && !strings.Contains(s, "fit") {
				t.Errorf("%s: %s is a fit its source does not call one: %q", name, c.Name, s)
			}
		}
	}
}
