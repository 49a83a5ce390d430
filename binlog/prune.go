package binlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// pruned is the PRUNED file: the archive's files before First were removed
// by retention. The index keeps their lines (it is only ever appended to,
// by the one writer); readers leave them out.
type pruned struct {
	First string    `json:"first"` // the name of the oldest file kept
	At    time.Time `json:"at"`
}

// afterPruned drops the entries before the PRUNED file's First.
func afterPruned(dir string, idx []IndexEntry) ([]IndexEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, PrunedName))
	if os.IsNotExist(err) {
		return idx, nil
	}
	if err != nil {
		return nil, err
	}
	var p pruned
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("binlog: %s: %v", filepath.Join(dir, PrunedName), err)
	}
	for i, e := range idx {
		if e.Name == p.First {
			return idx[i:], nil
		}
	}
	return nil, fmt.Errorf("binlog: %s names %s, which the index does not have", filepath.Join(dir, PrunedName), p.First)
}

// Prune removes the finished files whose last transaction is older than
// before, oldest first, and returns how many it removed. The newest
// finished file and the file being written are always kept, and so the
// archive stays continuous from its new oldest file. It may run while a
// Streamer writes the archive: the index is not rewritten; the PRUNED file,
// replaced atomically before any file is removed, tells readers where the
// archive now starts.
func Prune(dir string, before time.Time) (int, error) {
	idx, err := ReadIndex(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for n < len(idx)-1 && idx[n].LastTime.Before(before) {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	data, err := json.Marshal(pruned{First: idx[n].Name, At: time.Now().UTC()})
	if err != nil {
		return 0, err
	}
	tmp := filepath.Join(dir, PrunedName+".tmp")
	if err := writeSynced(tmp, data); err != nil {
		return 0, fmt.Errorf("binlog: prune %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, PrunedName)); err != nil {
		return 0, fmt.Errorf("binlog: prune %s: %w", dir, err)
	}
	if err := syncDir(dir); err != nil {
		return 0, fmt.Errorf("binlog: prune %s: %w", dir, err)
	}
	removed := 0
	for _, e := range idx[:n] {
		if err := os.Remove(filepath.Join(dir, e.File)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("binlog: prune %s: %w", e.File, err)
		}
		removed++
	}
	return removed, nil
}

// writeSynced writes data to a new file and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
