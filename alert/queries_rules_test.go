package alert

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// TestQueryRules evaluates the built-in query analytics rules with the real
// PromQL engine over series shaped as the collectors write them: one
// instance whose digest table filled up 5 minutes ago (lost digests grow),
// one full long ago (its lost counter stopped), one with no source for
// 10 minutes and one with performance_schema.
func TestQueryRules(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const seconds = 3600 - 60
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	write := func(port, s int, collector string, samples ...dbpilot.Sample) {
		t.Helper()
		b := dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, Cluster: "q", Role: "primary",
			Collector: collector, Time: t0.Add(time.Duration(s) * time.Second), Samples: samples}
		if err := st.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	lost := func(v float64) dbpilot.Sample {
		return dbpilot.Sample{Name: "mysql_global_status_performance_schema_lost_total", Type: dbpilot.Counter, Value: v,
			Labels: []dbpilot.Label{{Name: "instrumentation", Value: "digest"}}}
	}
	source := func(name string) dbpilot.Sample {
		return dbpilot.Sample{Name: "dbpilot_query_source", Type: dbpilot.Gauge, Value: 1, Labels: []dbpilot.Label{{Name: "source", Value: name}}}
	}
	for s := 0; s <= seconds; s += 10 {
		growing := 0.0
		if s > seconds-300 {
			growing = float64(s - (seconds - 300))
		}
		write(31001, s, "global_status", lost(growing))
		write(31002, s, "global_status", lost(min(float64(s), 600)))
		write(31001, s, "statements", source("performance_schema"))
		write(31002, s, "statements", source("performance_schema"))
		none := "performance_schema"
		if s > seconds-600 {
			none = "none"
		}
		write(31003, s, "statements", source(none))
	}
	at := t0.Add(seconds * time.Second)
	want := map[string][]int{"DigestTableFull": {31001}, "QueryStatisticsUnavailable": {31003}}
	checkRulesFire(t, st, at, want, nil)
}
