// Command cuzk proves partitioned Groth16 jobs on GPUs and simulates lock designs.
package main

import (
	"fmt"
	"os"

	"github.com/cuzk/cuzk/cli"
)

func main() {
	if err := cli.App().Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "cuzk: %v\n", err)
		os.Exit(1)
	}
}
