package calib

import (
	"fmt"

	"moebench/internal/report"
	"moebench/native"
)

// ComputeRunner is what the compute measurements need of the native
// library; *native.Lib implements it.
type ComputeRunner interface {
	Device() native.DeviceInfo
	GEMM(native.GEMMConfig) (native.GEMMResult, error)
}

// GEMMRow is one timed expert-group GEMM: Op is "up" (gate and up
// projections, hidden → 2 × intermediate), "down" (intermediate →
// hidden) or "act" (the SwiGLU between them).
type GEMMRow struct {
	Op       string `json:"op"`
	DType    string `json:"dtype"`
	Groups   int    `json:"groups"`
	Tokens   int    `json:"tokens"`
	K        int    `json:"k"`
	N        int    `json:"n"`
	SMTarget int    `json:"sm_target,omitempty"`
	native.GEMMResult
}

// ComputeMeasured is a compute calibration's raw record.
type ComputeMeasured struct {
	GPU    string    `json:"gpu"`
	Driver string    `json:"driver"`
	CUDA   string    `json:"cuda"`
	SMs    int       `json:"sms"`
	Host   string    `json:"host"`
	GEMMs  []GEMMRow `json:"gemms"`
	// Beside holds GEMMs timed alone and beside a layer (see BesideRow).
	Beside []BesideRow `json:"beside,omitempty"`
}

// BesideRow is one GEMM measured alone and beside a communication layer
// on the same GPU, with the layer's phases alone and beside the GEMM, µs.
type BesideRow struct {
	Layer       string  `json:"layer"`
	CommSMs     int     `json:"comm_sms"`
	GEMM        GEMMRow `json:"gemm"`
	BesideUs    float64 `json:"gemm_beside_us"`
	BesideCalls int64   `json:"gemm_beside_calls"`
	DispatchUs  float64 `json:"dispatch_us"`
	CombineUs   float64 `json:"combine_us"`
	DispatchBy  float64 `json:"dispatch_beside_us"`
	CombineBy   float64 `json:"combine_beside_us"`
}

// ComputeOptions are the expert shape measured: the model's hidden size
// and expert intermediate size, and the sweep's extent.
type ComputeOptions struct {
	Hidden, Intermediate int
	Quick                bool
}

// SweepTokens are the tokens per expert the sweep times: powers of two
// from 1 to 4,096, and sizes between them that check the fit away from
// the powers of two a tile size divides.
func SweepTokens(quick bool) []int {
	if quick {
		return []int{1, 64, 4096}
	}
	return []int{1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 96, 128, 200, 256, 384, 512, 768, 1024, 1536, 2048, 3000, 4096}
}

// GEMMRows are the GEMMs a compute calibration times: for FP8 and BF16,
// the up and down projections of 1 to 32 experts (the local experts of
// DeepSeek-V3 from EP256 to EP8) at every swept token count, and the
// activation.
func GEMMRows(o ComputeOptions) []GEMMRow {
	groups := []int{1, 2, 4, 8, 16, 32}
	if o.Quick {
		groups = []int{1, 4}
	}
	var rows []GEMMRow
	for _, dt := range []string{"fp8", "bf16"} {
		for _, g := range groups {
			for _, m := range SweepTokens(o.Quick) {
				rows = append(rows,
					GEMMRow{Op: "up", DType: dt, Groups: g, Tokens: m, K: o.Hidden, N: 2 * o.Intermediate},
					GEMMRow{Op: "down", DType: dt, Groups: g, Tokens: m, K: o.Intermediate, N: o.Hidden})
			}
		}
	}
	for _, m := range SweepTokens(o.Quick) {
		rows = append(rows, GEMMRow{Op: "act", DType: "bf16", Groups: 4, Tokens: m, N: o.Intermediate})
	}
	return rows
}

// Config is the library's form of the row.
func (r GEMMRow) Config() native.GEMMConfig {
	op := native.OpMatmul
	if r.Op == "act" {
		op = native.OpActivation
	}
	return native.GEMMConfig{Op: op, FP8: r.DType == "fp8", Groups: r.Groups, Tokens: r.Tokens, K: r.K, N: r.N,
		SMTarget: r.SMTarget, Warmup: 2, Reps: 10, Inner: 8}
}

// MeasureCompute times every row of GEMMRows(o) on r.
func MeasureCompute(r ComputeRunner, o ComputeOptions, progress func(string)) (ComputeMeasured, error) {
	dev := r.Device()
	m := ComputeMeasured{GPU: dev.Name, Driver: dev.Driver, CUDA: native.CUDAVersion(dev.CUDADriver), SMs: dev.SMs,
		Host: report.LocalHost().String()}
	rows := GEMMRows(o)
	progress(fmt.Sprintf("%s: %d expert GEMMs (hidden %d, intermediate %d)", dev.Name, len(rows), o.Hidden, o.Intermediate))
	for _, row := range rows {
		res, err := r.GEMM(row.Config())
		if err != nil {
			return m, fmt.Errorf("%s %s GEMM, %d experts × %d tokens: %w", row.DType, row.Op, row.Groups, row.Tokens, err)
		}
		row.GEMMResult = res
		m.GEMMs = append(m.GEMMs, row)
	}
	return m, nil
}
