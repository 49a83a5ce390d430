package binlog

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pruning removes the oldest files, keeps the newest finished one, and
// leaves an archive that verifies and lists from its new first file.
func TestPrune(t *testing.T) {
	dir := copyArchive(t)
	idx, err := ReadIndex(dir)
	if err != nil || len(idx) < 3 {
		t.Fatalf("recorded index: %d entries, %v", len(idx), err)
	}
	if n, err := Prune(dir, idx[0].LastTime); err != nil || n != 0 {
		t.Fatalf("nothing older: removed %d, %v", n, err)
	}
	// Everything is old: all but the newest finished file go.
	n, err := Prune(dir, time.Now().Add(time.Hour))
	if err != nil || n != len(idx)-1 {
		t.Fatalf("removed %d, %v; want %d", n, err, len(idx)-1)
	}
	for _, e := range idx[:len(idx)-1] {
		if _, err := os.Stat(filepath.Join(dir, e.File)); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", e.File, err)
		}
	}
	kept, err := ReadIndex(dir)
	if err != nil || len(kept) != 1 || kept[0].Name != idx[len(idx)-1].Name {
		t.Fatalf("index after prune: %+v, %v", kept, err)
	}
	rep, err := Verify(dir)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after prune: %+v, %v", rep, err)
	}
	files, err := List(dir)
	if err != nil || len(files) == 0 || files[0].Name != kept[0].Name {
		t.Fatalf("list after prune: %+v, %v", files, err)
	}
	// Pruning again removes nothing more.
	if n, err := Prune(dir, time.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("second prune: removed %d, %v", n, err)
	}
}
