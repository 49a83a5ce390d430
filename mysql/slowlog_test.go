package mysql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
)

// parseAll returns every entry of a slow log.
func parseAll(t testing.TB, data []byte) []*mysql.SlowEntry {
	t.Helper()
	p := mysql.NewSlowLogParser(bytes.NewReader(data))
	var out []*mysql.SlowEntry
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			if p.Offset() != int64(len(data)) {
				t.Fatalf("offset %d at the end of %d bytes", p.Offset(), len(data))
			}
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

// goldenEntry is a SlowEntry as the golden files show it: times in UTC,
// durations in microseconds.
type goldenEntry struct {
	Time            string `json:"time"`
	User            string `json:"user"`
	Host            string `json:"host"`
	ThreadID        uint64 `json:"thread_id"`
	Schema          string `json:"schema"`
	QueryUS         int64  `json:"query_us"`
	LockUS          int64  `json:"lock_us"`
	RowsSent        uint64 `json:"rows_sent"`
	RowsExamined    uint64 `json:"rows_examined"`
	RowsAffected    uint64 `json:"rows_affected"`
	Errno           uint64 `json:"errno,omitempty"`
	NoIndexUsed     bool   `json:"no_index_used,omitempty"`
	TmpDiskTables   uint64 `json:"tmp_disk_tables,omitempty"`
	SortMergePasses uint64 `json:"sort_merge_passes,omitempty"`
	Text            string `json:"text"`
	Fingerprint     string `json:"fingerprint"`
}

// The recorded and written logs of testdata/slowlog parse to their golden
// entries, and reading any prefix as a tail, then the rest, gives the same
// entries (a log read while the server writes it).
func TestParseSlowLogRecorded(t *testing.T) {
	files, _ := filepath.Glob("testdata/slowlog/*.log")
	if len(files) < 3 {
		t.Fatalf("recorded slow logs: %v", files)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			entries := parseAll(t, data)
			var out []goldenEntry
			for _, e := range entries {
				g := goldenEntry{
					User: e.User, Host: e.Host, ThreadID: e.ThreadID, Schema: e.Schema,
					QueryUS: e.QueryTime.Microseconds(), LockUS: e.LockTime.Microseconds(),
					RowsSent: e.RowsSent, RowsExamined: e.RowsExamined, RowsAffected: e.RowsAffected, Errno: e.Errno,
					NoIndexUsed: e.NoIndexUsed, TmpDiskTables: e.TmpDiskTables, SortMergePasses: e.SortMergePasses,
					Text: e.Text, Fingerprint: mysql.Fingerprint(e.Text),
				}
				if !e.Time.IsZero() {
					g.Time = e.Time.UTC().Format(time.RFC3339Nano)
				}
				if e.Text == "" || e.User == "" || e.Time.IsZero() {
					t.Errorf("entry without text, user or time: %+v", g)
				}
				out = append(out, g)
			}
			js, _ := json.MarshalIndent(out, "", "  ")
			testutil.Golden(t, strings.TrimSuffix(path, ".log")+".golden.json", append(js, '\n'))

			for cut := 0; cut <= len(data); cut++ {
				p := mysql.NewSlowLogParser(bytes.NewReader(data[:cut]))
				p.Tail = true
				n := 0
				for {
					e, err := p.Next()
					if err != nil {
						break
					}
					if n >= len(entries) || e.Text != entries[n].Text {
						t.Fatalf("cut at %d: entry %d = %q", cut, n, e.Text)
					}
					n++
				}
				rest := parseAll(t, data[p.Offset():])
				if n+len(rest) != len(entries) {
					t.Fatalf("cut at %d, offset %d: %d + %d entries, want %d", cut, p.Offset(), n, len(rest), len(entries))
				}
			}
		})
	}
}

// A statement longer than MaxStatement is kept cut, and the parser goes on.
func TestParseSlowLogLongStatement(t *testing.T) {
	long := "SELECT '" + strings.Repeat("é", mysql.MaxStatement) + "'"
	log := "# User@Host: a[a] @ localhost []\n# Query_time: 1.5  Lock_time: 0  Rows_sent: 1  Rows_examined: 2\nSET timestamp=1;\n" +
		long + ";\n# User@Host: b[b] @  [10.0.0.1]\n# Query_time: 0.25 Lock_time: 0 Rows_sent: 0 Rows_examined: 0\nSELECT 2;\n"
	got := parseAll(t, []byte(log))
	if len(got) != 2 || !got[0].Truncated || len(got[0].Text) > mysql.MaxStatement || !strings.HasPrefix(got[0].Text, "SELECT 'é") ||
		got[0].QueryTime != 1500*time.Millisecond || got[1].Text != "SELECT 2" || got[1].Host != "10.0.0.1" || got[1].QueryTime != 250*time.Millisecond {
		for _, e := range got {
			t.Errorf("entry: %+v", *e)
		}
		t.Fatalf("entries = %d", len(got))
	}
}

