module moebench

go 1.26

require (
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/montanaflynn/stats v0.14.0 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
