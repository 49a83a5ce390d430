// Package gen writes dbpilot's man pages from its cobra commands
// (cobra/doc): one page per command, dbpilot.1, dbpilot-serve.1, ...
// It is compiled into dbpilot only by the mandoc generator (see
// ../main.go): the released binary does not import it.
package gen

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// ManPages writes the man pages of root and every command below it into
// dir, their header naming version.
func ManPages(root *cobra.Command, dir, version string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	root.DisableAutoGenTag = true // no date: the same pages for the same commands
	h := &doc.GenManHeader{Title: "DBPILOT", Section: "1", Source: "dbpilot " + version, Manual: "dbpilot manual"}
	if err := doc.GenManTree(root, h, dir); err != nil {
		return fmt.Errorf("man pages into %s: %w", dir, err)
	}
	return nil
}
