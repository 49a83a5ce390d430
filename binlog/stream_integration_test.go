package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// Integration tests against real MariaDB sandboxes. Helpers start with "it".

type itServer struct {
	d   *sandbox.Descriptor
	key dbpilot.InstanceKey
	db  *mysql.DB
}

func itSandbox(t *testing.T, spec sandbox.Spec) *itServer {
	t.Helper()
	if spec.Topology == "" {
		spec.Topology = sandbox.TopologySingle
	}
	d := testutil.MustSandbox(t, spec)
	key := d.Nodes[0].Key()
	db, err := mysql.Open(context.Background(), key, mysql.Options{Credentials: d.Admin, QueryTimeout: 30 * time.Second, MaxConns: 6})
	if err != nil {
		t.Fatalf("connect %s: %v", key, err)
	}
	t.Cleanup(func() { db.Close() })
	return &itServer{d: d, key: key, db: db}
}

func (s *itServer) exec(t *testing.T, stmts ...string) {
	t.Helper()
	if err := s.db.Exec(context.Background(), stmts...); err != nil {
		t.Fatal(err)
	}
}

func (s *itServer) value(t *testing.T, q string) string {
	t.Helper()
	v, _, err := s.db.QueryValue(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (s *itServer) options(dir string) Options {
	return Options{Key: s.key, Conn: mysql.Options{Credentials: s.d.Admin}, Dir: dir, Heartbeat: 500 * time.Millisecond}
}

// serverGTIDs lists the GTIDs of every transaction in the server's binary
// logs, in order (SHOW BINLOG EVENTS).
func (s *itServer) serverGTIDs(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	logs, err := s.db.Query(ctx, "SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`GTID (\d+-\d+-\d+)`)
	var out []string
	for _, row := range logs.Values {
		ev, err := s.db.Query(ctx, "SHOW BINLOG EVENTS IN '"+mysql.Str(row, 0)+"'")
		if err != nil {
			t.Fatal(err)
		}
		ti, ii := ev.Index("Event_type"), ev.Index("Info")
		for _, e := range ev.Values {
			if mysql.Str(e, ti) == "Gtid" {
				if m := re.FindStringSubmatch(mysql.Str(e, ii)); m != nil {
					out = append(out, m[1])
				}
			}
		}
	}
	return out
}

// archiveGTIDs lists the GTIDs of the complete transactions in the
// archive's files, in order, and the files read.
func archiveGTIDs(t *testing.T, dir string) (gtids []string, files []string) {
	t.Helper()
	idx, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx {
		files = append(files, e.File)
	}
	parts, _ := partialFiles(dir)
	files = append(files, parts...)
	for _, f := range files {
		rc, err := OpenFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		tr := newTracker(newPosition(FlavorMariaDB))
		err = ReadEvents(rc, func(off int64, e Event) error {
			r, err := tr.feed(e)
			if r.committed {
				gtids = append(gtids, tr.cur)
			}
			return err
		})
		rc.Close()
		var torn *TornError
		if err != nil && !(errors.As(err, &torn) && strings.HasSuffix(f, PartialSuffix)) {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return gtids, files
}

// itLoad writes until stop is closed: inserts in domain 0 and (every
// third) domain 1, a FLUSH BINARY LOGS every 40 statements.
func itLoad(t *testing.T, s *itServer, stop <-chan struct{}) (wait func() int) {
	t.Helper()
	ctx := context.Background()
	c0, err := s.db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := s.db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.ExecContext(ctx, "SET gtid_domain_id=1"); err != nil {
		t.Fatal(err)
	}
	var n int
	var wg sync.WaitGroup
	var loadErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer c0.Close()
		defer c1.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var c *sql.Conn = c0
			if i%3 == 2 {
				c = c1
			}
			if _, err := c.ExecContext(ctx, "INSERT INTO bl.t (v) VALUES (?)", fmt.Sprint("row ", i)); err != nil {
				loadErr = err
				return
			}
			n++
			if i%40 == 39 {
				if _, err := c0.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
					loadErr = err
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() int {
		wg.Wait()
		if loadErr != nil {
			t.Fatalf("load: %v", loadErr)
		}
		return n
	}
}

func itRun(s *Streamer) (ctx context.Context, cancel func(), done <-chan error) {
	ctx, cancel = context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- s.Run(ctx) }()
	return ctx, cancel, ch
}

func TestStreamArchive(t *testing.T) {
	s := itSandbox(t, sandbox.Spec{})
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))")
	dir := t.TempDir()
	stop := make(chan struct{})
	wait := itLoad(t, s, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wait()
		}
	}()

	// First stream, from the start.
	st1, err := New(s.options(dir))
	if err != nil {
		t.Fatal(err)
	}
	_, cancel1, done1 := itRun(st1)
	t.Cleanup(cancel1)
	testutil.WaitFor(t, time.Minute, "first stream archives 2 files and 150 transactions", func() (bool, string) {
		p := st1.Progress()
		return p.FilesFinished >= 2 && p.Transactions >= 150, fmt.Sprintf("%+v", p)
	})

	// A second stream on the same directory refuses.
	st2, _ := New(s.options(dir))
	err = st2.Run(context.Background())
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second stream on one directory: got %v, want a conflict", err)
	}

	cancel1()
	if err := <-done1; !errors.Is(err, context.Canceled) {
		t.Fatalf("first stream: %v", err)
	}
	// Tear the last event of the partial file, as a crash mid-write would.
	// A stream stopped right after the server rotated has finished its
	// file and not yet started the next: no partial file then.
	parts, _ := partialFiles(dir)
	if len(parts) > 1 {
		t.Fatalf("partial files after stop: %v", parts)
	}
	if len(parts) == 1 {
		pp := filepath.Join(dir, parts[0])
		if fi, err := os.Stat(pp); err == nil && fi.Size() > 200 {
			if err := os.Truncate(pp, fi.Size()-7); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		t.Log("stopped between two files: no partial file to tear")
	}

	// Resume.
	st3, _ := New(s.options(dir))
	_, cancel3, done3 := itRun(st3)
	t.Cleanup(cancel3)
	testutil.WaitFor(t, time.Minute, "resumed stream archives 2 more files", func() (bool, string) {
		p := st3.Progress()
		return p.FilesFinished >= 2 && p.Transactions >= 100, fmt.Sprintf("%+v", p)
	})
	close(stop)
	stopped = true
	n := wait()
	t.Logf("load wrote %d rows", n)
	cancel3()
	if err := <-done3; !errors.Is(err, context.Canceled) {
		t.Fatalf("resumed stream: %v", err)
	}

	// Catch up and stop.
	o := s.options(dir)
	o.StopAtEnd = true
	st4, _ := New(o)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st4.Run(ctx); err != nil {
		t.Fatalf("stop-at-end: %v", err)
	}

	want := s.serverGTIDs(t)
	got, files := archiveGTIDs(t, dir)
	if !slices.Equal(got, want) {
		t.Fatalf("archive has %d transactions, server %d\narchive: %v\nserver:  %v", len(got), len(want), got, want)
	}
	domains := map[string]int{}
	for _, g := range got {
		domains[strings.SplitN(g, "-", 2)[0]]++
	}
	if domains["0"] == 0 || domains["1"] == 0 {
		t.Fatalf("transactions per domain: %v", domains)
	}
	t.Logf("%d transactions in %d files, per domain %v", len(got), len(files), domains)

	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}
	if gp := s.value(t, "SELECT @@gtid_binlog_pos"); rep.Position != normalizeList(t, gp) {
		t.Fatalf("archive position %s, server %s", rep.Position, gp)
	}
	itMariadbBinlog(t, dir)
}

func normalizeList(t *testing.T, s string) string {
	p, err := parsePosition(FlavorMariaDB, s)
	if err != nil {
		t.Fatal(err)
	}
	return p.String()
}

// itMariadbBinlog decompresses each archived file and reads it with
// mariadb-binlog, which must print the GTIDs the index names.
func itMariadbBinlog(t *testing.T, dir string) {
	t.Helper()
	tool, err := exec.LookPath("mariadb-binlog")
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("mariadb-binlog not installed: %v", err)
		}
		t.Logf("mariadb-binlog not installed: not reading the files with it")
		return
	}
	idx, _ := ReadIndex(dir)
	tmp := t.TempDir()
	for _, e := range idx {
		rc, err := OpenFile(filepath.Join(dir, e.File))
		if err != nil {
			t.Fatal(err)
		}
		plain := filepath.Join(tmp, e.Name)
		f, _ := os.Create(plain)
		_, err = io.Copy(f, rc)
		rc.Close()
		f.Close()
		if err != nil {
			t.Fatalf("decompress %s: %v", e.File, err)
		}
		out, err := exec.Command(tool, plain).CombinedOutput()
		if err != nil {
			t.Fatalf("mariadb-binlog %s: %v\n%s", e.Name, err, out)
		}
		for _, g := range []string{e.FirstGTID, e.LastGTID} {
			if g != "" && !strings.Contains(string(out), "GTID "+g) {
				t.Fatalf("mariadb-binlog %s does not show GTID %s:\n%s", e.Name, g, out)
			}
		}
	}
	// The partial file as it is.
	parts, _ := partialFiles(dir)
	for _, p := range parts {
		if out, err := exec.Command(tool, filepath.Join(dir, p)).CombinedOutput(); err != nil {
			t.Fatalf("mariadb-binlog %s: %v\n%s", p, err, out)
		}
	}
	t.Logf("mariadb-binlog read %d files", len(idx)+len(parts))
}

