package main

// badInputsRefusals are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsRefusals() []badInput {
	return nil
}
