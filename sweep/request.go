package sweep

// Request is a run's or sweep's grid as a command asks for it, by name:
// the workload, what is given over its shape, the dtypes, modes and
// backgrounds, before any is looked up or parsed.
type Request struct {
	Workload           string
	Given              map[string]int // over the workload's shape (moe.Shape.Over)
	Dispatch, Combine  string         // "" keeps the workload's
	Modes, Backgrounds []string
	// Grid is the lists to cross; Resolve sets its Shape, Modes and
	// Backgrounds from the above.
	Grid
}

// Resolve is the grid r asks for; each refusal is the caller's input,
// naming its field, in the order the fields are read.
func (r Request) Resolve() (Grid, error) {
	w, err := Workload(r.Workload, r.Dispatch, r.Combine)
	if err != nil {
		return Grid{}, err
	}
	g := r.Grid
	g.Shape = w.Shape.Over(r.Given)
	if g.Modes, err = Modes(r.Modes); err != nil {
		return Grid{}, err
	}
	if g.Backgrounds, err = Backgrounds(r.Backgrounds); err != nil {
		return Grid{}, err
	}
	return g, nil
}
