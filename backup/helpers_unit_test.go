package backup

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestLoadSQL(t *testing.T) {
	const format = ` CHARACTER SET binary FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n'`
	tests := []struct {
		name string
		t    *Table
		want string
	}{
		{
			name: "plain columns",
			t:    &Table{DB: "app", Name: "t", Columns: []Column{{Name: "id"}, {Name: "na`me"}}},
			want: "LOAD DATA LOCAL INFILE 'Reader::dbpilot-7' INTO TABLE `app`.`t`" + format + " (`id`, `na``me`)",
		},
		{
			name: "bit columns, and geometry as an older dump recorded it (WKB), go through user variables",
			t: &Table{DB: "a`b", Name: "t.x", Columns: []Column{
				{Name: "id"},
				{Name: "b", Select: "CAST(`b` AS UNSIGNED)", Load: "CAST(@v AS UNSIGNED)"},
				{Name: "name"},
				{Name: "g", Select: "ST_AsBinary(`g`)", Load: "ST_GeomFromWKB(@v)"},
				{Name: "j", Load: "CONVERT(@v USING utf8mb4)"},
			}},
			want: "LOAD DATA LOCAL INFILE 'Reader::dbpilot-7' INTO TABLE `a``b`.`t.x`" + format +
				" (`id`, @dbp_v1, `name`, @dbp_v3, @dbp_v4)" +
				" SET `b` = CAST(@dbp_v1 AS UNSIGNED), `g` = ST_GeomFromWKB(@dbp_v3), `j` = CONVERT(@dbp_v4 USING utf8mb4)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadSQL(tc.t, "dbpilot-7"); got != tc.want {
				t.Errorf("loadSQL:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	if !strings.Contains(loadSQL(&Table{DB: "d", Name: "t", Columns: []Column{{Name: "a"}}}, "it's"), `'Reader::it\'s'`) {
		t.Errorf("reader name not quoted")
	}
}

func TestChunkQueryAndChecksumSQL(t *testing.T) {
	cols := []Column{{Name: "id"}, {Name: "f", Select: "CONCAT(`f` + 0e0)"}}
	const sel = "SELECT /*!40001 SQL_NO_CACHE */ `id`, CONCAT(`f` + 0e0) FROM `app`.`t`"
	const row = "CRC32(CONCAT_WS('#', CAST(`id` AS BINARY), CAST(CONCAT(`f` + 0e0) AS BINARY), CONCAT(ISNULL(`id`), ISNULL(CONCAT(`f` + 0e0)))))"
	const sum = "SELECT COUNT(*), COALESCE(BIT_XOR(" + row + "), 0), COALESCE(SUM(" + row + "), 0) FROM `app`.`t`"
	tests := []struct {
		name        string
		key, tWhere string
		cWhere      string
		tail        string
	}{
		{"no key, whole table", "", "", "", ""},
		{"key, chunk condition", "PRIMARY", "", "`id` < 10", " FORCE INDEX (`PRIMARY`) WHERE `id` < 10"},
		{"key, chunk condition and --where", "u`k", "x = 1", "`id` < 10 AND x = 1", " FORCE INDEX (`u``k`) WHERE `id` < 10 AND x = 1"},
		{"key, only --where (one chunk)", "PRIMARY", "x = 1", "x = 1", " WHERE x = 1"},
		{"key, no condition", "PRIMARY", "", "", ""},
		{"no key, --where", "", "x = 1", "x = 1", " WHERE x = 1"},
		{"no key but a condition", "", "", "`id` < 10", " WHERE `id` < 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := &Table{DB: "app", Name: "t", Columns: cols, Key: tc.key, Where: tc.tWhere}
			c := &Chunk{Where: tc.cWhere}
			if got := chunkQuery(tb, c); got != sel+tc.tail {
				t.Errorf("chunkQuery:\n got %s\nwant %s", got, sel+tc.tail)
			}
			if got := checksumSQL(tb, c); got != sum+tc.tail {
				t.Errorf("checksumSQL:\n got %s\nwant %s", got, sum+tc.tail)
			}
		})
	}
}

func TestReplicaStartPosition(t *testing.T) {
	tests := []struct {
		binlog, slave string
		want          string
	}{
		{"", "", ""},
		{"0-1-5", "", "0-1-5"},
		{"", "1-2-3", "1-2-3"},
		{"0-1-100", "0-1-90", "0-1-100"},
		{"0-1-90", "0-2-100", "0-2-100"},   // applied as a replica without log_slave_updates
		{"0-1-100", "0-2-100", "0-1-100"},  // a tie keeps the binary log's
		{"0-1-100,0-2-90", "", "0-1-100"},  // one entry per domain
		{"0-1-100,0-2-190", "", "0-2-190"}, // whichever server wrote the latest
		{"0-1-100,1-1-50", "0-2-120,2-3-7", "0-2-120,1-1-50,2-3-7"},
		{"2-1-10,0-1-5", "1-1-1", "0-1-5,1-1-1,2-1-10"},
		{" 0-1-5,\n1-1-6 ", "", "0-1-5,1-1-6"},
		{"4294967295-4294967295-18446744073709551615", "", "4294967295-4294967295-18446744073709551615"},
	}
	for _, tc := range tests {
		got, err := replicaStartPosition(tc.binlog, tc.slave)
		if err != nil {
			t.Errorf("replicaStartPosition(%q, %q): %v", tc.binlog, tc.slave, err)
			continue
		}
		if got != tc.want {
			t.Errorf("replicaStartPosition(%q, %q) = %q, want %q", tc.binlog, tc.slave, got, tc.want)
		}
	}
	for _, tc := range []struct{ binlog, slave, contains string }{
		{"garbage", "", "parse gtid_binlog_pos"},
		{"0-1-5", "0-1", "parse gtid_slave_pos"},
		{"0-1-5,", "", "parse gtid_binlog_pos"},
	} {
		_, err := replicaStartPosition(tc.binlog, tc.slave)
		if err == nil {
			t.Errorf("replicaStartPosition(%q, %q) accepted it", tc.binlog, tc.slave)
			continue
		}
		if dbpilot.ErrorCode(err) != dbpilot.EINTERNAL || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("replicaStartPosition(%q, %q): %v (code %s), want EINTERNAL containing %q", tc.binlog, tc.slave, err, dbpilot.ErrorCode(err), tc.contains)
		}
	}
}

