package alert

import (
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// TestReplicaWillNotCatchUpRule evaluates ReplicaWillNotCatchUp over series
// shaped as serve writes them (daemon/apply.go): 32001 falls behind (beyond
// the horizon) for 3 minutes, 32002 catches up within it, 32003 was beyond
// it for 1 minute only (under the rule's for: 2m).
func TestReplicaWillNotCatchUpRule(t *testing.T) {
	st, t0, writeSamples := ruleSeries(t, "replica")
	write := func(port, s int, beyond float64) {
		t.Helper()
		writeSamples(port, s, "apply", dbpilot.Sample{Name: "dbpilot_replica_catchup_beyond_horizon", Type: dbpilot.Gauge, Value: beyond})
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
