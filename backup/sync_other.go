//go:build !linux

package backup

import (
	"fmt"
	"os"
	"path/filepath"
)

// syncAll makes every file of the dump in dir durable, one fsync each.
func syncAll(dir string, tables []*Table) error {
	for _, t := range tables {
		for _, c := range t.Chunks {
			f, err := os.OpenFile(filepath.Join(dir, c.File), os.O_RDWR, 0)
			if err != nil {
				return fmt.Errorf("backup: sync %s: %w", c.File, err)
			}
			err = f.Sync()
			f.Close()
			if err != nil {
				return fmt.Errorf("backup: sync %s: %w", c.File, err)
			}
		}
	}
	for _, sub := range []string{schemaDir, dataDir, "."} {
		if err := syncDir(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	return nil
}