func TestStreamFromGTIDAndPurged(t *testing.T) {
	s := itSandbox(t, sandbox.Spec{})
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO bl.t (v) VALUES ('a')")
	from := s.value(t, "SELECT @@gtid_binlog_pos")
	s.exec(t, "INSERT INTO bl.t (v) VALUES ('b')", "INSERT INTO bl.t (v) VALUES ('c')")

	// --from-gtid starts after the position.
	dir := t.TempDir()
	o := s.options(dir)
	o.From, o.StopAtEnd = from, true
	st, _ := New(o)
	if err := st.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := archiveGTIDs(t, dir)
	all := s.serverGTIDs(t)
	if want := all[len(all)-2:]; !slices.Equal(got, want) {
		t.Fatalf("from %s: archive %v, want %v", from, got, want)
	}
	if rep, _ := Verify(dir); !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}

	// A start position whose binary log was purged.
	s.exec(t, "FLUSH BINARY LOGS", "INSERT INTO bl.t (v) VALUES ('d')", "FLUSH BINARY LOGS")
	logs, _ := s.db.Query(context.Background(), "SHOW BINARY LOGS")
	last := mysql.Str(logs.Values[len(logs.Values)-1], 0)
	first := mysql.Str(logs.Values[0], 0)
	// The server purges a file only once its checkpoint is written: retry.
	testutil.WaitFor(t, 30*time.Second, "the first binary log is purged", func() (bool, string) {
		s.exec(t, "PURGE BINARY LOGS TO '"+last+"'")
		l, _ := s.db.Query(context.Background(), "SHOW BINARY LOGS")
		return mysql.Str(l.Values[0], 0) != first, mysql.Str(l.Values[0], 0)
	})
	logs, _ = s.db.Query(context.Background(), "SHOW BINARY LOGS")
	last = mysql.Str(logs.Values[0], 0)
	oldest := s.value(t, "SELECT BINLOG_GTID_POS('"+last+"', 4)")
	o = s.options(t.TempDir())
	o.From = from
	st, _ = New(o)
	err := st.Run(context.Background())
	var pe *PurgedError
	if !errors.As(err, &pe) || dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Fatalf("purged start: got %v, want a PurgedError", err)
	}
	if !strings.Contains(err.Error(), oldest) || !strings.Contains(err.Error(), last) {
		t.Fatalf("purged start: %v does not name the oldest position %s (%s)", err, oldest, last)
	}
	t.Logf("purged: %v", err)
}

