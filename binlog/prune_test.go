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

// Files lists the finished files in index order, then the partial one; a
// pruned archive starts at its oldest kept file, and a partial left beside
// its indexed .zst is not listed.
func TestFiles(t *testing.T) {
	dir := copyArchive(t)
	idx, err := ReadIndex(dir)
	if err != nil || len(idx) < 3 {
		t.Fatalf("recorded index: %d entries, %v", len(idx), err)
	}
	files, err := Files(dir)
	if err != nil || len(files) != len(idx)+1 {
		t.Fatalf("files: %+v, %v", files, err)
	}
	for i, e := range idx {
		if f := files[i]; f.Name != e.Name || f.Path != filepath.Join(dir, e.File) || f.Partial || f.Index == nil || f.Index.SHA256 != e.SHA256 {
			t.Errorf("file %d: %+v, want %s", i, f, e.File)
		}
	}
	if last := files[len(files)-1]; !last.Partial || last.Index != nil || last.Name != "binlog.000005" {
		t.Errorf("partial: %+v", last)
	}
	// A crash between indexing a file and removing its partial.
	if err := os.WriteFile(filepath.Join(dir, idx[0].Name+PartialSuffix), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if files, _ := Files(dir); len(files) != len(idx)+1 {
		t.Errorf("the leftover partial is listed: %d files", len(files))
	}
	if _, err := Prune(dir, idx[1].LastTime.Add(time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	kept, _ := ReadIndex(dir)
	files, err = Files(dir)
	if err != nil || len(files) != len(kept)+1 || files[0].Name != kept[0].Name {
		t.Fatalf("files after prune: %+v, %v", files, err)
	}
}
