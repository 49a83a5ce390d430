package backup

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadManifestErrors(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, dir string) string // returns the path to read
		code     string
		contains []string
	}{
		{
			name:     "missing directory",
			setup:    func(t *testing.T, dir string) string { return filepath.Join(dir, "nope") },
			code:     dbpilot.ENOTFOUND,
			contains: []string{"does not exist"},
		},
		{
			name: "a file instead of a directory",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "file")
				writeTestFile(t, p, "x")
				return p
			},
			code:     dbpilot.EINVALID,
			contains: []string{"is not a directory"},
		},
		{
			name: "foreign directory",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, "notes.txt"), "hello")
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"not a dbpilot dump", "manifest.json"},
		},
		{
			name:     "empty directory",
			setup:    func(t *testing.T, dir string) string { return dir },
			code:     dbpilot.EINVALID,
			contains: []string{"not a dbpilot dump"},
		},
		{
			name: "incomplete marker without manifest",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, IncompleteFile), "dump failed 2024-01-01T00:00:00Z: disk full\nsecond line\n")
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"incomplete", "dump failed 2024-01-01T00:00:00Z: disk full", "dump again"},
		},
		{
			name: "newer format",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), `{"format": 2, "tool": "dbpilot 9"}`)
				return dir
			},
			code:     dbpilot.EUNSUPPORTED,
			contains: []string{"manifest format 2", "newer", "(1)"},
		},
		{
			name: "format 0",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), `{"format": 0}`)
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"invalid format 0"},
		},
		{
			name: "negative format",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), `{"format": -1}`)
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"invalid format -1"},
		},
		{
			name: "no format field",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), `{"tool": "x"}`)
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"not a dbpilot manifest"},
		},
		{
			name: "not JSON",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), "format: 1\n")
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"not a dbpilot manifest"},
		},
		{
			name: "truncated JSON",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), `{"format": 1, "tables": [`)
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"not a dbpilot manifest"},
		},
		{
			name: "format right but a field of the wrong type",
			setup: func(t *testing.T, dir string) string {
				writeTestFile(t, filepath.Join(dir, ManifestFile), `{"format": 1, "tables": "x"}`)
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"parse manifest"},
		},
		{
			name: "manifest is a directory",
			setup: func(t *testing.T, dir string) string {
				if err := os.Mkdir(filepath.Join(dir, ManifestFile), 0o700); err != nil {
					t.Fatal(err)
				}
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"read manifest"},
		},
		{
			name: "manifest plus incomplete marker",
			setup: func(t *testing.T, dir string) string {
				if err := writeManifest(dir, &Manifest{Format: FormatVersion}); err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, filepath.Join(dir, IncompleteFile), "dump started\n")
				return dir
			},
			code:     dbpilot.EINVALID,
			contains: []string{"marked incomplete", IncompleteFile},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.setup(t, t.TempDir())
			m, err := ReadManifest(path)
			if err == nil {
				t.Fatalf("ReadManifest = %+v, want an error", m)
			}
			if m != nil {
				t.Errorf("ReadManifest returned a manifest with its error")
			}
			if code := dbpilot.ErrorCode(err); code != tc.code {
				t.Errorf("code = %q, want %q (%v)", code, tc.code, err)
			}
			msg := err.Error()
			for _, s := range tc.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q is not one line", msg)
			}
		})
	}
}

func sampleManifest() *Manifest {
	start := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	return &Manifest{
		Format: FormatVersion,
		Tool:   "dbpilot test",
		Server: Server{Address: "127.0.0.1:3306", Flavor: dbpilot.FlavorMariaDB,
			Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6, Raw: "10.11.6-MariaDB-log"}, ServerID: 4294967295, Hostname: "h"},
		Started:  start,
		Finished: start.Add(90 * time.Second),
		Lock:     Lock{Kind: "BACKUP STAGE BLOCK_COMMIT", Held: 1500 * time.Microsecond, Waited: 3 * time.Millisecond},
		Position: Position{GTID: "0-1-100,1-2-5", GTIDBinlogPos: "0-1-100", GTIDSlavePos: "1-2-5", GTIDCurrentPos: "0-1-100",
			BinlogFile: "mysql-bin.000003", BinlogPos: 1 << 40},
		Compression: "zstd",
		Options: DumpRecord{Threads: 4, ChunkRows: 1000, Databases: []string{"app"}, Include: []string{"app.*"},
			Exclude: []string{"app.log"}, Where: map[string]string{"app.t": "id > 5"}, Users: true},
		Databases: []Database{{Name: "app", SchemaFile: "schema/app.sql", Routines: "schema/app.routines.sql",
			RoutineNames: []string{"PROCEDURE p"}, ViewNames: []string{"v"}, Views: "schema/app.views.sql"}},
		Tables: []*Table{{
			DB: "app", Name: "t.x", SchemaFile: "schema/app.t@2ex.sql", Engine: "InnoDB",
			Columns: []Column{{Name: "id", Type: "int(11)"}, {Name: "b", Type: "bit(1)", Select: "CAST(`b` AS UNSIGNED)", Load: "CAST(@v AS UNSIGNED)"}},
			Key:     "PRIMARY", KeyColumns: []string{"id"}, Where: "id > 5",
			Chunks: []*Chunk{
				{File: "data/app.t@2ex.00001.tsv.zst", Where: "`id` < 100 AND id > 5", Rows: 94, Bytes: 1000, FileSize: 400, FileCRC: 0xdeadbeef, Sum: RowSum{Xor: 0xffffffff, Sum: 1 << 40}},
				{File: "data/app.t@2ex.00002.tsv.zst", Where: "`id` >= 100 AND id > 5", Rows: 6, Bytes: 60, FileSize: 50, FileCRC: 1, Sum: RowSum{Xor: 2, Sum: 3}},
			},
			Rows: 100, Bytes: 1060,
		}},
		Users:    "schema/users.sql",
		Warnings: []string{"app.m uses the non-transactional engine MyISAM"},
		Totals:   TotalsEntry{Tables: 1, Chunks: 2, Rows: 100, Bytes: 1060, Files: 450},
	}
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := sampleManifest()
	if err := writeManifest(dir, want); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile+".tmp")); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got, want)
	}
	// Overwriting keeps it readable.
	want.Tool = "dbpilot test 2"
	if err := writeManifest(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadManifest(dir); err != nil || got.Tool != "dbpilot test 2" {
		t.Errorf("after rewrite: %v, %v", got, err)
	}
	// The format field is where ReadManifest looks for it.
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"format": 1,`) || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("manifest text unexpected:\n%s", b)
	}
}

func TestWriteManifestErrors(t *testing.T) {
	err := writeManifest(filepath.Join(t.TempDir(), "missing", "dir"), &Manifest{Format: 1})
	if err == nil || !strings.Contains(err.Error(), "backup: write") {
		t.Errorf("writeManifest into a missing directory: %v", err)
	}
}

func TestTableNames(t *testing.T) {
	tb := &Table{DB: "a`b", Name: "t.x"}
	if got := tb.QualifiedName(); got != "`a``b`.`t.x`" {
		t.Errorf("QualifiedName = %q", got)
	}
	if got := tb.String(); got != "a`b.t.x" {
		t.Errorf("String = %q", got)
	}
	for in, want := range map[string]string{"": "", "a": "a", "a\nb\nc": "a", "\nb": ""} {
		if got := firstLine(in); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}