func TestStreamSemiSync(t *testing.T) {
	s := itSandbox(t, sandbox.Spec{})
	// MariaDB 10.11 has semi-sync built in: no plugin to load.
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))",
		"SET GLOBAL rpl_semi_sync_master_timeout=60000", "SET GLOBAL rpl_semi_sync_master_enabled=ON")
	dir := t.TempDir()
	o := s.options(dir)
	o.SemiSync = true
	st, _ := New(o)
	_, cancel, done := itRun(st)
	defer func() {
		cancel()
		<-done
	}()
	testutil.WaitFor(t, 30*time.Second, "the primary counts a semi-sync client", func() (bool, string) {
		v := s.value(t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='Rpl_semi_sync_master_clients'")
		return v >= "1", "Rpl_semi_sync_master_clients=" + v
	})
	if !st.Progress().SemiSync {
		t.Fatalf("progress does not show semi-sync: %+v", st.Progress())
	}
	yes0 := s.value(t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='Rpl_semi_sync_master_yes_tx'")
	for i := 0; i < 20; i++ {
		s.exec(t, fmt.Sprintf("INSERT INTO bl.t (v) VALUES ('%d')", i))
		g := s.value(t, "SELECT @@last_gtid")
		// Right after the commit returned: the transaction is in the file.
		got, _ := archiveGTIDs(t, dir)
		if len(got) == 0 || got[len(got)-1] != g {
			t.Fatalf("commit %s acknowledged but the archive's last transaction is %v", g, got[max(0, len(got)-1):])
		}
	}
	yes1 := s.value(t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='Rpl_semi_sync_master_yes_tx'")
	if yes0 == yes1 {
		t.Fatalf("Rpl_semi_sync_master_yes_tx stayed %s: the commits were not acknowledged", yes0)
	}

	// A commit acknowledged to the client, then the primary killed at
	// once: the transaction is in the archive.
	ctx := context.Background()
	conn, err := s.db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO bl.t (v) VALUES ('last before the kill')"); err != nil {
		t.Fatal(err)
	}
	var last string
	if err := conn.QueryRowContext(ctx, "SELECT @@last_gtid").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.Kill(s.d, s.d.Nodes[0].Name); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	t.Logf("stream after the kill: %v", <-done) // it ends with the lost connection
	ended := make(chan error)
	close(ended)
	done = ended // for the deferred wait
	got, _ := archiveGTIDs(t, dir)
	if len(got) == 0 || got[len(got)-1] != last {
		t.Fatalf("commit %s acknowledged before the kill, but the archive ends with %v", last, got[max(0, len(got)-1):])
	}
}

// TestStreamDiskFull makes the archive's writes fail with ENOSPC, then
// gives the space back: the stream stops with the error, and the next one
// resumes with no gap and no duplicate.
func TestStreamDiskFull(t *testing.T) {
	s := itSandbox(t, sandbox.Spec{})
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))")
	for i := 0; i < 30; i++ {
		s.exec(t, fmt.Sprintf("INSERT INTO bl.t (v) VALUES ('%d')", i))
		if i == 10 {
			s.exec(t, "FLUSH BINARY LOGS")
		}
	}
	dir := t.TempDir()
	full := &diskQuota{left: 3000}
	o := s.options(dir)
	o.StopAtEnd = true
	o.writeHook = full.wrap
	st, _ := New(o)
	err := st.Run(context.Background())
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "out of space") {
		t.Fatalf("disk full: got %v", err)
	}
	t.Logf("disk full: %v", err)
	o.writeHook = nil
	st, _ = New(o)
	if err := st.Run(context.Background()); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
	got, _ := archiveGTIDs(t, dir)
	if want := s.serverGTIDs(t); !slices.Equal(got, want) {
		t.Fatalf("archive %v\nserver  %v", got, want)
	}
	if rep, _ := Verify(dir); !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}
}

