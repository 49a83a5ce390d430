package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/watchdog"
)

func writeRules(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWatchdogBadRules(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"rules:\n  - name: a\n    busy: 2s\n    kil: true\n", `rules.yaml:4: rule "a": field "kil": unknown field`},
		{"rules:\n  - name: a\n    info: '(unclosed'\n", `rules.yaml:3: rule "a": field "info": invalid regular expression`},
	} {
		f := writeRules(t, tc.src)
		code, out, errOut := runCLI(t, "watchdog", "test", "--rules", f, "127.0.0.1:1")
		if code != exitError || out != "" || !strings.Contains(errOut, f+":") || !strings.Contains(errOut, tc.want) ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, tc.want)
		}
	}
	f := writeRules(t, "rules: [{name: a, busy: 2s}]\n")
	if code, _, errOut := runCLI(t, "watchdog", "test", "--rules", f, "--rule", "b", "127.0.0.1:1"); code != exitError || !strings.Contains(errOut, `no rule "b"`) {
		t.Errorf("unknown --rule: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "watchdog", "run", "127.0.0.1:1"); code != exitError || !strings.Contains(errOut, "--rules FILE") {
		t.Errorf("no --rules: exit %d, %q", code, errOut)
	}
}

// wdSession is one client session of a watchdog test: a pinned connection
// that runs one statement at a time in the background.
type wdSession struct {
	t    *testing.T
	id   uint64
	db   *mysql.DB
	conn *sql.Conn
	done chan error
	end  time.Time       // when the background statement returned
	kill func(id uint64) // through an admin session
}

func openWDSession(t *testing.T, key dbpilot.InstanceKey, creds mysql.Credentials, kill func(uint64)) *wdSession {
	t.Helper()
	ctx := context.Background()
	db, err := mysql.Open(ctx, key, mysql.Options{Credentials: creds, MaxConns: 1, QueryTimeout: 150 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := &wdSession{t: t, db: db, conn: conn, kill: kill}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.done != nil {
			select {
			case <-s.done:
			default:
				s.kill(s.id)
				select {
				case <-s.done:
				case <-time.After(10 * time.Second):
					t.Errorf("session %d did not end after KILL", s.id)
				}
			}
		}
		conn.Close()
		db.Close()
	})
	return s
}

func (s *wdSession) exec(q string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		s.t.Fatalf("session %d: %s: %v", s.id, q, err)
	}
}

// start runs q in the background; done receives its error.
func (s *wdSession) start(q string) {
	s.done = make(chan error, 1)
	go func() {
		_, err := s.conn.ExecContext(context.Background(), q)
		s.end = time.Now()
		s.done <- err
	}()
}

// ended reports whether the background statement has returned (and how).
func (s *wdSession) ended(within time.Duration) (bool, error) {
	select {
	case err := <-s.done:
		s.done <- err // keep it for the next look and for Cleanup
		return true, err
	case <-time.After(within):
		return false, nil
	}
}

func runWatchdog(t *testing.T, args ...string) []watchdogEvent {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"watchdog", "run", "--json", "--interval", "250ms"}, args...)...)
	if code != 0 {
		t.Fatalf("watchdog run: exit %d\n%s\n%s", code, out, errOut)
	}
	var evs []watchdogEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e watchdogEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	t.Logf("watchdog run %v:\n%s%s", args, out, errOut)
	return evs
}