func TestDumpOptionsValidate(t *testing.T) {
	o := DumpOptions{Out: "/tmp/x"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Threads != 4 || o.ChunkRows != 100000 || o.Compress != "zstd" || o.LockWaitTimeout != 60*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	kept := DumpOptions{Out: "o", Threads: 64, ChunkRows: 1, Compress: "none", LockWaitTimeout: 5 * time.Second}
	if err := kept.Validate(); err != nil {
		t.Fatal(err)
	}
	if kept.Threads != 64 || kept.ChunkRows != 1 || kept.Compress != "none" || kept.LockWaitTimeout != 5*time.Second {
		t.Errorf("explicit values changed: %+v", kept)
	}
	neg := DumpOptions{Out: "o", LockWaitTimeout: -time.Second}
	if err := neg.Validate(); err != nil || neg.LockWaitTimeout != 60*time.Second {
		t.Errorf("negative lock wait: %v, %v", err, neg.LockWaitTimeout)
	}
	bad := []struct {
		o        DumpOptions
		contains string
	}{
		{DumpOptions{}, "--out"},
		{DumpOptions{Out: "o", Threads: 65}, "--threads 65"},
		{DumpOptions{Out: "o", Threads: -1}, "--threads -1"},
		{DumpOptions{Out: "o", ChunkRows: -5}, "--chunk-rows -5"},
		{DumpOptions{Out: "o", Compress: "gzip"}, `--compress "gzip"`},
		{DumpOptions{Out: "o", Filter: Filter{Include: []string{"["}}}, "bad pattern"},
		{DumpOptions{Out: "o", Filter: Filter{Databases: []string{""}}}, "empty database name"},
	}
	for _, tc := range bad {
		o := tc.o
		err := o.Validate()
		if err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", tc.o)
			continue
		}
		if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("Validate(%+v) = %v, want EINVALID containing %q", tc.o, err, tc.contains)
		}
	}
}

