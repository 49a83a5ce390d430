package testutil

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the one -update flag of every package's golden tests.
var update = flag.Bool("update", false, "rewrite golden files under testdata/ instead of comparing with them")

// Golden compares got with the golden file at path, or with -update
// (go test ./pkg -update) writes it, creating its directory. A nil got means
// the file must not exist (-update removes it).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if got == nil {
		if *update {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		} else if _, err := os.Stat(path); err == nil {
			t.Errorf("%s exists but the test produced nothing for it (run go test -update)", path)
		}
		return
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }
