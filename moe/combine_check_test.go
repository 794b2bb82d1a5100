package moe_test

import (
	"strings"
	"testing"

	"moebench/moe"
	"moebench/sim"
	"moebench/transport"
	"moebench/transport/preset"
)

// faultyCombine wraps a transport and, in the second phase it opens (LL
// combine, when the phases run in turn), hands the layer deliveries as
// fault says.
type faultyCombine struct {
	transport.Transport
	opened int
	fault  func(inner func(*sim.Engine, transport.Delivery)) func(*sim.Engine, transport.Delivery)
}

func (f *faultyCombine) Open(env *transport.Env) (transport.Conn, error) {
	f.opened++
	if f.opened == 2 {
		env2 := *env
		env2.Delivered = f.fault(env.Delivered)
		env = &env2
	}
	return f.Transport.Open(env)
}

// The combine checks, made on their own goroutine from a log of
// deliveries, still catch each fault they were written for.
func TestLLCombineChecksCatchFaults(t *testing.T) {
	t.Parallel()
	token := func(d transport.Delivery) bool { return !d.Op.Atomic && d.Op.Src != d.Op.Dst }
	flag := func(d transport.Delivery) bool { return d.Op.Atomic && d.Op.Src != d.Op.Dst }
	// nth applies act to the n-th delivery that match picks and passes
	// every other one on.
	nth := func(n int, match func(transport.Delivery) bool, act func(inner func(*sim.Engine, transport.Delivery), e *sim.Engine, d transport.Delivery)) func(func(*sim.Engine, transport.Delivery)) func(*sim.Engine, transport.Delivery) {
		return func(inner func(*sim.Engine, transport.Delivery)) func(*sim.Engine, transport.Delivery) {
			seen := 0
			return func(e *sim.Engine, d transport.Delivery) {
				if match(d) {
					seen++
					if seen == n {
						act(inner, e, d)
						return
					}
				}
				inner(e, d)
			}
		}
	}
	twice := func(inner func(*sim.Engine, transport.Delivery), e *sim.Engine, d transport.Delivery) {
		inner(e, d)
		inner(e, d)
	}
	drop := func(func(*sim.Engine, transport.Delivery), *sim.Engine, transport.Delivery) {}
	// late holds a token until its expert's flag to the same rank has
	// been delivered.
	late := func(inner func(*sim.Engine, transport.Delivery)) func(*sim.Engine, transport.Delivery) {
		var held *transport.Delivery
		return func(e *sim.Engine, d transport.Delivery) {
			switch {
			case held == nil && token(d):
				held = &d
			case held != nil && flag(d) && d.Op.Src == held.Op.Src && d.Op.Dst == held.Op.Dst && d.Op.Channel == held.Op.Channel:
				inner(e, d)
				inner(e, *held)
			default:
				inner(e, d)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		fault func(func(*sim.Engine, transport.Delivery)) func(*sim.Engine, transport.Delivery)
		want  []string
	}{
		{"token twice", nth(3, token, twice), []string{"came back from expert", "twice"}},
		{"token lost", nth(5, token, drop), []string{"never came back", "combine check"}},
		{"token after flag", late, []string{"after the expert's flag"}},
		{"flag twice", nth(2, flag, twice), []string{"flag of expert", "delivered twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := moe.Shape{Experts: 32, TopK: 4, Hidden: 512, Tokens: 16, Ranks: 8, GPUsPerNode: 4, Dispatch: moe.FP8, Combine: moe.BF16}
			cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
			cfg.InTurn = true
			cfg.Transport = &faultyCombine{Transport: cfg.Transport, fault: tc.fault}
			res, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Correct {
				t.Fatal("the layer is reported correct")
			}
			all := strings.Join(res.Problems, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no problem says %q:\n%s", w, all)
				}
			}
		})
	}
}
