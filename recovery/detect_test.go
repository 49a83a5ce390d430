package recovery

import (
	"context"
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

func TestHoldAutomatic(t *testing.T) {
	k := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "10.0.0.1", Port: p} }
	replica := func(p, src int) *dbpilot.Instance {
		return &dbpilot.Instance{Key: k(p), Channels: []dbpilot.ReplicationChannel{{Source: k(src)}}}
	}
	tree := []*dbpilot.Instance{{Key: k(1)}, replica(2, 1), replica(3, 1)}
	ring := []*dbpilot.Instance{replica(1, 2), replica(2, 1)}
	multi := []*dbpilot.Instance{{Key: k(1)}, {Key: k(2)}, replica(3, 1)}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	asked := 0
	notBlocked := func() time.Time { asked++; return time.Time{} }
	blocked := func() time.Time { return now }
	overlap := []dbpilot.Problem{{Message: "10.0.0.1:2 is also in cluster other"}}
	for _, tc := range []struct {
		name    string
		overlap []dbpilot.Problem
		members []*dbpilot.Instance
		blocked func() time.Time
		event   string
	}{
		{"a tree", nil, tree, notBlocked, ""},
		{"overlap", overlap, tree, notBlocked, "auto-failover-suspended"},
		{"ring", nil, ring, notBlocked, "auto-failover-skipped"},
		{"multi-source", nil, multi, notBlocked, "auto-failover-skipped"},
		{"blocked", nil, tree, blocked, "blocked"},
	} {
		h := HoldAutomatic("c", tc.overlap, tc.members, tc.blocked)
		if h.Event != tc.event || (tc.event != "" && h.Message == "") {
			t.Errorf("%s: hold %+v, want event %q", tc.name, h, tc.event)
		}
	}
	if asked != 1 {
		t.Errorf("the block was read %d times, want once (only when nothing else holds)", asked)
	}
	if h := HoldAutomatic("c", nil, tree, blocked); !strings.Contains(h.Message, "dbpilot ack c") || !strings.Contains(h.Message, now.Format(time.RFC3339)) {
		t.Errorf("blocked message %q", h.Message)
	}
}

// TestConfirmHungPrimary: a hung primary (no answer) whose replicas' IO
// threads still run is dead only once the replicas' silence is noted on
// the fresh reads before the verdict (annotate): without it the round saw
// two live links, and detection waited for slave_net_timeout.
func TestConfirmHungPrimary(t *testing.T) {
	p := dbpilot.InstanceKey{Host: "10.0.0.1", Port: 3306}
	r1 := dbpilot.InstanceKey{Host: "10.0.0.2", Port: 3306}
	r2 := dbpilot.InstanceKey{Host: "10.0.0.3", Port: 3306}
	replica := func(k dbpilot.InstanceKey) *dbpilot.Instance {
		return &dbpilot.Instance{Key: k, Reachable: true, Channels: []dbpilot.ReplicationChannel{{
			Source: p, IORunning: dbpilot.IORunning, SQLRunning: true, HeartbeatPeriod: time.Second}}}
	}
	primary := &dbpilot.Instance{Key: p, LastError: "mysql: connect on 10.0.0.1:3306: timed out"}
	members := []*dbpilot.Instance{primary, replica(r1), replica(r2)}
	reprobe := func(context.Context) *dbpilot.Instance {
		return &dbpilot.Instance{Key: p, LastError: "mysql: probe: no answer"}
	}
	inspect := func(_ context.Context, k dbpilot.InstanceKey) (*dbpilot.Instance, error) { return replica(k), nil }
	now := func() time.Time { return time.Unix(1000, 0) }

	v, fresh := Confirm(context.Background(), primary, members, reprobe, inspect, now, nil)
	if v.State == dbpilot.ClusterDead || len(fresh) != 2 {
		t.Fatalf("replicas receiving: %s (%s), %d fresh; want not dead", v.State, v.Reason, len(fresh))
	}
	silent := func(fresh []*dbpilot.Instance) {
		for _, in := range fresh {
			for i := range in.Channels {
				in.Channels[i].SourceSilentFor = 3 * time.Second
			}
		}
	}
	if v, _ = Confirm(context.Background(), primary, members, reprobe, inspect, now, silent); v.State != dbpilot.ClusterDead {
		t.Fatalf("replicas silent 3 s (heartbeat 1 s): %s (%s); want dead", v.State, v.Reason)
	}
	// A primary that answers is alive however silent its replicas.
	answers := func(context.Context) *dbpilot.Instance { return &dbpilot.Instance{Key: p, Reachable: true} }
	if v, _ = Confirm(context.Background(), primary, members, answers, inspect, now, silent); v.State == dbpilot.ClusterDead {
		t.Fatalf("primary answers: %s; want not dead", v.State)
	}
}
