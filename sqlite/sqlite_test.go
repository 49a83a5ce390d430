package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func openTest(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "dbpilot.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := dbpilot.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

// ts is a UTC time with nanoseconds, as the store returns times.
func ts(sec, nsec int64) time.Time { return time.Unix(1_700_000_000+sec, nsec).UTC() }

func TestOpenCreatesPrivateFiles(t *testing.T) {
	d, path := openTest(t)
	if err := d.Audit(context.Background(), dbpilot.AuditEvent{Event: "x", Message: "y"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{
		filepath.Dir(path): 0o700 | os.ModeDir,
		path:               0o600,
		path + ".lock":     0o600,
		path + "-wal":      0o600,
		path + "-shm":      0o600,
	} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	var mode string
	if err := d.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (%v), want wal", mode, err)
	}
	var fk int
	if err := d.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d (%v), want 1", fk, err)
	}
	var busy int
	if err := d.db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != int(BusyTimeout.Milliseconds()) {
		t.Errorf("busy_timeout %d (%v)", busy, err)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, p := range []string{"", filepath.Join(t.TempDir(), "a?b.db")} {
		if _, err := Open(p); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("Open(%q): %v, want an invalid error", p, err)
		}
	}
	// A parent that is a file.
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(f, "x.db")); err == nil {
		t.Error("Open below a file: no error")
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	d, path := openTest(t)
	if err := d.Audit(context.Background(), dbpilot.AuditEvent{Event: "keep", Message: "me"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		d, err := Open(path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		var n, max int
		if err := d.db.QueryRow(`SELECT count(*), max(version) FROM schema_version`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != SchemaVersion() || max != SchemaVersion() || n < 1 {
			t.Errorf("schema_version: %d rows, max %d; want %d", n, max, SchemaVersion())
		}
		ev, err := d.AuditEvents(context.Background(), dbpilot.AuditFilter{})
		if err != nil || len(ev) != 1 || ev[0].Event != "keep" {
			t.Errorf("after reopen: %v %v", ev, err)
		}
		d.Close()
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	d, path := openTest(t)
	if _, err := d.db.Exec(`INSERT INTO schema_version (version, applied_at) VALUES (?, 0)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err := Open(path)
	wantCode(t, err, dbpilot.EUNSUPPORTED)
	if !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), path) {
		t.Errorf("message %q", err)
	}
	_, err = OpenReadOnly(path)
	wantCode(t, err, dbpilot.EUNSUPPORTED)
	// The failed Open released the lock.
	if _, err := d.db.Exec(`SELECT 1`); err == nil {
		t.Error("closed DB still usable")
	}
	d2, err := Open(path)
	if dbpilot.ErrorCode(err) == dbpilot.ECONFLICT {
		t.Errorf("lock not released after a failed Open: %v", err)
	}
	if d2 != nil {
		d2.Close()
	}
}

func TestMigrationsNumbered(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.version != i+1 || strings.TrimSpace(m.sql) == "" {
			t.Errorf("migration %d: %+v", i, m.name)
		}
	}
}

func TestSecondOpenRefused(t *testing.T) {
	d, path := openTest(t)
	_, err := Open(path)
	wantCode(t, err, dbpilot.ECONFLICT)
	if want := fmt.Sprintf("state file %s is in use by another dbpilot serve (pid %d)", path, os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want it to contain %q", err, want)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	d2.Close()
}

// TestSecondOpenRefusedAcrossProcesses holds the state file in a child
// process (this test binary again) and opens it here.
func TestSecondOpenRefusedAcrossProcesses(t *testing.T) {
	if p := os.Getenv("DBPILOT_SQLITE_HOLD"); p != "" {
		d, err := Open(p)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
		d.Close()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "dbpilot.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondOpenRefusedAcrossProcesses$")
	cmd.Env = append(os.Environ(), "DBPILOT_SQLITE_HOLD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	_, err = Open(path)
	wantCode(t, err, dbpilot.ECONFLICT)
	if want := fmt.Sprintf("(pid %d)", cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not name the holder %s", err, want)
	}
	// Reading is allowed while serve holds the file.
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("OpenReadOnly while locked: %v", err)
	}
	ro.Close()

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	d.Close()
}

func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)
	if err := d.Audit(ctx, dbpilot.AuditEvent{Cluster: "c", Event: "detect", Message: "one"}); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	// Writes made by the serve after the reader opened are visible.
	if err := d.CreateRecovery(ctx, &dbpilot.Recovery{Cluster: "c", Kind: dbpilot.RecoverySwitchover, Started: ts(1, 0)}); err != nil {
		t.Fatal(err)
	}
	ev, err := ro.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: "c"})
	if err != nil || len(ev) != 1 {
		t.Fatalf("read-only audit: %v %v", ev, err)
	}
	recs, err := ro.Recoveries(ctx, dbpilot.RecoveryFilter{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("read-only recoveries: %v %v", recs, err)
	}
	if err := ro.Audit(ctx, dbpilot.AuditEvent{Event: "no"}); err == nil {
		t.Error("write through a read-only DB succeeded")
	}
	if _, err := ro.AckRecoveries(ctx, "c", "me", ""); err == nil {
		t.Error("ack through a read-only DB succeeded")
	}
	// Even bypassing the check, SQLite refuses.
	if _, err := ro.db.Exec(`DELETE FROM audit`); err == nil {
		t.Error("raw write through a read-only DB succeeded")
	}

	_, err = OpenReadOnly(filepath.Join(t.TempDir(), "missing.db"))
	wantCode(t, err, dbpilot.ENOTFOUND)

	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenReadOnly(empty)
	wantCode(t, err, dbpilot.EINVALID)
}

func fullInstance(host string, port int, at time.Time) *dbpilot.Instance {
	lag := int64(3)
	return &dbpilot.Instance{
		Key: dbpilot.InstanceKey{Host: host, Port: port}, Reachable: true, ObservedAt: at,
		Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6, Raw: "10.11.6-MariaDB-log"},
		VersionComment: "mariadb.org binary distribution", ServerID: 2, Hostname: "db2", ReportHost: "db2", ReportPort: port,
		Uptime: 90 * time.Minute, ReadOnly: true, LogBin: true, BinlogFormat: "ROW", LogReplicaUpdates: true,
		SlaveNetTimeout: 60 * time.Second,
		GTID:            dbpilot.GTIDState{Mode: "ON", BinlogPos: "0-1-100", SlavePos: "0-1-100", CurrentPos: "0-1-100", BinlogState: "0-1-100", StrictMode: true},
		Channels: []dbpilot.ReplicationChannel{{
			Source: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, SourceUser: "repl",
			IORunning: dbpilot.IORunning, SQLRunning: true, SecondsBehind: &lag, UsingGTID: "Slave_Pos",
			GTIDIOPos: "0-1-100", HeartbeatPeriod: 30 * time.Second, ParallelMode: "optimistic",
		}},
		SemiSync: dbpilot.SemiSyncState{ReplicaEnabled: true, ReplicaActive: true, PrimaryTimeout: 10 * time.Second},
		Replicas: []dbpilot.InstanceKey{{Host: "db3", Port: 3306}},
	}
}

func TestInstances(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	a := fullInstance("db2", 3306, ts(10, 123456789))
	b := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "db3", Port: 3306}, LastError: "connection refused", ObservedAt: ts(10, 0)}
	if err := d.SaveInstances(ctx, "main", []*dbpilot.Instance{a, nil, b}); err != nil {
		t.Fatal(err)
	}
	if err := d.SaveInstances(ctx, "other", []*dbpilot.Instance{fullInstance("x", 1, ts(10, 0))}); err != nil {
		t.Fatal(err)
	}
	got, err := d.KnownInstances(ctx, "main", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []*dbpilot.Instance{a, b}) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, []*dbpilot.Instance{a, b})
	}

	// A later observation replaces the earlier; first_seen stays.
	a2 := fullInstance("db2", 3306, ts(20, 0))
	a2.Reachable, a2.LastError = false, "timeout"
	if err := d.SaveInstances(ctx, "main", []*dbpilot.Instance{a2}); err != nil {
		t.Fatal(err)
	}
	var first, last int64
	if err := d.db.QueryRow(`SELECT first_seen, last_seen FROM instances WHERE cluster = 'main' AND host = 'db2'`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if first != ts(10, 123456789).UnixNano() || last != ts(20, 0).UnixNano() {
		t.Errorf("first_seen %d last_seen %d", first, last)
	}
	got, err = d.KnownInstances(ctx, "main", ts(15, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []*dbpilot.Instance{a2}) {
		t.Errorf("since filter: got %+v", got)
	}

	// No ObservedAt: last_seen is now.
	d.Now = func() time.Time { return ts(30, 0) }
	c := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "db4", Port: 3306}}
	if err := d.SaveInstances(ctx, "main", []*dbpilot.Instance{c}); err != nil {
		t.Fatal(err)
	}
	got, _ = d.KnownInstances(ctx, "main", ts(25, 0))
	if len(got) != 1 || got[0].Key.Host != "db4" {
		t.Errorf("now as last_seen: %+v", got)
	}

	// Keys are compared normalized.
	local := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "localhost", Port: 3310}, ObservedAt: ts(1, 0)}
	ip := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3310}, ObservedAt: ts(2, 0)}
	if err := d.SaveInstances(ctx, "local", []*dbpilot.Instance{local, ip}); err != nil {
		t.Fatal(err)
	}
	got, _ = d.KnownInstances(ctx, "local", time.Time{})
	if len(got) != 1 || got[0].Key.Host != "127.0.0.1" {
		t.Errorf("normalized keys: %+v", got)
	}
	if err := d.ForgetInstance(ctx, "local", dbpilot.InstanceKey{Host: "LOCALHOST", Port: 3310}); err != nil {
		t.Fatal(err)
	}
	if got, _ = d.KnownInstances(ctx, "local", time.Time{}); len(got) != 0 {
		t.Errorf("after forget: %+v", got)
	}
	if err := d.ForgetInstance(ctx, "main", dbpilot.InstanceKey{Host: "nope", Port: 1}); err != nil {
		t.Errorf("forget unknown: %v", err)
	}
	if err := d.ForgetInstance(ctx, "main", b.Key); err != nil {
		t.Fatal(err)
	}
	got, _ = d.KnownInstances(ctx, "main", time.Time{})
	if len(got) != 2 || got[0].Key.Host != "db2" || got[1].Key.Host != "db4" {
		t.Errorf("after forget db3: %+v", got)
	}
	if got, _ := d.KnownInstances(ctx, "other", time.Time{}); len(got) != 1 {
		t.Errorf("other cluster: %+v", got)
	}
}

func fullRecovery() *dbpilot.Recovery {
	return &dbpilot.Recovery{
		Cluster: "main", Kind: dbpilot.RecoveryFailoverAuto,
		OldPrimary: dbpilot.InstanceKey{Host: "db1", Port: 3306}, NewPrimary: dbpilot.InstanceKey{Host: "db2", Port: 3307},
		DetectedAt: ts(0, 1), Started: ts(1, 999999999), Ended: ts(7, 5),
		Success: true, Error: "partial: db4 lost", Plan: "promote db2: most advanced\nrepoint db3",
		LostReplicas: []dbpilot.InstanceKey{{Host: "db4", Port: 3306}, {Host: "::1", Port: 3310}},
		Acked:        true, AckedAt: ts(100, 42), AckedBy: "alice", AckComment: "checked",
	}
}

func TestRecoveryRoundTrip(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	r := fullRecovery()
	if err := d.CreateRecovery(ctx, r); err != nil {
		t.Fatal(err)
	}
	if r.ID == 0 {
		t.Fatal("ID not set")
	}
	zero := &dbpilot.Recovery{Cluster: "main"} // every time zero, nil and empty lists
	if err := d.CreateRecovery(ctx, zero); err != nil {
		t.Fatal(err)
	}
	empty := &dbpilot.Recovery{Cluster: "empty", LostReplicas: []dbpilot.InstanceKey{}, Started: time.Unix(-5, 7).UTC()}
	if err := d.CreateRecovery(ctx, empty); err != nil {
		t.Fatal(err)
	}
	got, err := d.Recoveries(ctx, dbpilot.RecoveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first; the zero Started sorts last.
	want := []*dbpilot.Recovery{r, empty, zero}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}

	// A time in another zone comes back as the same instant, in UTC.
	z := time.Date(2024, 5, 6, 7, 8, 9, 10, time.FixedZone("X", 5*3600))
	zr := &dbpilot.Recovery{Cluster: "zone", Started: z}
	if err := d.CreateRecovery(ctx, zr); err != nil {
		t.Fatal(err)
	}
	got, _ = d.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "zone"})
	if len(got) != 1 || !got[0].Started.Equal(z) || got[0].Started.Location() != time.UTC {
		t.Errorf("zoned time: %+v", got)
	}

	// Out of range.
	if err := d.CreateRecovery(ctx, &dbpilot.Recovery{Started: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
		t.Errorf("year 1500: %v", err)
	}
	if err := d.CreateRecovery(ctx, nil); err == nil {
		t.Error("nil recovery: no error")
	}
}

func TestUpdateRecovery(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	r := &dbpilot.Recovery{Cluster: "main", Kind: dbpilot.RecoveryFailoverManual,
		OldPrimary: dbpilot.InstanceKey{Host: "db1", Port: 3306}, Started: ts(1, 0), Plan: "plan"}
	if err := d.CreateRecovery(ctx, r); err != nil {
		t.Fatal(err)
	}
	u := *r
	u.NewPrimary = dbpilot.InstanceKey{Host: "db2", Port: 3306}
	u.Ended, u.Success, u.Error = ts(3, 3), false, "boom"
	u.LostReplicas = []dbpilot.InstanceKey{{Host: "db3", Port: 3306}}
	if err := d.UpdateRecovery(ctx, &u); err != nil {
		t.Fatal(err)
	}
	got, _ := d.Recoveries(ctx, dbpilot.RecoveryFilter{})
	if len(got) != 1 || !reflect.DeepEqual(got[0], &u) {
		t.Fatalf("after update: %+v, want %+v", got, &u)
	}

	// A person acknowledges while the recovery runs; the final update of
	// the (stale) recovery keeps the ack and learns it.
	d.Now = func() time.Time { return ts(4, 0) }
	if n, err := d.AckRecoveries(ctx, "main", "bob", "seen"); err != nil || n != 1 {
		t.Fatalf("ack: %d %v", n, err)
	}
	u.Success = true
	if err := d.UpdateRecovery(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if !u.Acked || u.AckedBy != "bob" || u.AckComment != "seen" || !u.AckedAt.Equal(ts(4, 0)) {
		t.Errorf("ack fields not refreshed: %+v", u)
	}
	got, _ = d.Recoveries(ctx, dbpilot.RecoveryFilter{})
	if !reflect.DeepEqual(got[0], &u) {
		t.Errorf("stored %+v, want %+v", got[0], &u)
	}
	// An update may acknowledge.
	r2 := &dbpilot.Recovery{Cluster: "c2", Started: ts(5, 0)}
	if err := d.CreateRecovery(ctx, r2); err != nil {
		t.Fatal(err)
	}
	r2.Acked, r2.AckedAt, r2.AckedBy = true, ts(6, 0), "carol"
	if err := d.UpdateRecovery(ctx, r2); err != nil {
		t.Fatal(err)
	}
	got, _ = d.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "c2"})
	if !reflect.DeepEqual(got[0], r2) {
		t.Errorf("ack by update: %+v", got[0])
	}

	err := d.UpdateRecovery(ctx, &dbpilot.Recovery{ID: 999})
	wantCode(t, err, dbpilot.ENOTFOUND)
}

func TestRecoveriesFilter(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	for i := 0; i < 5; i++ {
		for _, c := range []string{"a", "b"} {
			if err := d.CreateRecovery(ctx, &dbpilot.Recovery{Cluster: c, Kind: dbpilot.RecoverySwitchover, Started: ts(int64(i), 0)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := d.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "a", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d recoveries, want 3", len(got))
	}
	for i, r := range got {
		if r.Cluster != "a" || !r.Started.Equal(ts(int64(4-i), 0)) {
			t.Errorf("recovery %d: %s %v", i, r.Cluster, r.Started)
		}
	}
	if got, _ := d.Recoveries(ctx, dbpilot.RecoveryFilter{}); len(got) != 10 {
		t.Errorf("all: %d", len(got))
	}
	if got, _ := d.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "none"}); len(got) != 0 {
		t.Errorf("unknown cluster: %d", len(got))
	}
	for i := 0; i < DefaultRecoveryLimit; i++ {
		if err := d.CreateRecovery(ctx, &dbpilot.Recovery{Cluster: "many", Started: ts(int64(i), 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := d.Recoveries(ctx, dbpilot.RecoveryFilter{}); len(got) != DefaultRecoveryLimit {
		t.Errorf("default limit: %d", len(got))
	}
}

func TestAckRecoveries(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	d.Now = func() time.Time { return ts(50, 5) }
	for _, c := range []string{"a", "a", "b"} {
		if err := d.CreateRecovery(ctx, &dbpilot.Recovery{Cluster: c, Started: ts(1, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	done := &dbpilot.Recovery{Cluster: "a", Started: ts(0, 0), Acked: true, AckedAt: ts(2, 0), AckedBy: "old", AckComment: "before"}
	if err := d.CreateRecovery(ctx, done); err != nil {
		t.Fatal(err)
	}
	n, err := d.AckRecoveries(ctx, "a", "alice", "looked at it")
	if err != nil || n != 2 {
		t.Fatalf("ack: %d %v, want 2", n, err)
	}
	if n, err := d.AckRecoveries(ctx, "a", "alice", "again"); err != nil || n != 0 {
		t.Errorf("second ack: %d %v, want 0", n, err)
	}
	got, _ := d.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "a"})
	for _, r := range got {
		if r.ID == done.ID {
			if !reflect.DeepEqual(r, done) {
				t.Errorf("already acked recovery changed: %+v", r)
			}
			continue
		}
		if !r.Acked || r.AckedBy != "alice" || r.AckComment != "looked at it" || !r.AckedAt.Equal(ts(50, 5)) {
			t.Errorf("not acked: %+v", r)
		}
	}
	got, _ = d.Recoveries(ctx, dbpilot.RecoveryFilter{Cluster: "b"})
	if got[0].Acked {
		t.Errorf("other cluster acked")
	}
	_, err = d.AckRecoveries(ctx, "", "x", "")
	wantCode(t, err, dbpilot.EINVALID)
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	full := dbpilot.AuditEvent{
		Time: ts(5, 123), Cluster: "main", RecoveryID: 7, Instance: dbpilot.InstanceKey{Host: "db2", Port: 3306},
		Event: "promote", Message: "promoted db2:3306", Detail: map[string]string{"gtid": "0-1-100", "why": "most advanced"},
	}
	events := []dbpilot.AuditEvent{
		full,
		{Time: ts(1, 0), Cluster: "main", Event: "detect", Message: "primary dead", Detail: map[string]string{}},
		{Time: ts(9, 0), Cluster: "other", Event: "detect", Message: "x"},
		{Time: ts(5, 123), Cluster: "main", RecoveryID: 8, Event: "plan", Message: "same time, later id"},
	}
	for _, e := range events {
		if err := d.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := d.AuditEvents(ctx, dbpilot.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []dbpilot.AuditEvent{events[1], events[0], events[3], events[2]}
	for i := range want {
		want[i].ID = int64([]int{2, 1, 4, 3}[i])
	}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("round trip, oldest first:\n got %+v\nwant %+v", all, want)
	}

	check := func(f dbpilot.AuditFilter, ids ...int64) {
		t.Helper()
		got, err := d.AuditEvents(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []int64
		for _, e := range got {
			gotIDs = append(gotIDs, e.ID)
		}
		if fmt.Sprint(gotIDs) != fmt.Sprint(ids) {
			t.Errorf("%+v: ids %v, want %v", f, gotIDs, ids)
		}
	}
	check(dbpilot.AuditFilter{Cluster: "main"}, 2, 1, 4)
	check(dbpilot.AuditFilter{RecoveryID: 7}, 1)
	check(dbpilot.AuditFilter{Since: ts(5, 123)}, 1, 4, 3)
	check(dbpilot.AuditFilter{Since: ts(5, 124)}, 3)
	check(dbpilot.AuditFilter{Cluster: "main", Since: ts(2, 0), RecoveryID: 8}, 4)
	check(dbpilot.AuditFilter{Limit: 2}, 4, 3) // the latest two, oldest first
	check(dbpilot.AuditFilter{Cluster: "nope"})

	// Zero time means now.
	d.Now = func() time.Time { return ts(60, 0) }
	if err := d.Audit(ctx, dbpilot.AuditEvent{Event: "hook", Message: "ran"}); err != nil {
		t.Fatal(err)
	}
	got, _ := d.AuditEvents(ctx, dbpilot.AuditFilter{Since: ts(60, 0)})
	if len(got) != 1 || !got[0].Time.Equal(ts(60, 0)) {
		t.Errorf("default time: %+v", got)
	}
}

func TestAuditDefaultLimit(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	tx, err := d.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < DefaultAuditLimit+5; i++ {
		if _, err := tx.Exec(`INSERT INTO audit (time, cluster, recovery_id, host, port, event, message) VALUES (?, '', 0, '', 0, 'e', '')`, ts(int64(i), 0).UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := d.AuditEvents(ctx, dbpilot.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != DefaultAuditLimit || got[0].ID != 6 || got[len(got)-1].ID != DefaultAuditLimit+5 {
		t.Errorf("%d events, first %d, last %d", len(got), got[0].ID, got[len(got)-1].ID)
	}
}

func TestConcurrentAudit(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				e := dbpilot.AuditEvent{Cluster: fmt.Sprint("c", w), Event: "step", Message: fmt.Sprint(i)}
				if err := d.Audit(ctx, e); err != nil {
					errs <- err
				}
			}
			// Mixed with reads and a transaction.
			if _, err := d.AuditEvents(ctx, dbpilot.AuditFilter{Cluster: fmt.Sprint("c", w)}); err != nil {
				errs <- err
			}
			if err := d.SaveInstances(ctx, fmt.Sprint("c", w), []*dbpilot.Instance{fullInstance("h", w+1, ts(0, 0))}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := d.AuditEvents(ctx, dbpilot.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*each {
		t.Fatalf("%d events, want %d", len(got), writers*each)
	}
	seen := map[int64]bool{}
	for _, e := range got {
		if seen[e.ID] {
			t.Fatalf("duplicate id %d", e.ID)
		}
		seen[e.ID] = true
	}
}

func TestContextCanceled(t *testing.T) {
	d, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Audit(ctx, dbpilot.AuditEvent{Event: "x"}); err == nil {
		t.Error("Audit with a canceled context succeeded")
	} else if !strings.HasPrefix(err.Error(), "sqlite: audit: ") {
		t.Errorf("error %q not wrapped", err)
	}
}

func TestMigrationAtomic(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)
	ms, _ := loadMigrations()
	bad := append(ms[:len(ms):len(ms)],
		migration{version: len(ms) + 1, name: "good.sql", sql: `CREATE TABLE t1 (x INTEGER)`},
		migration{version: len(ms) + 2, name: "bad.sql", sql: `CREATE TABLE t2 (x INTEGER); SELECT * FROM no_such_table;`},
	)
	err := applyMigrations(ctx, d.db, path, bad)
	if err == nil || !strings.Contains(err.Error(), "bad.sql") {
		t.Fatalf("error %v, want one naming bad.sql", err)
	}
	var v, n int
	if err := d.db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&v); err != nil || v != len(ms) {
		t.Errorf("version %d (%v), want %d", v, err, len(ms))
	}
	if err := d.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('t1', 't2')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables of the failed migrations left (%v)", n, err)
	}
	if err := applyMigrations(ctx, d.db, path, bad[:len(ms)+1]); err != nil {
		t.Fatal(err)
	}
	if err := d.db.QueryRow(`SELECT max(version) FROM schema_version`).Scan(&v); err != nil || v != len(ms)+1 {
		t.Errorf("version %d (%v), want %d", v, err, len(ms)+1)
	}
}

// TestPrune: audit events, recoveries and resolved alerts older than the
// cut are deleted; the newest recovery of each cluster stays, whatever its
// age, and so do firing alerts.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	for _, r := range []*dbpilot.Recovery{
		{Cluster: "a", Kind: dbpilot.RecoveryFailoverAuto, Started: ts(10, 0)},
		{Cluster: "a", Kind: dbpilot.RecoverySwitchover, Started: ts(20, 0)},
		{Cluster: "a", Kind: dbpilot.RecoverySwitchover, Started: ts(200, 0)},
		{Cluster: "b", Kind: dbpilot.RecoveryFailoverAuto, Started: ts(30, 0)}, // b's newest: kept
	} {
		if err := d.CreateRecovery(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, sec := range []int64{5, 50, 150, 250} {
		if err := d.Audit(ctx, dbpilot.AuditEvent{Time: ts(sec, 0), Cluster: "a", Event: "detect", Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []*dbpilot.Alert{
		{Rule: "old", State: dbpilot.AlertResolved, ActiveAt: ts(1, 0), ResolvedAt: ts(2, 0)},
		{Rule: "firing", State: dbpilot.AlertFiring, ActiveAt: ts(1, 0), FiredAt: ts(2, 0)},
		{Rule: "new", State: dbpilot.AlertResolved, ActiveAt: ts(110, 0), ResolvedAt: ts(120, 0)},
	} {
		if err := d.SaveAlert(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	p, err := d.Prune(ctx, ts(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := (dbpilot.Pruned{Audit: 2, Recoveries: 2, Alerts: 1}); p != want {
		t.Errorf("pruned %+v, want %+v", p, want)
	}
	recs, _ := d.Recoveries(ctx, dbpilot.RecoveryFilter{})
	var left []string
	for _, r := range recs {
		left = append(left, r.Cluster+"@"+r.Started.Sub(ts(0, 0)).String())
	}
	if got := strings.Join(left, ","); got != "a@3m20s,b@30s" {
		t.Errorf("recoveries left: %s", got)
	}
	ev, _ := d.AuditEvents(ctx, dbpilot.AuditFilter{})
	alerts, _ := d.Alerts(ctx, dbpilot.AlertFilter{})
	if len(ev) != 2 || len(alerts) != 2 {
		t.Errorf("left %d audit events and %d alerts, want 2 and 2", len(ev), len(alerts))
	}
	if _, err := d.Prune(ctx, time.Time{}); err == nil {
		t.Error("a prune without a time was accepted")
	}
}

// TestConcurrentWritersWait: many clusters saving at once, with audit
// writes beside them, all succeed, and a writer waiting for its turn gives
// up with its context. (SQLite's busy handler alone let some writers wait
// past BusyTimeout at 200 clusters on a saturated serve, bench/scale.sh;
// on an idle machine it copes with this test's load too, so the first
// part guards the turn-taking against deadlocks, not the starvation.)
func TestConcurrentWritersWait(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	const writers, rounds = 64, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cluster := fmt.Sprintf("c%03d", w)
			for r := range rounds {
				var insts []*dbpilot.Instance
				for i := range 5 {
					insts = append(insts, &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 20000 + w*5 + i}, Reachable: r%2 == 0, ObservedAt: time.Now()})
				}
				if err := d.SaveInstances(ctx, cluster, insts); err != nil {
					errs <- err
				}
				if err := d.Audit(ctx, dbpilot.AuditEvent{Time: time.Now(), Cluster: cluster, Event: "test", Message: "round"}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, c := range []string{"c000", "c063"} {
		got, err := d.KnownInstances(ctx, c, time.Time{})
		if err != nil || len(got) != 5 {
			t.Errorf("cluster %s: %d instances saved (%v), want 5", c, len(got), err)
		}
	}
	// A writer whose context ends while it waits for its turn says so.
	d.wlock <- struct{}{}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	err := d.SaveInstances(cctx, "c000", []*dbpilot.Instance{{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}}})
	<-d.wlock
	if err == nil || !strings.Contains(err.Error(), "wait for the state file's writer") {
		t.Errorf("save while another writer holds the turn: %v", err)
	}
}
