package report

import "testing"

// A guest that cpuid describes as its whole host says how many CPUs it
// may use.
func TestHostString(t *testing.T) {
	for _, tc := range []struct {
		h    Host
		want string
	}{
		{Host{CPU: "Xeon", Cores: 16, Threads: 16, Usable: 16, OS: "linux", Arch: "amd64"}, "Xeon, 16 cores / 16 threads, linux/amd64"},
		{Host{CPU: "EPYC", Cores: 254, Threads: 254, Usable: 2, OS: "linux", Arch: "amd64"}, "EPYC, 254 cores / 254 threads (2 usable), linux/amd64"},
		{Host{CPU: "M2", Cores: 8, Threads: 8, MHz: 3500, OS: "darwin", Arch: "arm64"}, "M2, 8 cores / 8 threads, 3500 MHz, darwin/arm64"},
	} {
		if got := tc.h.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.h, got, tc.want)
		}
	}
}
