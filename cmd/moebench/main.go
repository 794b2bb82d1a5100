// Command moebench shows what the transport under expert-parallel MoE
// communication costs. See README.md.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"moebench/internal/report"
)

func main() {
	// SIGINT and SIGTERM stop at once: no temporary file stays behind and
	// an existing --out file is left as it was.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		report.RemoveTemps()
		name := map[os.Signal]string{os.Interrupt: "SIGINT", syscall.SIGTERM: "SIGTERM"}[s]
		clear := ""
		if report.IsTerminal(os.Stderr) {
			clear = "\r\033[K" // over a progress bar
		}
		fmt.Fprintf(os.Stderr, "%smoebench: interrupted by %s: stopped, temporary files removed, no output file written\n", clear, name)
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "moebench:", message(err))
		os.Exit(exitCode(err))
	}
}
