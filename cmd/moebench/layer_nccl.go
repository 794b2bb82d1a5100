package main

import (
	"os"

	"moebench/internal/report"
	"moebench/results"
)

// ncclLibEnv names NCCL's library when --nccl-lib is not given.
const ncclLibEnv = "MOEBENCH_NCCL_LIB"

func ncclLib(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(ncclLibEnv)
}

// nativeDoc is the document of the native engine's runs and NCCL's
// baseline beside them.
func nativeDoc(h report.Header, workload string, items []results.NativeItem, nccl []results.NCCLItem) *results.Native {
	return &results.Native{Header: h, Workload: workload, Items: items, NCCL: nccl}
}