func TestWatchdogIntegration(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	ctx := context.Background()
	primaryKey, replicaKey := d.Nodes[0].Key(), d.Nodes[1].Key()
	admin := map[dbpilot.InstanceKey]*mysql.DB{}
	for _, k := range []dbpilot.InstanceKey{primaryKey, replicaKey} {
		db, err := mysql.Open(ctx, k, d.AdminOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		admin[k] = db
	}
	killer := func(k dbpilot.InstanceKey) func(uint64) {
		return func(id uint64) { _ = admin[k].Kill(ctx, id, false) }
	}
	if err := admin[primaryKey].Exec(ctx,
		"CREATE DATABASE wd", "CREATE TABLE wd.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO wd.t VALUES (1, 0)",
		"CREATE USER 'batch'@'%' IDENTIFIED BY 'batchpw'", "GRANT ALL ON *.* TO 'batch'@'%'",
		"CREATE USER 'weak'@'%' IDENTIFIED BY 'weakpw'", "GRANT SELECT ON wd.* TO 'weak'@'%'"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitValue(t, d, "2", "SELECT COUNT(*) FROM mysql.user WHERE user='weak'", "1", 30*time.Second)
	batch := mysql.Credentials{User: "batch", Password: "batchpw"}
	primary := func() *wdSession { return openWDSession(t, primaryKey, d.Admin, killer(primaryKey)) }

	// busy waits until session s on node has run its statement for at
	// least age (start sends it in the background: on a loaded machine it
	// may begin late, so the age is read, not assumed from a sleep).
	busy := func(node string, s *wdSession, age time.Duration) {
		t.Helper()
		q := fmt.Sprintf("SELECT IFNULL(MAX(time_ms), 0) >= %d FROM information_schema.processlist WHERE id = %d AND command = 'Query'", age.Milliseconds(), s.id)
		testutil.WaitValue(t, d, node, q, "1", 30*time.Second)
	}

	// Dry-run: the rule reports, the session keeps sleeping.
	s1 := primary()
	s1.start("SELECT SLEEP(100)")
	busy("1", s1, 2500*time.Millisecond)
	dry := writeRules(t, "rules:\n  - {name: dry, info: SLEEP, busy: 2s, action: kill_query}\n")
	evs := runWatchdog(t, "--rules", dry, "--sandbox", d.Name, "--node", "1", "--duration", "1500ms")
	if len(evs) != 1 || evs[0].Decision != watchdog.DecisionDryRun || evs[0].Session.ID != s1.id || evs[0].Result != "" {
		t.Fatalf("dry-run events: %+v, want one dry_run of session %d", evs, s1.id)
	}
	if ended, err := s1.ended(0); ended {
		t.Fatalf("dry-run killed session %d: %v", s1.id, err)
	}
	code, out, errOut := runCLI(t, "watchdog", "test", "--rules", dry, "--rule", "dry", "--sandbox", d.Name, "--node", "1")
	if code != 0 || !strings.Contains(out, "rule dry (kill_query, dry-run): 1 session(s) match") || !strings.Contains(out, fmt.Sprintf("  %d ", s1.id)) ||
		!strings.Contains(out, "SELECT SLEEP(100)") || !strings.Contains(out, "busy ") {
		t.Errorf("watchdog test: exit %d\n%s\n%s", code, out, errOut)
	}

	// Kill mode on both nodes: the SLEEPs older than 2 s go, the one of a
	// user in except stays, and so do the replication and system threads.
	r1 := openWDSession(t, replicaKey, d.Admin, killer(replicaKey))
	r1.start("SELECT SLEEP(100)")
	b1 := openWDSession(t, primaryKey, batch, killer(primaryKey))
	b1.start("SELECT SLEEP(100)")
	busy("2", r1, 2500*time.Millisecond)
	busy("1", b1, 2500*time.Millisecond)
	kill := writeRules(t, "rules:\n  - {name: busy, busy: 2s, action: kill_connection, dry_run: false, victims: all, except: {users: [batch]}}\n")
	evs = runWatchdog(t, "--rules", kill, "--sandbox", d.Name, "--duration", "2s")
	want := map[string]uint64{primaryKey.String(): s1.id, replicaKey.String(): r1.id}
	for _, e := range evs {
		if want[e.Instance] != e.Session.ID || e.Decision != watchdog.DecisionKill || e.Result != "killed" {
			t.Errorf("unexpected event %+v", e)
		}
	}
	if len(evs) != 2 {
		t.Errorf("%d events, want 2 kills", len(evs))
	}
	for _, s := range []*wdSession{s1, r1} {
		if ended, err := s.ended(5 * time.Second); !ended || err == nil {
			t.Errorf("session %d not killed (ended %v, %v)", s.id, ended, err)
		}
	}
	if ended, err := b1.ended(0); ended {
		t.Errorf("session %d of user batch (except) ended: %v", b1.id, err)
	}
	st, err := admin[replicaKey].Query(ctx, "SHOW SLAVE STATUS")
	if err != nil || len(st.Values) != 1 {
		t.Fatalf("SHOW SLAVE STATUS: %v", err)
	}
	if m := st.Maps()[0]; m["Slave_IO_Running"] != "Yes" || m["Slave_SQL_Running"] != "Yes" {
		t.Errorf("replica threads after the kill rule: IO %s, SQL %s", m["Slave_IO_Running"], m["Slave_SQL_Running"])
	}
	if err := admin[primaryKey].Exec(ctx, "INSERT INTO wd.t VALUES (2, 0)"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitValue(t, d, "2", "SELECT COUNT(*) FROM wd.t", "2", 30*time.Second)
	b1.kill(b1.id)
	if ended, _ := b1.ended(10 * time.Second); !ended {
		t.Fatal("batch session did not end")
	}

	// Idle in transaction with a row lock: killed after 2 s idle; the
	// writer waiting on the lock proceeds.
	x := primary()
	x.exec("BEGIN")
	x.exec("UPDATE wd.t SET v = v + 1 WHERE id = 1")
	w := primary()
	w.start("UPDATE wd.t SET v = 100 WHERE id = 1")
	idle := writeRules(t, "rules:\n  - {name: idle, idle_in_trx: 2s, action: kill_connection, dry_run: false}\n")
	start := time.Now()
	evs = runWatchdog(t, "--rules", idle, "--sandbox", d.Name, "--node", "1", "--duration", "4s")
	if len(evs) != 1 || evs[0].Session.ID != x.id || evs[0].Result != "killed" || evs[0].Session.TimeSeconds < 2 ||
		evs[0].Session.TrxRowsLocked == nil || *evs[0].Session.TrxRowsLocked < 1 {
		t.Fatalf("idle-in-trx events: %+v, want the kill of session %d", evs, x.id)
	}
	if ended, err := w.ended(5 * time.Second); !ended || err != nil {
		t.Fatalf("waiting writer: ended %v, %v", ended, err)
	}
	t.Logf("waiting writer proceeded %s after the watchdog started", w.end.Sub(start).Round(time.Millisecond))
	if v, err := testutil.Value(d, "1", "SELECT v FROM wd.t WHERE id = 1"); err != nil || v != "100" {
		t.Errorf("row after the writer: %q, %v (want 100: the idle transaction rolled back)", v, err)
	}

	// The kill-rate guard: 5 sleepers, 2 kills a minute.
	var sleepers []*wdSession
	for range 5 {
		s := primary()
		s.start("SELECT SLEEP(100)")
		sleepers = append(sleepers, s)
	}
	for _, s := range sleepers {
		busy("1", s, 1500*time.Millisecond)
	}
	guard := writeRules(t, "rules:\n  - {name: guard, info: SLEEP, busy: 1s, action: kill_query, dry_run: false, victims: all, max_kills_per_minute: 2}\n")
	evs = runWatchdog(t, "--rules", guard, "--sandbox", d.Name, "--node", "1", "--duration", "2500ms")
	count := map[watchdog.Decision]int{}
	for _, e := range evs {
		count[e.Decision]++
	}
	if count[watchdog.DecisionKill] != 2 || count[watchdog.DecisionRateLimited] != 3 || len(evs) != 5 {
		t.Errorf("guard events: %v, want 2 kills and 3 rate-limited", count)
	}
	ended := 0
	for _, s := range sleepers {
		if e, _ := s.ended(500 * time.Millisecond); e {
			ended++
		}
	}
	if ended != 2 {
		t.Errorf("%d sleepers ended, want 2", ended)
	}

	// The built-in replica_applier_blocked: a SELECT on the replica holds
	// wd.t's metadata lock, the primary ALTERs wd.t, the replica's applier
	// waits; test shows the SELECT, run kills it and the ALTER applies.
	sel := openWDSession(t, replicaKey, batch, killer(replicaKey))
	sel.start("SELECT v, SLEEP(100) FROM wd.t")
	busy("2", sel, 500*time.Millisecond) // it holds wd.t's metadata lock
	if err := admin[primaryKey].Exec(ctx, "ALTER TABLE wd.t ADD COLUMN c INT"); err != nil {
		t.Fatal(err)
	}
	builtin := writeRules(t, "rules:\n  - {builtin: replica_applier_blocked, wait: 1s, dry_run: false}\n")
	testutil.WaitFor(t, 20*time.Second, "watchdog test showing the applier's blocker", func() (bool, string) {
		code, out, errOut := runCLI(t, "watchdog", "test", "--rules", builtin, "--sandbox", d.Name, "--node", "2")
		return code == 0 && strings.Contains(out, "rule replica_applier_blocked (kill_connection): 1 session(s) match") &&
			strings.Contains(out, fmt.Sprintf("  %d ", sel.id)) && strings.Contains(out, "blocks replication applier"), out + errOut
	})
	evs = runWatchdog(t, "--rules", builtin, "--sandbox", d.Name, "--node", "2", "--duration", "3s")
	if len(evs) != 1 || evs[0].Session.ID != sel.id || evs[0].Result != "killed" || evs[0].Rule != watchdog.BuiltinReplicaApplierBlocked {
		t.Errorf("replica_applier_blocked events: %+v, want the kill of session %d", evs, sel.id)
	}
	testutil.WaitValue(t, d, "2", "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'wd' AND TABLE_NAME = 't' AND COLUMN_NAME = 'c'", "1", 30*time.Second)

	// KILL errors are classified: a session already gone, a missing privilege.
	if err := admin[primaryKey].Kill(ctx, x.id, false); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Errorf("kill of a gone session: %v (code %s), want not_found", err, dbpilot.ErrorCode(err))
	}
	weak, err := mysql.Open(ctx, primaryKey, mysql.Options{Credentials: mysql.Credentials{User: "weak", Password: "weakpw"}})
	if err != nil {
		t.Fatal(err)
	}
	defer weak.Close()
	if err := weak.Kill(ctx, sleepers[4].id, true); dbpilot.ErrorCode(err) != dbpilot.EAUTH || strings.Contains(err.Error(), "\n") {
		t.Errorf("kill without the privilege: %v (code %s), want auth", err, dbpilot.ErrorCode(err))
	}
}

func TestWatchdogEventLine(t *testing.T) {
	var b strings.Builder
	w := &eventWriter{w: &b}
	w.write(watchdogEvent{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Instance: "127.0.0.1:3306", Rule: "r",
		Action: watchdog.ActionKillQuery, Decision: watchdog.DecisionKill, Result: "killed",
		Session: sessionView{ID: 7, User: "app", Host: "10.0.0.1:5000", DB: "shop", Command: "Query", TimeSeconds: 3.25,
			State: "User sleep", Info: "SELECT\n  SLEEP(100)", Reasons: []string{"busy 3.2s ≥ 2s"}}})
	want := `2024-01-02T03:04:05Z 127.0.0.1:3306 rule=r action=kill_query decision=kill id=7 user=app host=10.0.0.1:5000 db=shop command=Query time=3.2s state="User sleep" info="SELECT SLEEP(100)" why="busy 3.2s ≥ 2s" result="killed"` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
	if got := truncate(strings.Repeat("x", 100), 10); got != "xxxxxxxxx…" {
		t.Errorf("truncate: %q", got)
	}
}
