package main

// badInputsDocs are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsDocs() []badInput {
	return nil
}
