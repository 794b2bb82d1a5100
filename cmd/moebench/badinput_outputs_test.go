package main

// badInputsOutputs are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsOutputs() []badInput {
	return nil
}
