package alert

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// TestBackupRules evaluates the built-in binlog backup rules with the real
// PromQL engine over series shaped as serve writes them (collector
// binlog_backup, instance the cluster's first seed, label dir): cluster a
// streams and is caught up; b is down for 5 minutes without a gap; c has a
// gap; d lags 2 minutes behind; e set transactions aside 10 minutes ago.
func TestBackupRules(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const seconds = 3600 - 60
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	type state struct{ up, gap, lag, aside float64 }
	clusters := map[int]func(s int) state{
		41001: func(int) state { return state{up: 1} },
		41002: func(s int) state {
			if s > seconds-300 {
				return state{}
			}
			return state{up: 1}
		},
		41003: func(s int) state {
			if s > seconds-120 {
				return state{gap: 1}
			}
			return state{up: 1}
		},
		41004: func(s int) state {
			if s > seconds-300 {
				return state{up: 1, lag: 120}
			}
			return state{up: 1}
		},
		41005: func(s int) state {
			if s > seconds-600 {
				return state{up: 1, aside: 3}
			}
			return state{up: 1}
		},
	}
	for s := 0; s <= seconds; s += 5 {
		for port, f := range clusters {
			v := f(s)
			dir := []dbpilot.Label{{Name: "dir", Value: "/backups/binlog"}}
			samples := []dbpilot.Sample{
				{Name: "dbpilot_binlog_backup_up", Type: dbpilot.Gauge, Value: v.up, Labels: dir},
				{Name: "dbpilot_binlog_backup_gap", Type: dbpilot.Gauge, Value: v.gap, Labels: dir},
				{Name: "dbpilot_binlog_backup_set_aside_transactions_total", Type: dbpilot.Counter, Value: v.aside, Labels: dir},
			}
			if v.up == 1 {
				samples = append(samples, dbpilot.Sample{Name: "dbpilot_binlog_backup_lag_seconds", Type: dbpilot.Gauge, Value: v.lag, Labels: dir})
			}
			b := dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, Cluster: "c", Role: "primary",
				Collector: "binlog_backup", Time: t0.Add(time.Duration(s) * time.Second), Samples: samples}
			if err := st.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := t0.Add(seconds * time.Second)
	want := map[string][]int{
		"BinlogBackupGap":      {41003},
		"BinlogBackupDown":     {41002},
		"BinlogBackupLagging":  {41004},
		"BinlogBackupSetAside": {41005},
	}
	checkRulesFire(t, st, at, want, func(r Rule, labels map[string]string) {
		if labels["dir"] == "" {
			t.Errorf("%s: no dir label on %v", r.Name, labels)
		}
	})
}
