package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// syncAll makes every file of the dump in dir durable: an fsync per data
// file (four at a time; their writeback started when each was finished)
// and per directory. Only the dump's own files are synced, not the whole
// file system.
func syncAll(dir string, tables []*Table) error {
	files := make(chan string)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rel := range files {
				if err := fsyncFile(filepath.Join(dir, rel)); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, t := range tables {
		if t.SchemaFile != "" {
			files <- t.SchemaFile
		}
		for _, c := range t.Chunks {
			files <- c.File
		}
	}
	close(files)
	wg.Wait()
	if first != nil {
		return first
	}
	entries, err := os.ReadDir(filepath.Join(dir, schemaDir))
	if err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := fsyncFile(filepath.Join(dir, schemaDir, e.Name())); err != nil {
			return err
		}
	}
	for _, sub := range []string{schemaDir, dataDir, "."} {
		if err := syncDir(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	return nil
}

func fsyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("backup: sync %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("backup: sync %s: %w", path, err)
	}
	return nil
}
