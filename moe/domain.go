package moe

import (
	"fmt"
	"math"

	"moebench/profile"
)

// OnProfile is s with p's NVLink domain (nvlink.domain_gpus) where s names
// none, so that a profile of a rack-scale NVLink system (an NVL72) runs
// its rack as one domain without the caller knowing of it. Having set the
// domain, it checks the shape (Validate): ranks that do not fill whole
// domains are an error.
func (s Shape) OnProfile(p *profile.Profile) (Shape, error) {
	if s.NVLDomain != 0 || p == nil {
		return s, nil
	}
	d := p.Get("nvlink.domain_gpus")
	if d != math.Trunc(d) {
		return s, fmt.Errorf("nvlink domain: %g GPUs (nvlink.domain_gpus) is not a whole number", d)
	}
	s.NVLDomain = int(d)
	if s.GPUsPerNode > 0 && s.NVLDomain%s.GPUsPerNode != 0 {
		return s, fmt.Errorf("nvlink domain: %d GPUs (nvlink.domain_gpus of profile %s) is not a whole number of nodes of %d GPUs", s.NVLDomain, p.Name, s.GPUsPerNode)
	}
	return s, s.Validate()
}

// onProfile gives c a routing whose shape carries the profile's NVLink
// domain (OnProfile); the caller's routing is left as it was.
func (c *LayerConfig) onProfile() error {
	if c.Routing == nil {
		return nil
	}
	s, err := c.Routing.Shape.OnProfile(c.Profile)
	if err != nil {
		return err
	}
	if s != c.Routing.Shape {
		rt := *c.Routing
		rt.Shape = s
		c.Routing = &rt
	}
	return nil
}
