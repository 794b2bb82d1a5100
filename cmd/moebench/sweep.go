package main

import "io"

const sweepExamples = `  moebench sweep --ranks 8,16,32 --transport mini-gda
  moebench sweep --tokens 32,64,128 --preset deepep-v1,nvshmem-ibgda --format csv
  moebench sweep --qps-per-peer 1,4,16 --ranks 16,64 --transport mini-gda
  moebench sweep --background none,bulk:64:shared,bulk:64:reserved --transport mini-gda
  moebench sweep --set nic.msg_rate_mps=130,260 --set gpu.sm_clock_mhz=1500,1970
  moebench sweep --mode normal --ranks 16,32,64 --tokens 4096 --profile p-roce --format csv
  moebench sweep --ranks 64 --transport mini-gda,mini-proxy --loss 0,1e-5,1e-4 --seeds 20 --plot loss.svg
`

// runSweep runs the layer over the cross product of every knob given a
// list, with a progress bar on stderr when it takes more than a second.
func runSweep(args []string, stdout, stderr io.Writer) error {
	return layerCommand("sweep", args, stdout, stderr)
}
