// Command moebench shows what the transport under expert-parallel MoE
// communication costs. See README.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "moebench:", message(err))
		os.Exit(exitCode(err))
	}
}