// diskQuota fails writes with ENOSPC once left bytes are used.
type diskQuota struct {
	mu   sync.Mutex
	left int
}

func (q *diskQuota) wrap(_ string, w io.Writer) io.Writer { return quotaWriter{q, w} }

type quotaWriter struct {
	q *diskQuota
	w io.Writer
}

func (w quotaWriter) Write(p []byte) (int, error) {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	if len(p) > w.q.left {
		n, _ := w.w.Write(p[:w.q.left])
		w.q.left = 0
		return n, &os.PathError{Op: "write", Path: "archive", Err: syscall.ENOSPC}
	}
	w.q.left -= len(p)
	return w.w.Write(p)
}

// TestRecordTestdata records testdata/archive from a sandbox (two domains,
// three rotations, a DDL) when DBPILOT_RECORD_BINLOG=1.
func TestRecordTestdata(t *testing.T) {
	if os.Getenv("DBPILOT_RECORD_BINLOG") == "" {
		t.Skip("set DBPILOT_RECORD_BINLOG=1 to record testdata/archive")
	}
	s := itSandbox(t, sandbox.Spec{})
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT PRIMARY KEY, v VARCHAR(20))", "FLUSH BINARY LOGS")
	for i := 1; i <= 12; i++ {
		s.exec(t, fmt.Sprintf("INSERT INTO bl.t VALUES (%d, 'r%d')", i, i))
		if i%4 == 0 {
			s.exec(t, "FLUSH BINARY LOGS")
		}
		if i%3 == 0 {
			s.exec(t, "SET SESSION gtid_domain_id=1", fmt.Sprintf("UPDATE bl.t SET v='d1' WHERE id=%d", i), "SET SESSION gtid_domain_id=0")
		}
	}
	dir := filepath.Join("testdata", "archive")
	os.RemoveAll(dir)
	o := s.options(dir)
	o.StopAtEnd = true
	st, _ := New(o)
	if err := st.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, LockName))
}