func FuzzParseSlowLog(f *testing.F) {
	for _, path := range []string{"testdata/slowlog/mariadb-10.11-flush.log", "testdata/slowlog/mysql-8.0-handwritten.log"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 2000)], 100)
	}
	f.Add([]byte("# Time: 261126  6:08:15\n# User@Host: x\nSELECT 1;\n# Time:\n"), 3)
	f.Add([]byte("# Query_time: Lock_time:\nuse ;\nSET timestamp=;\n;"), 0)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		all := parseAll(t, data)
		for _, e := range all {
			if len(e.Text) > mysql.MaxStatement || e.QueryTime < 0 {
				t.Fatalf("entry %+v", e)
			}
		}
		if cut < 0 || cut > len(data) {
			return
		}
		// Read as a tail up to cut, then the rest: the same entries.
		p := mysql.NewSlowLogParser(bytes.NewReader(data[:cut]))
		p.Tail = true
		n := 0
		for {
			if _, err := p.Next(); err != nil {
				break
			}
			n++
		}
		if p.Offset() < 0 || p.Offset() > int64(cut) {
			t.Fatalf("offset %d outside 0..%d", p.Offset(), cut)
		}
		if rest := parseAll(t, data[p.Offset():]); n+len(rest) < len(all) {
			t.Fatalf("tail %d + rest %d < %d entries", n, len(rest), len(all))
		}
	})
}

