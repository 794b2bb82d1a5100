package preset

import (
	"fmt"

	"moebench/transport"
	"moebench/transport/profile"
)

// Estimate forwards to the wrapped transport, so that naming a transport
// does not hide its estimator.
func (n named) Estimate(d *transport.Demand, p *profile.Profile) (transport.Estimate, error) {
	e, ok := n.Transport.(transport.Estimator)
	if !ok {
		return transport.Estimate{}, fmt.Errorf("%s: no analytic estimate", n.name)
	}
	return e.Estimate(d, p)
}
