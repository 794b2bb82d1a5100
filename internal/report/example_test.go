package report_test

import (
	"fmt"

	"moebench/internal/report"
)

func ExampleCount() {
	fmt.Println(report.Count(1, "GPU"), "and", report.Count(8, "GPU"))
	// Output: 1 GPU and 8 GPUs
}