// slowEntry is a MariaDB slow log entry.
func slowEntry(schema, stmt string, queryTime string, examined int) string {
	return fmt.Sprintf("# User@Host: app[app] @ localhost []\n# Thread_id: 9  Schema: %s  QC_hit: No\n"+
		"# Query_time: %s  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: %d\n# Rows_affected: 0  Bytes_sent: 60\n"+
		"SET timestamp=1795673299;\n%s;\n", schema, queryTime, examined, stmt)
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// digestOf returns the snapshot's digest of fingerprint fp in schema.
func digestOf(s *mysql.DigestSnapshot, schema, fp string) *mysql.Digest {
	for i := range s.Digests {
		if s.Digests[i].Schema == schema && s.Digests[i].Text == fp {
			return &s.Digests[i]
		}
	}
	return nil
}

// The file reader starts at the end, counts what is appended, cumulatively;
// holds back a half-written entry; reads a rotated or truncated file from
// its start; continues a read cut by MaxBytesPerRead; puts statements
// beyond MaxDigests in the overflow row.
func TestSlowLogReaderFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "slow.log")
	appendFile(t, path, slowEntry("shop", "SELECT * FROM t WHERE id = 0", "0.5", 1))
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	src := mysql.StatementSource{Source: dbpilot.QuerySourceSlowLogFile, Path: path}
	r, err := mysql.NewSlowLogReader(key, src, mysql.SlowLogOptions{MaxDigests: 3, MaxBytesPerRead: 1000})
	if err != nil {
		t.Fatal(err)
	}
	s0, err := r.Snapshot(ctx, nil)
	if err != nil || len(s0.Digests) != 0 || s0.Source != dbpilot.QuerySourceSlowLogFile || s0.SourceDetail != path || !s0.Enabled {
		t.Fatalf("first snapshot = %+v, %v; want empty (starts at the end)", s0, err)
	}
	const fp = "select * from t where id = ?"
	for i := 1; i <= 5; i++ {
		appendFile(t, path, slowEntry("shop", fmt.Sprintf("SELECT * FROM t WHERE id = %d", i), "0.001000", 10))
	}
	// Half an entry: not counted yet.
	half := slowEntry("shop", "SELECT * FROM t WHERE id = 6", "0.002000", 10)
	appendFile(t, path, half[:len(half)-3])
	var s1 *mysql.DigestSnapshot
	for range 3 { // 5 entries of ~210 bytes: two reads of 1000 bytes
		if s1, err = r.Snapshot(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	g := digestOf(s1, "shop", fp)
	if g == nil || g.Count != 5 || g.TotalWait != 5*1e9 || g.MaxWait != 1e9 || g.RowsExamined != 50 || g.RowsSent != 5 ||
		g.Digest != mysql.FingerprintDigest(fp) || g.Sample != "SELECT * FROM t WHERE id = ?" || g.FirstSeen == "" {
		t.Fatalf("after 5 statements: %+v", s1.Digests)
	}
	appendFile(t, path, half[len(half)-3:])
	s2, err := r.Snapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := mysql.DigestDeltas(s1, s2)
	if len(d) != 1 || d[0].Count != 1 || d[0].TotalWait != 2e9 || d[0].MaxWait != 2e9 {
		t.Fatalf("delta after the completed entry = %+v", d)
	}

	// Rotation: the file renamed away, a new one in its place.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, slowEntry("shop", "SELECT * FROM t WHERE id = 7", "0.003", 1))
	s3, err := r.Snapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := digestOf(s3, "shop", fp); g == nil || g.Count != 7 {
		t.Fatalf("after rotation: %+v", g)
	}
	// Truncation: the same file, shorter than the offset.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, slowEntry("shop", "SELECT * FROM t WHERE id = 8", "0.003", 1))
	s4, err := r.Snapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := digestOf(s4, "shop", fp); g == nil || g.Count != 8 {
		t.Fatalf("after truncation: %+v", g)
	}

	// MaxDigests 3: a fourth fingerprint (other schemas count apart) goes
	// to the overflow row.
	appendFile(t, path, slowEntry("", "SELECT * FROM t WHERE id = 9", "0.001", 1)+
		slowEntry("shop", "SELECT a FROM u", "0.001", 1)+slowEntry("shop", "SELECT b FROM u", "0.001", 1)+
		slowEntry("shop", "CREATE USER 'x'@'%' IDENTIFIED BY 'secret'", "0.001", 0))
	s5, err := r.Snapshot(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var overflow *mysql.Digest
	for i := range s5.Digests {
		if s5.Digests[i].Digest == "" {
			overflow = &s5.Digests[i]
		}
		if strings.Contains(s5.Digests[i].Sample, "secret") {
			t.Errorf("password in a sample: %+v", s5.Digests[i])
		}
	}
	if len(s5.Digests) != 4 || overflow == nil || overflow.Count != 2 || s5.Lost != 2 || digestOf(s5, "", fp) == nil {
		t.Fatalf("overflow: %+v", s5.Digests)
	}
}

// FromStart counts what the file holds at the first snapshot; Examples
// keeps literals (not passwords).
func TestSlowLogReaderFromStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.log")
	appendFile(t, path, slowEntry("shop", "SELECT * FROM t WHERE name = 'bob'", "0.5", 1)+
		slowEntry("", "SET PASSWORD FOR x = PASSWORD('secret')", "0.1", 0))
	src := mysql.StatementSource{Source: dbpilot.QuerySourceSlowLogFile, Path: path}
	r, err := mysql.NewSlowLogReader(dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}, src, mysql.SlowLogOptions{FromStart: true, Examples: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Snapshot(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := digestOf(s, "shop", "select * from t where name = ?")
	if len(s.Digests) != 2 || g == nil || g.Sample != "SELECT * FROM t WHERE name = 'bob'" || g.Count != 1 {
		t.Fatalf("digests = %+v", s.Digests)
	}
	for _, d := range s.Digests {
		if strings.Contains(d.Sample, "secret") {
			t.Errorf("password in a sample: %+v", d)
		}
	}
}

func TestNewStatementReaderNone(t *testing.T) {
	src := mysql.StatementSource{Source: dbpilot.QuerySourceNone, Reason: "performance_schema is off on x:1 and so is the slow query log"}
	if _, err := mysql.NewStatementReader(dbpilot.InstanceKey{Host: "x", Port: 1}, src, mysql.SlowLogOptions{}); dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED ||
		err.Error() != src.Reason {
		t.Errorf("NewStatementReader(none) = %v", err)
	}
	if _, err := mysql.NewSlowLogReader(dbpilot.InstanceKey{Host: "x", Port: 1}, mysql.StatementSource{Source: dbpilot.QuerySourceSlowLogFile}, mysql.SlowLogOptions{}); err == nil {
		t.Error("a file source without path is accepted")
	}
}
