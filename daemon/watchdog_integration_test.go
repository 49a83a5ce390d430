package daemon_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/alert"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/metrics"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/watchdog"
)

// TestWatchdogInServe: serve's watchdog kills a SELECT SLEEP(100) busy for
// more than 2s within a few seconds, audits the kill and counts it; a rule
// in dry-run only logs, and the session it matched runs to its end.
func TestWatchdogInServe(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	rules := filepath.Join(dir, "watchdog.yaml")
	if err := os.WriteFile(rules, []byte(`rules:
  - {name: runaway, info: 'SLEEP\(100\)', busy: 2s, action: kill_query, dry_run: false}
  - {name: watch-only, info: 'SLEEP\(6\)', busy: 1s, action: kill_query, dry_run: true}
  - {name: not-serve, info: 'SLEEP\(5\)', busy: 1s, action: kill_connection, dry_run: false}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Clusters[0].AutoFailover = false
		c.Watchdog.RulesFile = rules
	}, daemon.Wiring{MetricsStore: ms}, false)

	// An application session: serve's own user is never matched.
	f.exec("node1", "CREATE USER 'wdapp'@'%' IDENTIFIED BY 'wdapp-pw'")
	app, err := mysql.Open(context.Background(), f.key("node1"), mysql.Options{
		Credentials: mysql.Credentials{User: "wdapp", Password: "wdapp-pw"}, ConnectTimeout: 5 * time.Second, QueryTimeout: 2 * time.Minute, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	type ended struct {
		took time.Duration
		err  error
	}
	run := func(q string) chan ended {
		ch := make(chan ended, 1)
		go func() {
			start := time.Now()
			_, err := app.Query(context.Background(), q)
			ch <- ended{time.Since(start), err}
		}()
		return ch
	}
	// serve's own user (the sandbox's admin account) is never matched.
	adminOpts := d.AdminOptions()
	adminOpts.QueryTimeout = time.Minute
	admin, err := mysql.Open(context.Background(), f.key("node1"), adminOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	own := make(chan ended, 1)
	go func() {
		start := time.Now()
		_, err := admin.Query(context.Background(), "SELECT SLEEP(5)")
		own <- ended{time.Since(start), err}
	}()
	killed := run("SELECT SLEEP(100)")
	watched := run("SELECT SLEEP(6)")
	select {
	case e := <-killed:
		t.Logf("SELECT SLEEP(100) ended after %s (err %v)", e.took, e.err)
		if e.took < 2*time.Second || e.took > 8*time.Second {
			t.Errorf("SELECT SLEEP(100) ended after %s: want killed soon after 2s busy", e.took)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("SELECT SLEEP(100) not killed within 20s; audit:\n%s", f.auditText())
	}
	select {
	case e := <-watched:
		if e.err != nil || e.took < 5*time.Second {
			t.Errorf("the dry-run rule's session ended after %s with %v: want its full 6s, unkilled", e.took, e.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SELECT SLEEP(6) did not end")
	}

	if e := <-own; e.err != nil || e.took < 4*time.Second {
		t.Errorf("serve's own user's SELECT SLEEP(5) ended after %s with %v: want never matched", e.took, e.err)
	}

	var kill, dry *dbpilot.AuditEvent
	testutil.WaitFor(t, 20*time.Second, "watchdog audit events", func() (bool, string) {
		evs, err := f.store.AuditEvents(context.Background(), dbpilot.AuditFilter{Cluster: d.Name})
		if err != nil {
			return false, err.Error()
		}
		kill, dry = nil, nil
		for i, e := range evs {
			if e.Event != dbpilot.AuditWatchdog {
				continue
			}
			if e.Detail["user"] != "wdapp" {
				t.Errorf("watchdog matched a session of %q: %+v", e.Detail["user"], e)
			}
			switch {
			case e.Detail["rule"] == "runaway" && e.Detail["decision"] == "kill":
				kill = &evs[i]
			case e.Detail["rule"] == "watch-only" && e.Detail["decision"] == "dry_run":
				dry = &evs[i]
			}
		}
		return kill != nil && dry != nil, "audit:\n" + f.auditText()
	})
	if kill.Detail["result"] != "killed" || kill.Instance != f.key("node1") || !strings.Contains(kill.Message, "kill_query: killed") {
		t.Errorf("kill event: %+v", kill)
	}
	if dry.Detail["result"] != "" {
		t.Errorf("dry-run event has a result: %+v", dry)
	}
	t.Logf("audit:\n%s", f.auditText())

	inst := f.key("node1").String()
	for expr, want := range map[string]float64{
		`dbpilot_watchdog_kills_total{rule="runaway",result="killed",instance="` + inst + `"}`:         1,
		`dbpilot_watchdog_matches_total{rule="watch-only",decision="dry_run",instance="` + inst + `"}`: 1,
	} {
		testutil.WaitFor(t, 20*time.Second, expr, func() (bool, string) {
			s, err := ms.QueryInstant(context.Background(), expr, time.Now())
			if err != nil {
				return false, err.Error()
			}
			return len(s) == 1 && len(s[0].Points) > 0 && s[0].Points[0].V == want, ""
		})
	}
}

// wdConn is one client session of a watchdog test: a pinned connection as
// an application user, running one statement at a time in the background.
type wdConn struct {
	t    *testing.T
	id   uint64
	db   *mysql.DB
	conn *sql.Conn
	done chan error
}

func openWDConn(t *testing.T, f *fixture, node, user string) *wdConn {
	t.Helper()
	ctx := context.Background()
	db, err := mysql.Open(ctx, f.key(node), mysql.Options{Credentials: mysql.Credentials{User: user, Password: user + "-pw"},
		MaxConns: 1, ConnectTimeout: 5 * time.Second, QueryTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &wdConn{t: t, db: db, conn: conn}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&c.id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.done != nil {
			if ended, _ := c.ended(0); !ended {
				// The watchdog may have killed it a moment ago (1094: no
				// such thread); its statement then returns on its own.
				if _, err := sandbox.Exec(context.Background(), f.d, node, fmt.Sprintf("KILL %d", c.id)); err != nil && mysql.ServerErrorNumber(err) != 1094 {
					t.Errorf("KILL %d on %s: %v", c.id, node, err)
				}
				if ended, _ := c.ended(10 * time.Second); !ended {
					t.Errorf("session %d did not end after KILL", c.id)
				}
			}
		}
		conn.Close()
		db.Close()
	})
	return c
}

func (c *wdConn) exec(q string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.conn.ExecContext(ctx, q); err != nil {
		c.t.Fatalf("session %d: %s: %v", c.id, q, err)
	}
}

// start runs q in the background.
func (c *wdConn) start(q string) {
	c.done = make(chan error, 1)
	go func() {
		_, err := c.conn.ExecContext(context.Background(), q)
		c.done <- err
	}()
}

// ended reports whether the background statement has returned, and how.
func (c *wdConn) ended(within time.Duration) (bool, error) {
	select {
	case err := <-c.done:
		c.done <- err // kept for the next look
		return true, err
	case <-time.After(within):
		return false, nil
	}
}

// watchdogAudit returns the watchdog's audit events.
func (f *fixture) watchdogAudit() []dbpilot.AuditEvent {
	evs, err := f.store.AuditEvents(context.Background(), dbpilot.AuditFilter{Cluster: f.d.Name})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []dbpilot.AuditEvent
	for _, e := range evs {
		if e.Event == dbpilot.AuditWatchdog {
			out = append(out, e)
		}
	}
	return out
}

// metricValue waits for an instant query to give one series with value want.
func metricValue(t *testing.T, ms *metrics.Store, expr string, want float64) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, expr, func() (bool, string) {
		s, err := ms.QueryInstant(context.Background(), expr, time.Now())
		if err != nil {
			return false, err.Error()
		}
		if len(s) != 1 || len(s[0].Points) == 0 {
			return false, fmt.Sprintf("%d series", len(s))
		}
		return s[0].Points[0].V == want, fmt.Sprintf("value %v, want %v", s[0].Points[0].V, want)
	})
}

// TestWatchdogRulesInServe: inside serve, on a primary and its replica, the
// kill-rate guard holds (2 kills a minute, 4 sleepers: 2 killed, 2
// rate-limited, in the audit and the metrics); a session idle in a
// transaction holding a row lock is killed after its idle threshold and the
// writer waiting on the lock proceeds; a session of a user in except is not
// killed while the same statement of another user is; replication threads
// and system users are never matched, on the primary (Binlog Dump) or the
// replica (Slave_IO, Slave_SQL, workers).
func TestWatchdogRulesInServe(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	rules := filepath.Join(dir, "watchdog.yaml")
	if err := os.WriteFile(rules, []byte(`rules:
  - {name: guard, info: 'SLEEP\(101\)', busy: 1s, action: kill_query, dry_run: false, victims: all, max_kills_per_minute: 2}
  - {name: idle, user: wdidle, idle_in_trx: 2s, action: kill_connection, dry_run: false}
  - {name: except, info: 'SLEEP\(102\)', busy: 1s, action: kill_query, dry_run: false, victims: all, except: {users: [wdbatch]}}
  - {name: everything, busy: 1s, action: log, victims: all}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Clusters[0].AutoFailover = false
		c.Watchdog.RulesFile = rules
		c.Watchdog.Interval = daemon.Duration(250 * time.Millisecond)
	}, daemon.Wiring{MetricsStore: ms}, false)
	f.exec("node1", "CREATE DATABASE wd")
	f.exec("node1", "CREATE TABLE wd.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	f.exec("node1", "INSERT INTO wd.t VALUES (1, 0)")
	for _, u := range []string{"wdapp", "wdidle", "wdbatch"} {
		f.exec("node1", fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s-pw'", u, u))
		f.exec("node1", fmt.Sprintf("GRANT ALL ON wd.* TO '%s'@'%%'", u))
	}
	f.waitValue("node2", "SELECT COUNT(*) FROM mysql.user WHERE user LIKE 'wd%'", "3", 30*time.Second)

	// The kill-rate guard: 4 sleepers.
	var sleepers []*wdConn
	for range 4 {
		c := openWDConn(t, f, "node1", "wdapp")
		c.start("SELECT SLEEP(101)")
		sleepers = append(sleepers, c)
	}
	// Idle in transaction with a row lock, and a writer waiting on it.
	idle := openWDConn(t, f, "node1", "wdidle")
	idle.exec("BEGIN")
	idle.exec("UPDATE wd.t SET v = v + 1 WHERE id = 1")
	writer := openWDConn(t, f, "node1", "wdapp")
	writer.start("UPDATE wd.t SET v = 100 WHERE id = 1")
	// except: the same statement, killed for wdapp, not for wdbatch.
	batch := openWDConn(t, f, "node1", "wdbatch")
	batch.start("SELECT SLEEP(102)")
	app := openWDConn(t, f, "node1", "wdapp")
	app.start("SELECT SLEEP(102)")
	// A busy session on the replica: the rules evaluate there too.
	onReplica := openWDConn(t, f, "node2", "wdapp")
	onReplica.start("SELECT SLEEP(4)")

	if ended, err := writer.ended(30 * time.Second); !ended || err != nil {
		t.Fatalf("the writer waiting on the idle transaction's lock: ended %v, %v; audit:\n%s", ended, err, f.auditText())
	}
	if v := f.value("node1", "SELECT v FROM wd.t WHERE id = 1"); v != "100" {
		t.Errorf("row after the writer: %s, want 100 (the idle transaction rolled back)", v)
	}
	if ended, err := app.ended(20 * time.Second); !ended {
		t.Errorf("wdapp's SELECT SLEEP(102): ended %v, %v; want killed by rule except", ended, err)
	}
	killed := 0
	testutil.WaitFor(t, 20*time.Second, "2 of the 4 sleepers killed", func() (bool, string) {
		killed = 0
		for _, c := range sleepers {
			if e, _ := c.ended(0); e {
				killed++
			}
		}
		return killed == 2, fmt.Sprintf("%d killed", killed)
	})
	if ended, _ := onReplica.ended(20 * time.Second); !ended {
		t.Fatal("the replica's SELECT SLEEP(4) did not end")
	}

	var guard = map[string]int{}
	var everythingOnReplica bool
	testutil.WaitFor(t, 10*time.Second, "audit of the guard and the replica's session", func() (bool, string) {
		guard, everythingOnReplica = map[string]int{}, false
		for _, e := range f.watchdogAudit() {
			if e.Detail["rule"] == "guard" {
				guard[e.Detail["decision"]+"/"+e.Detail["result"]]++
			}
			if e.Detail["rule"] == "everything" && e.Instance == f.key("node2") && e.Detail["user"] == "wdapp" {
				everythingOnReplica = true
			}
		}
		return guard["kill/killed"] == 2 && guard["rate_limited/"] == 2 && everythingOnReplica, fmt.Sprintf("guard %v, replica %v", guard, everythingOnReplica)
	})
	if len(guard) != 2 {
		t.Errorf("guard decisions %v, want 2 kill/killed and 2 rate_limited", guard)
	}
	if ended, err := batch.ended(0); ended {
		t.Errorf("wdbatch's session (except) ended: %v", err)
	}
	for _, e := range f.watchdogAudit() {
		u, cmd := e.Detail["user"], e.Detail["command"]
		if u == "system user" || u == "event_scheduler" || u == "" || strings.HasPrefix(cmd, "Slave_") || strings.HasPrefix(cmd, "Binlog Dump") ||
			u == f.cfg.Credentials.User {
			t.Errorf("matched a replication, system or serve's own session: %s", e.Message)
		}
		if e.Detail["rule"] == "except" && u == "wdbatch" {
			t.Errorf("rule except matched wdbatch: %s", e.Message)
		}
		if e.Detail["rule"] == "idle" && (e.Detail["decision"] != "kill" || e.Detail["result"] != "killed" || e.Detail["session"] != fmt.Sprint(idle.id)) {
			t.Errorf("idle rule: %s", e.Message)
		}
	}
	t.Logf("audit:\n%s", f.auditText())
	inst := f.key("node1").String()
	metricValue(t, ms, `dbpilot_watchdog_kills_total{rule="guard",result="killed",instance="`+inst+`"}`, 2)
	metricValue(t, ms, `dbpilot_watchdog_matches_total{rule="guard",decision="rate_limited",instance="`+inst+`"}`, 2)
	metricValue(t, ms, `dbpilot_watchdog_kills_total{rule="idle",result="killed",instance="`+inst+`"}`, 1)
	st, err := sandbox.Exec(context.Background(), d, "node2", "SHOW SLAVE STATUS")
	if err != nil || len(st.Values) != 1 {
		t.Fatalf("SHOW SLAVE STATUS: %v", err)
	}
	if m := st.Maps()[0]; m["Slave_IO_Running"] != "Yes" || m["Slave_SQL_Running"] != "Yes" {
		t.Errorf("replica threads under the watchdog: IO %s, SQL %s", m["Slave_IO_Running"], m["Slave_SQL_Running"])
	}
}

// TestWatchdogApplierBlockedInServe: the built-in replica_applier_blocked
// rule inside serve, on a real replica. A long SELECT ... SLEEP on wd.t on
// the replica holds the table's metadata lock; the primary runs ALTER TABLE
// wd.t; the replica's applier waits for the lock; the rule kills the SELECT
// and the ALTER applies on the replica. A rule in dry-run reports without
// killing (the ALTER applies once the SELECT ends by itself). With the
// wait/lock/metadata/sql/mdl instrument enabled, performance_schema names
// the blocker: a session idle in a transaction that read the table, which
// the processlist heuristic cannot see. Every match and kill is posted to
// alerts.webhook as a watchdog_events payload.
func TestWatchdogApplierBlockedInServe(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	var mu sync.Mutex
	var hooked []alert.WatchdogEvent
	var payloads int
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Alerts         json.RawMessage       `json:"alerts"`
			WatchdogEvents []alert.WatchdogEvent `json:"watchdog_events"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		if len(p.WatchdogEvents) > 0 {
			hooked = append(hooked, p.WatchdogEvents...)
			payloads++
		}
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	rules := filepath.Join(dir, "watchdog.yaml")
	if err := os.WriteFile(rules, []byte(`rules:
  - {builtin: replica_applier_blocked, wait: 1s, dry_run: false, except: {users: [wddry]}}
  - {builtin: replica_applier_blocked, name: applier-dry-run, wait: 1s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := startDaemonWith(t, d, func(c *daemon.Config) {
		c.Clusters[0].AutoFailover = false
		c.Watchdog.RulesFile = rules
		c.Watchdog.Interval = daemon.Duration(250 * time.Millisecond)
		c.Alerts.Webhook = hook.URL
	}, daemon.Wiring{MetricsStore: ms}, false)
	f.exec("node1", "CREATE DATABASE wd")
	f.exec("node1", "CREATE TABLE wd.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	f.exec("node1", "INSERT INTO wd.t VALUES (1, 0)")
	for _, u := range []string{"wdapp", "wddry"} {
		f.exec("node1", fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s-pw'", u, u))
		f.exec("node1", fmt.Sprintf("GRANT ALL ON wd.* TO '%s'@'%%'", u))
	}
	f.waitValue("node2", "SELECT COUNT(*) FROM mysql.user WHERE user LIKE 'wd%'", "2", 30*time.Second)
	f.waitValue("node2", "SELECT COUNT(*) FROM wd.t", "1", 30*time.Second)
	hasColumn := func(c string) string {
		return "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'wd' AND TABLE_NAME = 't' AND COLUMN_NAME = '" + c + "'"
	}
	events := func(rule, decision string) []alert.WatchdogEvent {
		mu.Lock()
		defer mu.Unlock()
		var out []alert.WatchdogEvent
		for _, e := range hooked {
			if e.Rule == rule && e.Decision == decision {
				out = append(out, e)
			}
		}
		return out
	}

	// Kill: the SELECT holding the lock goes, the ALTER applies.
	sel := openWDConn(t, f, "node2", "wdapp")
	sel.start("SELECT v, SLEEP(100) FROM wd.t")
	testutil.WaitFor(t, 10*time.Second, "the SELECT running on the replica", func() (bool, string) {
		return f.value("node2", fmt.Sprintf("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %d AND STATE = 'User sleep'", sel.id)) == "1", ""
	})
	f.exec("node1", "ALTER TABLE wd.t ADD COLUMN c INT")
	if ended, err := sel.ended(30 * time.Second); !ended || err == nil {
		t.Fatalf("the blocking SELECT: ended %v, %v; want killed; audit:\n%s", ended, err, f.auditText())
	}
	f.waitValue("node2", hasColumn("c"), "1", 30*time.Second)
	var kill *dbpilot.AuditEvent
	for _, e := range f.watchdogAudit() {
		if e.Detail["rule"] == watchdog.BuiltinReplicaApplierBlocked && e.Detail["decision"] == "kill" {
			kill = &e
		}
	}
	if kill == nil || kill.Instance != f.key("node2") || kill.Detail["session"] != fmt.Sprint(sel.id) || kill.Detail["result"] != "killed" ||
		kill.Detail["action"] != "kill_connection" || !strings.Contains(kill.Detail["reasons"], "blocks replication applier") {
		t.Fatalf("kill event: %+v; audit:\n%s", kill, f.auditText())
	}
	t.Logf("kill: %s (%s)", kill.Message, kill.Detail["reasons"])
	testutil.WaitFor(t, 10*time.Second, "the kill on the webhook", func() (bool, string) {
		return len(events(watchdog.BuiltinReplicaApplierBlocked, "kill")) == 1, ""
	})
	if e := events(watchdog.BuiltinReplicaApplierBlocked, "kill")[0]; e.Instance != f.key("node2").String() || e.Cluster != d.Name ||
		e.Result != "killed" || e.Session.ID != sel.id || e.Session.User != "wdapp" || e.Time.IsZero() || len(e.Reasons) != 2 {
		t.Errorf("webhook kill event: %+v", e)
	}
	testutil.WaitFor(t, 10*time.Second, "the dry-run rule's match on the webhook", func() (bool, string) {
		return len(events("applier-dry-run", "dry_run")) >= 1, ""
	})

	// Dry-run: wddry's SELECT is reported but runs to its end; then the
	// ALTER applies.
	dry := openWDConn(t, f, "node2", "wddry")
	start := time.Now()
	dry.start("SELECT v, SLEEP(4) FROM wd.t")
	testutil.WaitFor(t, 10*time.Second, "the SELECT running on the replica", func() (bool, string) {
		return f.value("node2", fmt.Sprintf("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %d AND STATE = 'User sleep'", dry.id)) == "1", ""
	})
	f.exec("node1", "ALTER TABLE wd.t ADD COLUMN d INT")
	if ended, err := dry.ended(30 * time.Second); !ended || err != nil {
		t.Fatalf("the dry-run rule's SELECT: ended %v, %v; want its full run", ended, err)
	}
	t.Logf("the dry-run rule's SELECT ran %s", time.Since(start).Round(time.Millisecond))
	f.waitValue("node2", hasColumn("d"), "1", 30*time.Second)
	testutil.WaitFor(t, 10*time.Second, "the dry-run report of wddry", func() (bool, string) {
		for _, e := range events("applier-dry-run", "dry_run") {
			if e.Session.ID == dry.id {
				return true, ""
			}
		}
		return false, ""
	})
	for _, e := range f.watchdogAudit() {
		if e.Detail["user"] == "wddry" && e.Detail["decision"] != "dry_run" {
			t.Errorf("wddry's session: %s", e.Message)
		}
	}

	// performance_schema names a blocker the processlist cannot: a session
	// idle in a transaction that read the table.
	f.exec("node2", "UPDATE performance_schema.setup_instruments SET ENABLED = 'YES' WHERE NAME = 'wait/lock/metadata/sql/mdl'")
	idle := openWDConn(t, f, "node2", "wdapp")
	idle.exec("BEGIN")
	idle.exec("SELECT * FROM wd.t")
	f.exec("node1", "ALTER TABLE wd.t ADD COLUMN e INT")
	f.waitValue("node2", hasColumn("e"), "1", 30*time.Second)
	var psKill *dbpilot.AuditEvent
	for _, e := range f.watchdogAudit() {
		if e.Detail["rule"] == watchdog.BuiltinReplicaApplierBlocked && e.Detail["session"] == fmt.Sprint(idle.id) {
			psKill = &e
		}
	}
	if psKill == nil || psKill.Detail["result"] != "killed" || !strings.Contains(psKill.Detail["reasons"], "performance_schema.metadata_locks") {
		t.Errorf("kill of the idle transaction: %+v", psKill)
	}
	t.Logf("audit:\n%s", f.auditText())
	mu.Lock()
	t.Logf("%d watchdog events in %d webhook payloads", len(hooked), payloads)
	mu.Unlock()
	metricValue(t, ms, `dbpilot_watchdog_kills_total{rule="replica_applier_blocked",result="killed",instance="`+f.key("node2").String()+`"}`, 2)
}
