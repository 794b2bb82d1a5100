//go:build !cgo

package native

import (
	"fmt"
	"time"
)

// Lib is an opened native library. In a build without cgo it cannot be
// opened: Open always fails with ErrLibraryNotLoaded.
type Lib struct{}

var errNoCgo = fmt.Errorf("%w: this moebench was built without cgo (CGO_ENABLED=0); rebuild with cgo and build the library with `make native` on a CUDA host", ErrLibraryNotLoaded)

// Open always fails without cgo.
func Open(path string) (*Lib, error) { return nil, errNoCgo }

func (l *Lib) Close() error                              { return nil }
func (l *Lib) Path() string                              { return "" }
func (l *Lib) Device() DeviceInfo                        { return DeviceInfo{} }
func (l *Lib) ClockMHz(time.Duration) (float64, error)   { return 0, errNoCgo }
func (l *Lib) IssueWith(IssueConfig) (Stats, error)      { return Stats{}, errNoCgo }
func (l *Lib) Micro(int) (Micro, error)                  { return Micro{}, errNoCgo }
func (l *Lib) Rate(RateConfig) (float64, error)          { return 0, errNoCgo }
func (l *Lib) RateDetail(RateConfig) (RateResult, error) { return RateResult{}, errNoCgo }
func (l *Lib) Issue(string, DoorbellTarget, int, int) (Stats, error) {
	return Stats{}, errNoCgo
}
func (l *Lib) BuildWQEs(WQEParams, int, string, DoorbellTarget, []byte) (Posted, error) {
	return Posted{}, errNoCgo
}
func (l *Lib) Enqueue(string, int) (ProxyResult, error)    { return ProxyResult{}, errNoCgo }
func (l *Lib) HandoffRTT(string, int) (ProxyResult, error) { return ProxyResult{}, errNoCgo }
func (l *Lib) WorkerCapacity(CapacityConfig) (CapacityResult, error) {
	return CapacityResult{}, errNoCgo
}
func (l *Lib) KernelCost(KernelConfig) (KernelResult, error) { return KernelResult{}, errNoCgo }

func (l *Lib) DeviceCount() (int, error) { return 0, errNoCgo }
func (l *Lib) Layer(LayerConfig, LayerRouting) (LayerResult, error) {
	return LayerResult{}, errNoCgo
}

func (l *Lib) NCCLAllToAll(A2AConfig) (A2AResult, error) { return A2AResult{}, errNoCgo }
func (l *Lib) GEMM(GEMMConfig) (GEMMResult, error)       { return GEMMResult{}, errNoCgo }
func (l *Lib) GEMMBeside(GEMMConfig, LayerConfig, LayerRouting) (BesideResult, error) {
	return BesideResult{}, errNoCgo
}
