package backup

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestDirectFile writes files of awkward sizes in pieces of random length
// through openFile (O_DIRECT on the test's file system, buffered where it
// is refused, as on tmpfs) and reads them back.
func TestDirectFile(t *testing.T) {
	dirs := []string{t.TempDir()}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "dbpdirect")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs = append(dirs, d)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dir := range dirs {
		for i, size := range []int{0, 1, 4095, 4096, 4097, directBuf - 1, directBuf, directBuf + 123, 3*directBuf + 5} {
			want := make([]byte, size)
			for j := range want {
				want[j] = byte(rng.IntN(256))
			}
			path := filepath.Join(dir, "f"+string(rune('a'+i)))
			f, err := openFile(path)
			if err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			for p := want; len(p) > 0; {
				n := min(len(p), 1+rng.IntN(300_000))
				if m, err := f.Write(p[:n]); err != nil || m != n {
					t.Fatalf("write %s: %d, %v", path, m, err)
				}
				p = p[n:]
			}
			startWriteback(f)
			if err := f.Close(); err != nil {
				t.Fatalf("close %s: %v", path, err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: read back %d bytes, wrote %d (equal prefix? %v)", path, len(got), len(want), bytes.HasPrefix(want, got))
			}
			if _, isDirect := f.(*directFile); dir == dirs[0] && !isDirect {
				t.Logf("%s: the file system refused O_DIRECT; tested the buffered path", dir)
			}
		}
	}
}

// TestDirectFileWriteError: a failing write is returned by Write or by
// Close, never lost.
func TestDirectFileWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(path) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	d := &directFile{f: ro, buf: alignedBuffer(directBuf), direct: true}
	data := make([]byte, 3*directBuf+10)
	_, werr := d.Write(data)
	cerr := d.Close()
	if werr == nil && cerr == nil {
		t.Fatal("writes to a read-only file reported no error")
	}
	t.Logf("write: %v; close: %v", werr, cerr)
}