// TestStreamSilentServer stops the server's process (SIGSTOP): no event,
// no heartbeat, no closed connection. The stream ends within a few
// heartbeat periods, saying the server went silent, and resumes once the
// server runs again.
func TestStreamSilentServer(t *testing.T) {
	s := itSandbox(t, sandbox.Spec{})
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))", "INSERT INTO bl.t (v) VALUES ('a')")
	dir := t.TempDir()
	o := s.options(dir)
	o.Heartbeat = 300 * time.Millisecond
	st, _ := New(o)
	_, cancel, done := itRun(st)
	defer cancel()
	testutil.WaitFor(t, 20*time.Second, "the stream caught up", func() (bool, string) {
		return st.Progress().CaughtUp, fmt.Sprintf("%+v", st.Progress())
	})
	resume := testutil.Hang(t, s.d.Nodes[0])
	select {
	case err := <-done:
		if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "nothing received") {
			t.Fatalf("stream of a stopped server ended with %v", err)
		}
		t.Logf("stream ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the stream of a stopped server did not end")
	}
	resume()
	s.exec(t, "INSERT INTO bl.t (v) VALUES ('b')")
	o.StopAtEnd = true
	st, _ = New(o)
	if err := st.Run(context.Background()); err != nil {
		t.Fatalf("after the server resumed: %v", err)
	}
	got, _ := archiveGTIDs(t, dir)
	if want := s.serverGTIDs(t); !slices.Equal(got, want) {
		t.Fatalf("archive %v\nserver  %v", got, want)
	}
}

// TestStreamStoppedMidRotation stops a stream at each step of finishing a
// file after the server rotated, leaving the archive as a kill -9 there
// does (bench/faults.sh row 13 kills the real binary): ls and verify read
// the archive as it was left without a problem, and the next stream on the
// directory continues it with every transaction once, in order, each
// index entry naming the server it came from.
func TestStreamStoppedMidRotation(t *testing.T) {
	s := itSandbox(t, sandbox.Spec{})
	s.exec(t, "CREATE DATABASE bl", "CREATE TABLE bl.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))")
	insert := func(n int) {
		for i := 0; i < n; i++ {
			s.exec(t, "INSERT INTO bl.t (v) VALUES ('x')")
		}
	}
	for _, step := range []string{"synced", "compressed", "renamed", "indexed"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			insert(3)
			o := s.options(dir)
			o.StopAtEnd = true
			st, _ := New(o)
			if err := st.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The server rotates; the stream stops finishing the file.
			insert(2)
			s.exec(t, "FLUSH BINARY LOGS")
			insert(2)
			o.stopAt = step
			st, _ = New(o)
			if err := st.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "stopped at") {
				t.Fatalf("stream stopped at %s: got %v", step, err)
			}
			rep, err := Verify(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Fatalf("verify of the archive as the stop left it: %+v", rep.Problems)
			}
			files, err := List(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range files {
				if i > 0 && f.GTIDStart != files[i-1].GTIDEnd {
					t.Errorf("ls: %s starts at %s, %s ended at %s", f.File, f.GTIDStart, files[i-1].File, files[i-1].GTIDEnd)
				}
				if f.Partial && slices.ContainsFunc(files, func(g FileInfo) bool { return !g.Partial && g.Name == f.Name }) {
					t.Errorf("ls lists %s beside its finished file", f.File)
				}
			}
			t.Logf("as left: %d files, notes %v", len(files), rep.Notes)

			// The next stream continues the archive.
			o.stopAt = ""
			st, _ = New(o)
			if err := st.Run(context.Background()); err != nil {
				t.Fatalf("stream after the stop: %v", err)
			}
			got, _ := archiveGTIDs(t, dir)
			if want := s.serverGTIDs(t); !slices.Equal(got, want) {
				t.Fatalf("archive %v\nserver  %v", got, want)
			}
			if rep, _ := Verify(dir); !rep.OK() {
				t.Fatalf("verify: %+v", rep.Problems)
			}
			idx, _ := ReadIndex(dir)
			for _, e := range idx {
				if e.Source != s.key.String() || e.ServerID == 0 {
					t.Errorf("index entry of %s: source %q, server_id %d; want %s", e.File, e.Source, e.ServerID, s.key)
				}
			}
		})
	}
}
