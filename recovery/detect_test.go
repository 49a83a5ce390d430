package recovery

import (
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestBlockedUntil(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	block := time.Hour
	failover := func(ended time.Duration, acked bool) *dbpilot.Recovery {
		return &dbpilot.Recovery{Kind: dbpilot.RecoveryFailoverAuto, Started: now.Add(ended - time.Second), Ended: now.Add(ended), Acked: acked}
	}
	for _, tc := range []struct {
		name string
		recs []*dbpilot.Recovery
		want time.Time
	}{
		{"none", nil, time.Time{}},
		{"recent failover", []*dbpilot.Recovery{failover(-10*time.Minute, false)}, now.Add(50 * time.Minute)},
		{"acknowledged", []*dbpilot.Recovery{failover(-10*time.Minute, true)}, time.Time{}},
		{"expired", []*dbpilot.Recovery{failover(-2*time.Hour, false)}, time.Time{}},
		{"still running: from its start", []*dbpilot.Recovery{{Kind: dbpilot.RecoveryFailoverManual, Started: now.Add(-time.Minute)}}, now.Add(59 * time.Minute)},
		{"a switchover after it lifts it", []*dbpilot.Recovery{{Kind: dbpilot.RecoverySwitchover, Ended: now}, failover(-10*time.Minute, false)}, time.Time{}},
		{"relocations and rejoins do not", []*dbpilot.Recovery{{Kind: dbpilot.RecoveryRelocate, Ended: now}, {Kind: dbpilot.RecoveryRejoin, Ended: now}, failover(-10*time.Minute, false)}, now.Add(50 * time.Minute)},
	} {
		if got := BlockedUntil(tc.recs, block, now); !got.Equal(tc.want) {
			t.Errorf("%s: blocked until %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDecideReturning(t *testing.T) {
	mk := func(port int, state string) *dbpilot.Instance {
		return &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "10.0.0.1", Port: port}, Reachable: true, Flavor: dbpilot.FlavorMariaDB, ServerID: uint32(port),
			GTID: dbpilot.GTIDState{Mode: "ON", BinlogState: state, BinlogPos: state, CurrentPos: state}}
	}
	p := mk(2, "0-2-14")
	clean, errant := mk(1, "0-1-12"), mk(1, "0-1-13")
	p.GTID.BinlogState = "0-1-12,0-2-14"
	clean.GTID.BinlogState = "0-1-12"
	errant.GTID.BinlogState = "0-1-13"

	if r, err := DecideReturning(clean, p, true); err != nil || !r.Rejoin || r.Note != "" {
		t.Errorf("clean, rejoin on: %+v, %v", r, err)
	}
	if r, err := DecideReturning(clean, p, false); err != nil || r.Rejoin || !strings.Contains(r.Note, "rejoin is off") {
		t.Errorf("clean, rejoin off: %+v, %v", r, err)
	}
	r, err := DecideReturning(errant, p, true)
	if err != nil || r.Rejoin || r.Detail["errant"] != "0-1-13" || !strings.Contains(r.Note, "--reclone") {
		t.Errorf("errant, rejoin on: %+v, %v", r, err)
	}
}
