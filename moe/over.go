package moe

// Over is s with the values given over it, named as s's errors name its
// fields (tokens, ranks, gpus-per-node, topk, hidden, experts). A value
// given is used as it is, 0 included, for Validate to refuse; a count of
// experts other than s's own leaves no redundant replicas.
func (s Shape) Over(given map[string]int) Shape {
	for name, dst := range map[string]*int{"tokens": &s.Tokens, "ranks": &s.Ranks, "gpus-per-node": &s.GPUsPerNode,
		"topk": &s.TopK, "hidden": &s.Hidden} {
		if v, ok := given[name]; ok {
			*dst = v
		}
	}
	if v, ok := given["experts"]; ok && v != s.Experts {
		s.Experts, s.PhysicalExperts = v, 0
	}
	return s
}
