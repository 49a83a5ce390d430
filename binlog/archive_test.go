package binlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// copyArchive copies testdata/archive (recorded from a sandbox, see
// testdata/README.md) into a temporary directory.
func copyArchive(t *testing.T) string {
	t.Helper()
	src := filepath.Join("testdata", "archive")
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestVerifyRecorded(t *testing.T) {
	dir := copyArchive(t)
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("problems: %+v", rep.Problems)
	}
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 || !files[4].Partial {
		t.Fatalf("files: %+v", files)
	}
	for i := 1; i < len(files); i++ {
		if files[i].GTIDStart != files[i-1].GTIDEnd {
			t.Errorf("%s starts at %s, %s ended at %s", files[i].File, files[i].GTIDStart, files[i-1].File, files[i-1].GTIDEnd)
		}
	}
	if !strings.Contains(files[4].GTIDEnd, "1-") || rep.Position != files[4].GTIDEnd {
		t.Errorf("position %s, partial ends at %s: want both domains", rep.Position, files[4].GTIDEnd)
	}
}

func problemOf(t *testing.T, dir, kind, file string) Problem {
	t.Helper()
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.Kind == kind && p.File == file {
			return p
		}
	}
	t.Fatalf("no %s problem for %s in %+v", kind, file, rep.Problems)
	return Problem{}
}

func TestVerifyDamage(t *testing.T) {
	idx, err := ReadIndex(filepath.Join("testdata", "archive"))
	if err != nil || len(idx) < 4 {
		t.Fatalf("index: %v, %d entries", err, len(idx))
	}
	e := idx[2]
	cases := []struct {
		name, kind string
		damage     func(dir string)
	}{
		{"corrupt zst", "checksum", func(dir string) {
			p := filepath.Join(dir, e.File)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0x55
			os.WriteFile(p, b, 0o600)
		}},
		{"truncated zst", "checksum", func(dir string) {
			p := filepath.Join(dir, e.File)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-10], 0o600)
		}},
		{"missing middle file", "missing", func(dir string) { os.Remove(filepath.Join(dir, e.File)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyArchive(t)
			c.damage(dir)
			p := problemOf(t, dir, c.kind, e.File)
			if len(p.Gaps) != 2 || !strings.Contains(p.Message, e.File) {
				t.Fatalf("problem does not name the file and the gap in both domains: %+v", p)
			}
			for _, g := range strings.Split(e.GTIDEnd, ",") {
				if !strings.Contains(p.Message, "through "+g) {
					t.Fatalf("problem does not name GTID %s: %s", g, p.Message)
				}
			}
		})
	}
	// A file and its index line gone: the gap shows between its neighbours.
	t.Run("unindexed gap", func(t *testing.T) {
		dir := copyArchive(t)
		os.Remove(filepath.Join(dir, e.File))
		data, _ := os.ReadFile(filepath.Join(dir, IndexName))
		lines := strings.SplitAfter(string(data), "\n")
		os.WriteFile(filepath.Join(dir, IndexName), []byte(strings.Join(append(lines[:2:2], lines[3:]...), "")), 0o600)
		p := problemOf(t, dir, "gap", idx[3].File)
		if !strings.Contains(p.Message, idx[1].File) || len(p.Gaps) == 0 {
			t.Fatalf("gap problem: %+v", p)
		}
		t.Log(p.Message)
	})
}

func TestIndexTornLine(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "archive", IndexName))
	if err != nil {
		t.Fatal(err)
	}
	torn := append(bytes.Clone(data), []byte(`{"name":"binlog.00`)...)
	got, err := parseIndex(torn)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := parseIndex(data)
	if len(got) != len(want) {
		t.Fatalf("torn index: %d entries, want %d", len(got), len(want))
	}
	if _, err := parseIndex([]byte("{bad\n" + string(data))); err == nil {
		t.Fatal("a bad line inside the index is accepted")
	}
}

// TestWriterRecover opens the recorded archive for writing after damage a
// crash leaves: a torn event, a transaction begun and not ended.
func TestWriterRecover(t *testing.T) {
	parts, _ := partialFiles(filepath.Join("testdata", "archive"))
	orig, err := os.ReadFile(filepath.Join("testdata", "archive", parts[0]))
	if err != nil {
		t.Fatal(err)
	}
	full, err := scanReader(bytes.NewReader(orig), nil, FlavorMariaDB)
	if err != nil || full.err != nil {
		t.Fatalf("scan: %v %v", err, full.err)
	}
	// The offset of the last transaction's GTID event.
	var lastGTID int64
	ReadEvents(bytes.NewReader(orig), func(off int64, e Event) error {
		if e.Type == typeMariaGTID {
			lastGTID = off
		}
		return nil
	})
	cases := []struct {
		name    string
		content []byte
		size    int64
	}{
		{"intact", orig, int64(len(orig))},
		{"torn event", append(bytes.Clone(orig), orig[4:20]...), int64(len(orig))},
		{"open transaction", orig[:len(orig)-10], lastGTID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyArchive(t)
			p := filepath.Join(dir, parts[0])
			os.WriteFile(p, c.content, 0o600)
			w, err := openWriter(dir, FlavorMariaDB, newPosition(FlavorMariaDB), "127.0.0.1:3306", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer w.close()
			if st, _ := os.Stat(p); st.Size() != c.size {
				t.Fatalf("partial file cut to %d bytes, want %d", st.Size(), c.size)
			}
			if c.size == int64(len(orig)) && w.position().String() != full.end.String() {
				t.Fatalf("position %s, want %s", w.position(), full.end)
			}
			if c.size < int64(len(orig)) && w.position().equal(full.end) {
				t.Fatalf("position %s includes the cut transaction", w.position())
			}
			// A second writer on the same directory is refused.
			if _, err := openWriter(dir, FlavorMariaDB, newPosition(FlavorMariaDB), "127.0.0.1:3306", 1); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT {
				t.Fatalf("second writer: %v", err)
			}
		})
	}
}

func TestCompareNames(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"binlog.000009", "binlog.000010", -1},
		{"binlog.999999", "binlog.1000000", -1},
		{"binlog.000010", "binlog.000010", 0},
		{"mariadb-bin.000002", "mariadb-bin.000001", 1},
	} {
		if got := compareNames(c.a, c.b); got != c.want {
			t.Errorf("compareNames(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
