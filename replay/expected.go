package replay

import "moebench/traces"

// Expected is how many (step, layer) groups a replay of a trace with
// header h runs, for a progress bar: its steps (the first steps of them,
// when steps is set) times its layers, at most maxLayers when set; 0 when
// neither the header nor maxLayers says.
func Expected(h traces.Header, steps, maxLayers int) int {
	n := 0
	if h.Steps > 0 {
		st := h.Steps
		if steps > 0 {
			st = min(st, steps)
		}
		n = st * h.Layers
	}
	if maxLayers > 0 && (n == 0 || maxLayers < n) {
		n = maxLayers
	}
	return n
}
