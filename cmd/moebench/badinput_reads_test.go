package main

// badInputsReads are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsReads() []badInput {
	return nil
}
