package main

// badInputsSizes are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsSizes() []badInput {
	return nil
}
