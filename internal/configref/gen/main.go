// Command gen writes docs/config-reference.md (run by `go generate ./daemon`).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dbpilot/dbpilot/internal/configref"
)

func main() {
	src := flag.String("src", ".", "the daemon package's source directory")
	out := flag.String("o", "../docs/config-reference.md", "the file to write")
	flag.Parse()
	b, err := configref.Generate(*src)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "configref:", err)
		os.Exit(1)
	}
}
