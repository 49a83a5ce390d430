package alert

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// TestReplicaWillNotCatchUpRule evaluates ReplicaWillNotCatchUp over series
// shaped as serve writes them (daemon/apply.go): 32001 falls behind (beyond
// the horizon) for 3 minutes, 32002 catches up within it, 32003 was beyond
// it for 1 minute only (under the rule's for: 2m).
func TestReplicaWillNotCatchUpRule(t *testing.T) {
	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	write := func(port, s int, beyond float64) {
		t.Helper()
		b := dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, Cluster: "c", Role: "replica",
			Collector: "apply", Time: t0.Add(time.Duration(s) * time.Second), Samples: []dbpilot.Sample{
				{Name: "dbpilot_replica_catchup_beyond_horizon", Type: dbpilot.Gauge, Value: beyond}}}
		if err := st.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for s := 0; s <= 180; s++ {
		write(32001, s, 1)
		write(32002, s, 0)
		write(32003, s, map[bool]float64{true: 1, false: 0}[s >= 120])
	}
	var rule *Rule
	for _, r := range DefaultRules() {
		if r.Name == "ReplicaWillNotCatchUp" {
			rule = &r
		}
	}
	if rule == nil {
		t.Fatal("ReplicaWillNotCatchUp is not built in")
	}
	if rule.For != 2*time.Minute {
		t.Errorf("for: %s, want 2m (a prediction flaps; the alert must not)", rule.For)
	}
	// The expression matches every replica beyond the horizon now; the
	// evaluator's for: keeps 32003 pending (1 min) and fires 32001.
	checkRulesFire(t, st, t0.Add(180*time.Second), map[string][]int{"ReplicaWillNotCatchUp": {32001, 32003}}, nil)
}