func TestRestoreOptionsValidate(t *testing.T) {
	o := RestoreOptions{Dir: "d"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Threads != 4 || o.NoBinlog {
		t.Errorf("defaults: %+v", o)
	}
	g := RestoreOptions{Dir: "d", SetGTIDPosition: true, Threads: 2}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if !g.NoBinlog || g.Threads != 2 {
		t.Errorf("SetGTIDPosition: NoBinlog = %v, Threads = %d", g.NoBinlog, g.Threads)
	}
	r := RestoreOptions{Dir: "d", Resume: true}
	if err := r.Validate(); err != nil {
		t.Errorf("Resume alone: %v", err)
	}
	x := RestoreOptions{Dir: "d", DropExisting: true, NoBinlog: true}
	if err := x.Validate(); err != nil || !x.NoBinlog {
		t.Errorf("DropExisting: %v %+v", err, x)
	}
	bad := []struct {
		o        RestoreOptions
		contains string
	}{
		{RestoreOptions{}, "dump directory"},
		{RestoreOptions{Dir: "d", Threads: 65}, "--threads 65"},
		{RestoreOptions{Dir: "d", Threads: -2}, "--threads -2"},
		{RestoreOptions{Dir: "d", Resume: true, DropExisting: true}, "--resume and --drop-existing"},
	}
	for _, tc := range bad {
		o := tc.o
		err := o.Validate()
		if err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", tc.o)
			continue
		}
		if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("Validate(%+v) = %v, want EINVALID containing %q", tc.o, err, tc.contains)
		}
	}
}

func selectTestManifest() *Manifest {
	return &Manifest{
		Databases: []Database{{Name: "a"}, {Name: "b"}, {Name: "viewsonly"}},
		Tables: []*Table{
			{DB: "a", Name: "t1"}, {DB: "b", Name: "t2"}, {DB: "a", Name: "t3"},
		},
	}
}

func checkSelectForRestore(t *testing.T, only, tables, dbs []string) {
	t.Helper()
	ts, ds, err := selectForRestore(selectTestManifest(), only)
	if err != nil {
		t.Errorf("selectForRestore(%q): %v", only, err)
		return
	}
	var gotT, gotD []string
	for _, x := range ts {
		gotT = append(gotT, x.String())
	}
	for _, d := range ds {
		gotD = append(gotD, d.Name)
	}
	if !reflect.DeepEqual(gotT, tables) || !reflect.DeepEqual(gotD, dbs) {
		t.Errorf("selectForRestore(%q) = %v, %v; want %v, %v", only, gotT, gotD, tables, dbs)
	}
}

func TestSelectForRestore(t *testing.T) {
	checkSelectForRestore(t, nil, []string{"a.t1", "b.t2", "a.t3"}, []string{"a", "b", "viewsonly"})
	checkSelectForRestore(t, []string{}, []string{"a.t1", "b.t2", "a.t3"}, []string{"a", "b", "viewsonly"})
	// The last database of the manifest (nothing after it to leak in).
	checkSelectForRestore(t, []string{"viewsonly"}, nil, []string{"viewsonly"})
	checkSelectForRestore(t, []string{"viewsonly", "a", "b"}, []string{"a.t1", "b.t2", "a.t3"}, []string{"a", "b", "viewsonly"})
	for _, only := range [][]string{{"x"}, {"a", "x"}, {"A"}} {
		ts, ds, err := selectForRestore(selectTestManifest(), only)
		if err == nil {
			t.Errorf("selectForRestore(%q) = %v, %v; want an error", only, ts, ds)
			continue
		}
		if dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND || !strings.Contains(err.Error(), "is not in the dump") {
			t.Errorf("selectForRestore(%q): %v (code %s)", only, err, dbpilot.ErrorCode(err))
		}
	}
}

// TestSelectForRestoreOnlyNamed: --databases must select only the named
// databases, wherever they sit in the manifest.
func TestSelectForRestoreOnlyNamed(t *testing.T) {
	checkSelectForRestore(t, []string{"a"}, []string{"a.t1", "a.t3"}, []string{"a"})
	checkSelectForRestore(t, []string{"b"}, []string{"b.t2"}, []string{"b"})
	checkSelectForRestore(t, []string{"b", "a"}, []string{"a.t1", "b.t2", "a.t3"}, []string{"a", "b"})
	checkSelectForRestore(t, []string{"a", "a"}, []string{"a.t1", "a.t3"}, []string{"a"})
}

