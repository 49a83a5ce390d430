package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/watchdog"
	driver "github.com/go-sql-driver/mysql"
)

// wdQuerier replays a processlist and fails every KILL with err.
type wdQuerier struct {
	rows  *mysql.Rows
	err   error
	mu    sync.Mutex
	kills []string
}

func (q *wdQuerier) Query(ctx context.Context, query string, args ...any) (*mysql.Rows, error) {
	return q.rows, nil
}

func (q *wdQuerier) Exec(ctx context.Context, stmts ...string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.kills = append(q.kills, stmts...)
	return q.err
}

// TestWatchdogKillFails: a KILL that fails (the session went between the
// read and the KILL; a missing privilege) is logged once, audited and
// counted with its result, and not retried while the session keeps
// matching.
func TestWatchdogKillFails(t *testing.T) {
	s := func(v string) *string { return &v }
	rows := &mysql.Rows{Columns: []string{"SELF", "ID", "USER", "HOST", "DB", "COMMAND", "TIME", "STATE", "INFO", "TIME_MS"},
		Values: [][]*string{
			{s("5"), s("5"), s("dbpilot"), s("127.0.0.1:4000"), nil, s("Query"), s("0"), s(""), s("SELECT 1"), s("0.1")},
			{s("5"), s("7"), s("app"), s("127.0.0.1:5000"), nil, s("Query"), s("9"), s("User sleep"), s("SELECT SLEEP(100)"), s("9000")},
		}}
	rules, err := watchdog.Parse("rules.yaml", []byte("rules: [{name: r, busy: 2s, action: kill_query, dry_run: false}]"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		number uint16
		result string
	}{{1094, killGone}, {1095, killDenied}, {2013, killFailed}} {
		t.Run(tc.result, func(t *testing.T) {
			q := &wdQuerier{rows: rows, err: &driver.MySQLError{Number: tc.number, Message: "no"}}
			var logs bytes.Buffer
			var audits []dbpilot.AuditEvent
			w := newWatchdogCollector(rules, watchdog.Own{}, 0, "main", func(_ context.Context, e dbpilot.AuditEvent) { audits = append(audits, e) },
				nil, slog.New(slog.NewTextHandler(&logs, nil)))
			target := collector.Target{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, Flavor: dbpilot.FlavorMariaDB, Role: "primary"}
			var samples []dbpilot.Sample
			for range 3 {
				if samples, err = w.Collect(context.Background(), q, target); err != nil {
					t.Fatal(err)
				}
			}
			if len(q.kills) != 1 || q.kills[0] != "KILL QUERY 7" {
				t.Errorf("KILLs run: %v, want one KILL QUERY 7", q.kills)
			}
			if n := strings.Count(logs.String(), "kill failed"); n != 1 {
				t.Errorf("%d log lines, want 1:\n%s", n, logs.String())
			}
			if len(audits) != 1 || audits[0].Detail["result"] != tc.result || audits[0].Detail["decision"] != "kill" {
				t.Errorf("audit: %+v", audits)
			}
			found := false
			for _, m := range samples {
				if m.Name == MetricWatchdogKills && m.Labels[1].Value == tc.result && m.Value == 1 {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s{result=%q} = 1 in %+v", MetricWatchdogKills, tc.result, samples)
			}
		})
	}
}
