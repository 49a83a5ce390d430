package alert

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// TestRestartRule evaluates the built-in MySQLRestarted with the real
// PromQL engine over uptime series shaped as the global_status collector
// writes them (every second; a run that cannot reach the server writes
// mysql_up 0 and no uptime, which ends the series). Only a restart serve
// saw fires: not a server seen for the first time (a fresh sandbox), nor
// one that started shortly before serve did.
func TestRestartRule(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const seconds = 1800
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// uptime at second s: the server's uptime, or -1 when it is down (or not
	// monitored yet, when seen is false).
	type server struct {
		uptime func(s int) (up float64, seen bool)
		role   func(s int) string
	}
	always := func(up float64) func(int) (float64, bool) {
		return func(s int) (float64, bool) { return up + float64(s), true }
	}
	primary := func(int) string { return "primary" }
	servers := map[int]server{
		// Up for days.
		31001: {always(86400), primary},
		// A fresh sandbox: first seen a minute ago with an uptime of 2 s.
		31002: {func(s int) (float64, bool) {
			if s < seconds-60 {
				return 0, false
			}
			return float64(s - (seconds - 60) + 2), true
		}, primary},
		// Started 100 s before serve, which first saw it 2 minutes ago.
		31003: {func(s int) (float64, bool) {
			if s < seconds-120 {
				return 0, false
			}
			return float64(100 + s - (seconds - 120)), true
		}, primary},
		// Crashed 90 s ago, down for 30 s, up again for 60 s.
		31004: {func(s int) (float64, bool) {
			switch {
			case s < seconds-90:
				return float64(5000 + s), true
			case s < seconds-60:
				return -1, true
			}
			return float64(s - (seconds - 60)), true
		}, primary},
		// The old primary of a failover: killed, back 2 minutes later as a
		// replica (new series under another role label).
		31005: {func(s int) (float64, bool) {
			switch {
			case s < seconds-200:
				return float64(7000 + s), true
			case s < seconds-80:
				return -1, true
			}
			return float64(s - (seconds - 80)), true
		}, func(s int) string {
			if s < seconds-80 {
				return "primary"
			}
			return "replica"
		}},
		// Restarted 400 s ago: no longer news.
		31006: {func(s int) (float64, bool) {
			if s < seconds-400 {
				return float64(9000 + s), true
			}
			return float64(s - (seconds - 400)), true
		}, primary},
	}
	for s := 0; s <= seconds; s++ {
		for port, srv := range servers {
			up, seen := srv.uptime(s)
			if !seen {
				continue
			}
			samples := []dbpilot.Sample{{Name: "mysql_up", Type: dbpilot.Gauge, Value: 1}}
			if up < 0 {
				samples[0].Value = 0
			} else {
				samples = append(samples, dbpilot.Sample{Name: "mysql_global_status_uptime", Type: dbpilot.Counter, Value: up})
			}
			b := dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, Cluster: "c", Role: srv.role(s),
				Collector: "global_status", Time: t0.Add(time.Duration(s) * time.Second), Samples: samples}
			if err := st.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := t0.Add(seconds * time.Second)
	checkRulesFire(t, st, at, map[string][]int{"MySQLRestarted": {31004, 31005}}, func(r Rule, labels map[string]string) {
		if labels["instance"] == "127.0.0.1:31005" && labels["role"] != "replica" {
			t.Errorf("%s: %v, want the series of its new role", r.Name, labels)
		}
	})
	// The value is the uptime: "restarted 1 minute ago".
	for _, r := range DefaultRules() {
		if r.Name != "MySQLRestarted" {
			continue
		}
		series, err := st.QueryInstant(ctx, r.Expr, at)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range series {
			if s.Labels["instance"] == "127.0.0.1:31004" && s.Points[len(s.Points)-1].V != 60 {
				t.Errorf("%s value %v, want its uptime 60", s.Labels["instance"], s.Points[len(s.Points)-1].V)
			}
		}
	}
}