func TestScheduler(t *testing.T) {
	ta, tb, tc := &Table{Name: "a"}, &Table{Name: "b"}, &Table{Name: "c"}
	mk := func(t *Table, n int) []job {
		var out []job
		for i := 0; i < n; i++ {
			out = append(out, job{t: t, c: &Chunk{File: fmt.Sprintf("%s.%d", t.Name, i+1)}})
		}
		return out
	}
	var jobs []job
	jobs = append(jobs, mk(ta, 3)...)
	jobs = append(jobs, mk(tb, 1)...)
	jobs = append(jobs, mk(tc, 2)...)
	s := newScheduler(jobs)
	take := func() string {
		t.Helper()
		j, ok := s.next()
		if !ok {
			return "-"
		}
		return j.c.File
	}
	// Four workers start: one per table first (the longest queue first),
	// then a second on the table with the most chunks left.
	got := []string{take(), take(), take(), take()}
	if want := []string{"a.1", "c.1", "b.1", "a.2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first picks %v, want %v", got, want)
	}
	// c.1 finishes: c has one worker fewer than a, so c.2 comes next.
	s.done(job{t: tc})
	if got := take(); got != "c.2" {
		t.Errorf("after c.1: %s, want c.2", got)
	}
	if got := take(); got != "a.3" {
		t.Errorf("then %s, want a.3", got)
	}
	if got := take(); got != "-" {
		t.Errorf("exhausted scheduler gave %s", got)
	}
	// Chunks of one table stay in order.
	s2 := newScheduler(mk(ta, 3))
	for i := 1; i <= 3; i++ {
		if j, ok := s2.next(); !ok || j.c.File != fmt.Sprintf("a.%d", i) {
			t.Errorf("pick %d: %v %v", i, j.c, ok)
		}
	}
	if _, ok := newScheduler(nil).next(); ok {
		t.Errorf("empty scheduler gave a job")
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressPrint(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress("dump", &buf, false, 0)
	if p.interval != 10*time.Second {
		t.Errorf("non-TTY default interval %v", p.interval)
	}
	p.start = time.Now().Add(-10 * time.Second)
	p.tables.Store(1)
	p.tablesAll.Store(3)
	p.chunks.Store(2)
	p.chunksAll.Store(5)
	p.rows.Store(12345)
	p.estRows.Store(24690)
	p.bytes.Store(3 << 20)
	p.print(false)
	line := buf.String()
	re := regexp.MustCompile(`^dump: tables 1/3, chunks 2/5, rows 12\.3k, 3\.0 MiB, 0\.3 MB/s, 123[34] rows/s, elapsed 10s, ETA 10s\n$`)
	if !re.MatchString(line) {
		t.Errorf("progress line %q does not match %s", line, re)
	}
	buf.Reset()
	p.print(true)
	if got := buf.String(); strings.Contains(got, "ETA") || !strings.HasPrefix(got, "dump: tables 1/3, chunks 2/5, rows 12.3k, 3.0 MiB") || !strings.HasSuffix(got, "\n") {
		t.Errorf("final line %q", got)
	}
	// Done or no estimate: no ETA.
	buf.Reset()
	p.rows.Store(24690)
	p.print(false)
	if strings.Contains(buf.String(), "ETA") {
		t.Errorf("ETA with all rows done: %q", buf.String())
	}

	// On a terminal: rewritten in place, with a bar while running.
	var tty bytes.Buffer
	q := newProgress("restore", &tty, true, 0)
	if q.interval != 250*time.Millisecond {
		t.Errorf("TTY default interval %v", q.interval)
	}
	q.start = time.Now().Add(-4 * time.Second)
	q.rows.Store(50)
	q.estRows.Store(200)
	q.print(false)
	got := tty.String()
	if !strings.HasPrefix(got, "\r\033[K[#####...............] restore: tables 0/0, chunks 0/0, rows 50, 0 B,") || strings.HasSuffix(got, "\n") {
		t.Errorf("TTY line %q", got)
	}
	tty.Reset()
	q.print(true)
	got = tty.String()
	if !strings.HasPrefix(got, "\r\033[Krestore: ") || !strings.HasSuffix(got, "\n") || strings.Contains(got, "#") {
		t.Errorf("TTY final line %q", got)
	}
}

func TestProgressRun(t *testing.T) {
	var buf syncBuffer
	p := newProgress("dump", &buf, false, 5*time.Millisecond)
	p.chunksAll.Store(2)
	p.run()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(buf.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	p.chunks.Store(2)
	p.finish()
	p.halt() // again: no panic
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("want periodic lines and a final one, got %q", lines)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "dump: tables 0/0, chunks 2/2,") {
		t.Errorf("last line %q", last)
	}
	n := strings.Count(buf.String(), "\n")
	time.Sleep(20 * time.Millisecond)
	if strings.Count(buf.String(), "\n") != n {
		t.Errorf("progress printed after finish")
	}

	// Without a writer nothing runs and nothing prints.
	q := newProgress("dump", nil, false, time.Millisecond)
	q.run()
	q.finish()
}

func TestProgressFormatting(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {9999, "9999"}, {10000, "10.0k"}, {123456, "123.5k"}, {9_999_999, "10000.0k"}, {10_000_000, "10.0M"}, {1_234_567_890, "1234.6M"}} {
		if got := count(tc.n); got != tc.want {
			t.Errorf("count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {1 << 20, "1.0 MiB"}, {1<<30 - 1, "1024.0 MiB"}, {1 << 30, "1.00 GiB"}, {11 << 29, "5.50 GiB"}} {
		if got := size(tc.n); got != tc.want {
			t.Errorf("size(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		f    float64
		want string
	}{{0, "[....................]"}, {0.5, "[##########..........]"}, {0.99, "[###################.]"}, {1, "[####################]"}, {1.7, "[####################]"}} {
		if got := bar(tc.f); got != tc.want {
			t.Errorf("bar(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestSmallHelpers(t *testing.T) {
	if extension("zstd") != ".zst" || extension("none") != "" {
		t.Errorf("extension")
	}
	for q, want := range map[string]string{
		"SELECT `a` FROM `db`.`t` WHERE x":                   "`db`.`t`",
		"SELECT MIN(`id`), MAX(`id`) FROM `d`.`t`":           "`d`.`t`",
		"SELECT /*!40001 SQL_NO_CACHE */ `a` FROM `d`.`t x`": "`d`.`t",
		"SHOW MASTER STATUS":                                 "rows",
	} {
		if got := firstWordsOf(q); got != want {
			t.Errorf("firstWordsOf(%q) = %q, want %q", q, got, want)
		}
	}
	o := backupConnOptions(mysql.Options{QueryTimeout: time.Minute}, 7)
	if o.MaxConns != 7 || o.QueryTimeout != 24*time.Hour || o.ConnectTimeout != 5*time.Second {
		t.Errorf("backupConnOptions = %+v", o)
	}
	o = backupConnOptions(mysql.Options{QueryTimeout: 48 * time.Hour, ConnectTimeout: time.Second}, 1)
	if o.QueryTimeout != 48*time.Hour || o.ConnectTimeout != time.Second {
		t.Errorf("backupConnOptions kept = %+v", o)
	}
	with, without := restoreSessionSQL(true), restoreSessionSQL(false)
	if with[len(with)-1] != "SET SESSION sql_log_bin = 0" || len(with) != len(without)+1 {
		t.Errorf("restoreSessionSQL(true) = %q", with)
	}
	for _, s := range without {
		if strings.Contains(s, "sql_log_bin") {
			t.Errorf("restoreSessionSQL(false) has %q", s)
		}
	}
	if plural(1) != "s" || plural(2) != "" {
		t.Errorf("plural")
	}
}

func TestVerifyReport(t *testing.T) {
	ok := &VerifyReport{Server: "h:3306", Tables: []TableVerdict{{OK: true}, {OK: true}}, Chunks: 5}
	if !ok.OK() || ok.String() != "h:3306 matches the dump: 2 tables, 5 chunks" {
		t.Errorf("ok report: %v %q", ok.OK(), ok.String())
	}
	bad := &VerifyReport{Server: "h:3306", Chunks: 5, Mismatches: 2, Missing: []string{"a.t"}}
	if bad.OK() || bad.String() != "h:3306 differs from the dump: 2 of 5 chunks differ, 1 tables missing" {
		t.Errorf("bad report: %v %q", bad.OK(), bad.String())
	}
	if (&VerifyReport{Missing: []string{"x"}}).OK() {
		t.Errorf("missing tables reported OK")
	}
}

func TestCheckedReader(t *testing.T) {
	data := []byte("hello, chunk file")
	good := &Chunk{FileSize: int64(len(data)), FileCRC: crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))}
	newReader := func(c *Chunk) *checkedReader {
		return &checkedReader{r: bytes.NewReader(data), crc: crc32.New(crc32.MakeTable(crc32.Castagnoli)), want: c, path: "/d/data/x.tsv"}
	}
	r := newReader(good)
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	if err := r.finish(); err != nil {
		t.Errorf("finish after EOF: %v", err)
	}
	// finish reads what was left unread.
	r = newReader(good)
	if _, err := r.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	if err := r.finish(); err != nil {
		t.Errorf("finish with data left: %v", err)
	}
	for _, c := range []*Chunk{{FileSize: good.FileSize, FileCRC: good.FileCRC ^ 1}, {FileSize: good.FileSize + 1, FileCRC: good.FileCRC}} {
		_, err := io.ReadAll(newReader(c))
		if !errors.Is(err, ErrCorrupt) || dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "/d/data/x.tsv is corrupt") {
			t.Errorf("corrupt chunk %+v: %v", c, err)
		}
		if err := newReader(c).finish(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("finish on corrupt chunk %+v: %v", c, err)
		}
	}
}

func TestProgressLog(t *testing.T) {
	dir := t.TempDir()
	pl, err := openProgressLog(dir, false, "h:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"chunk data/a.00001.tsv", "indexes a.t"} {
		if err := pl.record(e); err != nil {
			t.Fatal(err)
		}
	}
	if !pl.has("chunk data/a.00001.tsv") || pl.has("chunk data/a.00002.tsv") {
		t.Errorf("has() wrong")
	}
	pl.close()
	b, _ := os.ReadFile(filepath.Join(dir, ProgressFile))
	if string(b) != "target h:1\nchunk data/a.00001.tsv\nindexes a.t\n" {
		t.Errorf("progress file %q", b)
	}
	// Resume keeps the entries and appends.
	pl, err = openProgressLog(dir, true, "h:1")
	if err != nil {
		t.Fatal(err)
	}
	if !pl.has("chunk data/a.00001.tsv") || !pl.has("indexes a.t") || pl.has("target h:1") {
		t.Errorf("resumed entries wrong: %v", pl.done)
	}
	if err := pl.record("objects"); err != nil {
		t.Fatal(err)
	}
	pl.close()
	b, _ = os.ReadFile(filepath.Join(dir, ProgressFile))
	if string(b) != "target h:1\nchunk data/a.00001.tsv\nindexes a.t\nobjects\n" {
		t.Errorf("progress file after resume %q", b)
	}
	// Resume against another target is refused.
	if _, err := openProgressLog(dir, true, "other:2"); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "records a restore to h:1, not other:2") {
		t.Errorf("resume to another target: %v", err)
	}
	// A fresh restore starts over.
	pl, err = openProgressLog(dir, false, "other:2")
	if err != nil {
		t.Fatal(err)
	}
	if pl.has("objects") {
		t.Errorf("fresh log kept old entries")
	}
	pl.close()
	b, _ = os.ReadFile(filepath.Join(dir, ProgressFile))
	if string(b) != "target other:2\n" {
		t.Errorf("fresh progress file %q", b)
	}
	// Resume without a progress file starts one.
	dir2 := t.TempDir()
	pl, err = openProgressLog(dir2, true, "h:1")
	if err != nil {
		t.Fatal(err)
	}
	pl.close()
	if b, _ := os.ReadFile(filepath.Join(dir2, ProgressFile)); string(b) != "target h:1\n" {
		t.Errorf("new progress file on resume %q", b)
	}
}

func TestPrepareOutAndMarkFailed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dump")
	if err := prepareOut(dir); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{schemaDir, dataDir} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err != nil || !st.IsDir() {
			t.Errorf("%s not created: %v", sub, err)
		}
	}
	marker, err := os.ReadFile(filepath.Join(dir, IncompleteFile))
	if err != nil || !strings.HasPrefix(string(marker), "dump started ") {
		t.Errorf("marker %q, %v", marker, err)
	}
	// Not empty any more.
	if err := prepareOut(dir); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("prepareOut on a used directory: %v", err)
	}
	// An existing empty directory is fine.
	empty := t.TempDir()
	if err := prepareOut(empty); err != nil {
		t.Errorf("prepareOut on an empty directory: %v", err)
	}
	// A failed dump says why, and ReadManifest reports it.
	markFailed(dir, errors.New("backup: write data/x: no space left on device\nmore detail"))
	_, err = ReadManifest(dir)
	if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "more detail") {
		t.Errorf("ReadManifest after markFailed: %v", err)
	}
	// writeSmall creates files exclusively.
	d := &dumpDir{path: dir}
	if err := d.writeSmall(filepath.Join(schemaDir, "a.sql"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := d.writeSmall(filepath.Join(schemaDir, "a.sql"), []byte("y")); err == nil {
		t.Errorf("writeSmall overwrote a file")
	}
}
