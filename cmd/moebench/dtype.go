package main

import "github.com/spf13/pflag"

const (
	dispatchDTypeHelp = "dispatch element type: fp8 (DeepEP's default, 7,408 B LL messages at hidden 7,168), bf16 (14,352 B) " +
		"or nvfp4 (4,048 B: 4-bit values and an e4m3 scale per 16 channels; hidden a multiple of 256) (default the workload's)"
	combineDTypeHelp = "combine element type: bf16, fp16 or fp32 (default the workload's, bf16); fp8 and nvfp4 are dispatch types only"
)

// registerDTypes adds --dispatch-dtype and --combine-dtype, shared by run,
// sweep, size and replay; an empty value means the workload's.
func registerDTypes(fs *pflag.FlagSet, dispatch, combine *string) {
	fs.StringVar(dispatch, "dispatch-dtype", "", dispatchDTypeHelp)
	fs.StringVar(combine, "combine-dtype", "", combineDTypeHelp)
}
