package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/metrics"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestWatchdogInServe: serve's watchdog kills a SELECT SLEEP(100) busy for
// more than 2s within a few seconds, audits the kill and counts it; a rule
// in dry-run only logs, and the session it matched runs to its end.
func TestWatchdogInServe(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	dir := t.TempDir()
	ms, err := metrics.Open(metrics.Options{Dir: filepath.Join(dir, "metrics"), Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
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
	testutil.WaitFor(t, 5*time.Second, "watchdog audit events", func() (bool, string) {
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
		testutil.WaitFor(t, 5*time.Second, expr, func() (bool, string) {
			s, err := ms.QueryInstant(context.Background(), expr, time.Now())
			if err != nil {
				return false, err.Error()
			}
			return len(s) == 1 && len(s[0].Points) > 0 && s[0].Points[0].V == want, ""
		})
	}
}
