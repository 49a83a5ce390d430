package recovery

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// TestFailoverQuietsCandidateSemiSyncPrimary: a candidate with both
// semi-sync sides on and no semi-sync replica of its own gets its primary
// side off before it applies its relay log (each applied commit would wait
// the semi-sync timeout), and on again at the promotion, with its replica
// side kept.
func TestFailoverQuietsCandidateSemiSyncPrimary(t *testing.T) {
	cand := exMaria(2, "0-1-8", "0-1-8", exOld)
	cand.Channels[0].GTIDIOPos = "0-1-10"
	cand.SemiSync = dbpilot.SemiSyncState{PrimaryEnabled: true, ReplicaEnabled: true, PrimaryTimeout: 10 * time.Second}
	r1 := exMaria(3, "0-1-10", "0-1-10", exOld)
	f := exNewFake(cand, r1)
	a := &exAudit{}
	e := &Executor{Ctl: f, Audit: a, Opt: Options{SemiSync: true, RepointVerify: 400 * time.Millisecond}}
	rec := &dbpilot.Recovery{}
	if err := e.Failover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}, rec); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.callsOf(exCand), "|"),
		"SetSemiSync false true|WaitForGTID 0-1-10|StopReplica|ResetReplicaAll|SetSemiSync true true|SetReadOnly false"; got != want {
		t.Errorf("candidate calls:\n got %s\nwant %s", got, want)
	}
	if names := a.names(); len(names) == 0 || names[0] != dbpilot.AuditSemiSync {
		t.Errorf("audit %v, want semi-sync first", names)
	}

	// With a semi-sync replica of its own, nothing to do.
	cand.SemiSync.PrimaryClients = 1
	f = exNewFake(cand, r1)
	if err := (&Executor{Ctl: f, Opt: exOptions()}).Failover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, &dbpilot.Recovery{}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(f.callsOf(exCand), "SetSemiSync false true") {
		t.Errorf("candidate with a semi-sync replica: %v", f.callsOf(exCand))
	}
}

// TestSwitchoverRestoresQuietedSemiSync: a switchover that fails gives the
// candidate its semi-sync primary side back.
func TestSwitchoverRestoresQuietedSemiSync(t *testing.T) {
	cand := exMaria(2, "0-1-18", "0-1-18", exOld)
	cand.SemiSync = dbpilot.SemiSyncState{PrimaryEnabled: true, ReplicaEnabled: true}
	f := exNewFake(exMaria(1, "0-1-20", ""), cand)
	f.waitErr[exCand] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: wait for GTID on %s: not reached", exCand)
	err := (&Executor{Ctl: f, Opt: exOptions()}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, &dbpilot.Recovery{})
	if err == nil {
		t.Fatal("switchover to a candidate that does not catch up succeeded")
	}
	calls := f.callsOf(exCand)
	if len(calls) < 2 || calls[0] != "SetSemiSync false true" || calls[len(calls)-1] != "SetSemiSync true true" {
		t.Errorf("candidate calls: %v", calls)
	}
}

// exBoth sets both semi-sync sides on, with no semi-sync replica connected.
func exBoth(i *dbpilot.Instance) *dbpilot.Instance {
	i.SemiSync = dbpilot.SemiSyncState{PrimaryEnabled: true, PrimaryActive: true, ReplicaEnabled: true, ReplicaActive: true, PrimaryTimeout: 10 * time.Second}
	return i
}

// callIndex is the position of the first recorded call "op key args", or -1.
func (f *exFakeCtl) callIndex(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Index(f.calls, call)
}

// TestFailoverSemiSyncEverywhere: both semi-sync sides on every server. The
// replicas' primary sides go off before anything else (their appliers, and
// STOP SLAVE with them, would wait for an acknowledgement nobody sends),
// the candidate becomes a semi-sync primary with both sides kept, the
// replicas attach as semi-sync replicas, and once they have applied the new
// primary's position their primary side is on again.
func TestFailoverSemiSyncEverywhere(t *testing.T) {
	cand := exBoth(exMaria(2, "0-1-8", "0-1-8", exOld))
	cand.Channels[0].GTIDIOPos = "0-1-10"
	r1 := exBoth(exMaria(3, "0-1-7", "0-1-7", exOld))
	r2 := exBoth(exMaria(4, "0-1-10", "0-1-10", exOld))
	f := exNewFake(cand, r1, r2)
	a := &exAudit{}
	// The cluster is not configured for semi-sync: the servers' own setting
	// is kept.
	e := &Executor{Ctl: f, Audit: a, Opt: exOptions()}
	rec := &dbpilot.Recovery{}
	p := &Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1, exR2}}
	if err := e.Failover(context.Background(), p, rec); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.callsOf(exCand), "|"),
		"SetSemiSync false true|WaitForGTID 0-1-10|StopReplica|ResetReplicaAll|SetSemiSync true true|SetReadOnly false"; got != want {
		t.Errorf("candidate calls:\n got %s\nwant %s", got, want)
	}
	for _, r := range []dbpilot.InstanceKey{exR1, exR2} {
		calls := f.callsOf(r)
		want := []string{"SetSemiSync false true", "StopReplica", "ChangeSource 10.0.0.1:2 channel= ignore=[]", "SetSemiSync false true", "StartReplica"}
		if len(calls) < len(want)+1 || !slices.Equal(calls[:len(want)], want) || calls[len(calls)-1] != "SetSemiSync true true" {
			t.Errorf("%s calls: %v", r, calls)
		}
		// Quieted before the candidate applies anything, restored after
		// the candidate is writable.
		if q, w := f.callIndex("SetSemiSync "+r.String()+" false true"), f.callIndex("WaitForGTID "+exCand.String()+" 0-1-10"); q < 0 || q > w {
			t.Errorf("%s quieted at call %d, candidate's relay log applied at %d", r, q, w)
		}
		if back, writable := f.callIndex("SetSemiSync "+r.String()+" true true"), f.callIndex("SetReadOnly "+exCand.String()+" false"); back < writable {
			t.Errorf("%s primary side back at call %d, before the candidate was writable (%d)", r, back, writable)
		}
	}
	// r1 was behind the new primary: it caught up before its side came back.
	if got := f.callsOf(exR1); !slices.Contains(got, "WaitForGTID 0-1-8") {
		t.Errorf("r1 restored without catching up: %v", got)
	}
	if !rec.Success || len(rec.LostReplicas) != 0 {
		t.Errorf("rec = %+v", rec)
	}
	var quiet, back int
	for _, ev := range a.ev {
		if ev.Event != dbpilot.AuditSemiSync {
			continue
		}
		switch {
		case strings.Contains(ev.Message, "turned off"):
			quiet++
		case strings.Contains(ev.Message, "on again"):
			back++
		}
	}
	if quiet != 3 || back != 2 {
		t.Errorf("semi-sync audit: %d quieted (want 3), %d restored (want 2): %v", quiet, back, a.names())
	}
}

// TestFailoverSemiSyncRestoreWaitsForCatchUp: a replica that does not apply
// the new primary's position in time keeps its primary side off, audited;
// a lost replica is not touched again.
func TestFailoverSemiSyncRestoreWaitsForCatchUp(t *testing.T) {
	cand := exBoth(exMaria(2, "0-1-10", "0-1-10", exOld))
	r1 := exBoth(exMaria(3, "0-1-9", "0-1-9", exOld))
	r2 := exBoth(exMaria(4, "0-1-10", "0-1-10", exOld))
	f := exNewFake(cand, r1, r2)
	f.waitErr[exR1] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: wait for GTID on %s: not reached", exR1)
	f.broken[exR2] = true
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	if err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Failover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1, exR2}}, rec); err != nil {
		t.Fatal(err)
	}
	for _, r := range []dbpilot.InstanceKey{exR1, exR2} {
		if slices.Contains(f.callsOf(r), "SetSemiSync true true") {
			t.Errorf("%s got its primary side back: %v", r, f.callsOf(r))
		}
	}
	if !slices.Equal(rec.LostReplicas, []dbpilot.InstanceKey{exR2}) {
		t.Errorf("lost = %v", rec.LostReplicas)
	}
	var leftOff bool
	for _, ev := range a.ev {
		if ev.Event == dbpilot.AuditSemiSync && ev.Instance == exR1 && strings.Contains(ev.Message, "keeps its semi-sync primary side off") &&
			strings.Contains(ev.Message, "rpl_semi_sync_master_enabled=ON") {
			leftOff = true
		}
	}
	if !leftOff {
		t.Errorf("r1 left off without saying so: %v", a.names())
	}
}

// TestFailoverSemiSyncGivenBackOnFailure: a failover that fails before the
// promotion gives every server it quieted its primary side back.
func TestFailoverSemiSyncGivenBackOnFailure(t *testing.T) {
	cand := exBoth(exMaria(2, "0-1-8", "0-1-8", exOld))
	cand.Channels[0].GTIDIOPos = "0-1-10"
	r1 := exBoth(exMaria(3, "0-1-10", "0-1-10", exOld))
	f := exNewFake(cand, r1)
	f.waitErr[exCand] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: wait for GTID on %s: connection refused", exCand)
	err := (&Executor{Ctl: f, Opt: exOptions()}).Failover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}, &dbpilot.Recovery{})
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL {
		t.Fatalf("error = %v", err)
	}
	if got, want := strings.Join(f.callsOf(exR1), "|"), "SetSemiSync false true|SetSemiSync true true"; got != want {
		t.Errorf("replica calls:\n got %s\nwant %s", got, want)
	}
	if calls := f.callsOf(exCand); calls[len(calls)-1] != "SetSemiSync true true" {
		t.Errorf("candidate calls: %v", calls)
	}
}

// TestFailoverSemiSyncConfiguredOnly: with Opt.SemiSync and the sandbox's
// layout (primary side on the primary, replica side on the replicas)
// nothing is quieted or restored, and the candidate becomes a semi-sync
// primary without a replica side.
func TestFailoverSemiSyncConfiguredOnly(t *testing.T) {
	cand := exMaria(2, "0-1-10", "0-1-10", exOld)
	cand.SemiSync.ReplicaEnabled = true
	r1 := exMaria(3, "0-1-10", "0-1-10", exOld)
	r1.SemiSync.ReplicaEnabled = true
	f := exNewFake(cand, r1)
	opt := exOptions()
	opt.SemiSync = true
	if err := (&Executor{Ctl: f, Opt: opt}).Failover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}, &dbpilot.Recovery{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.callsOf(exCand), "|"), "StopReplica|ResetReplicaAll|SetSemiSync true false|SetReadOnly false"; got != want {
		t.Errorf("candidate calls:\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(f.callsOf(exR1), "|"), "StopReplica|ChangeSource 10.0.0.1:2 channel= ignore=[]|SetSemiSync false true|StartReplica"; got != want {
		t.Errorf("replica calls:\n got %s\nwant %s", got, want)
	}
}

// TestSwitchoverSemiSyncEverywhere: in a switchover the other replicas'
// primary sides go off before writes stop, and come back after, with the
// old primary's (it had both sides on).
func TestSwitchoverSemiSyncEverywhere(t *testing.T) {
	old := exBoth(exMaria(1, "0-1-20", ""))
	old.SemiSync.PrimaryClients = 2
	cand := exBoth(exMaria(2, "0-1-20", "0-1-20", exOld))
	r1 := exBoth(exMaria(3, "0-1-20", "0-1-20", exOld))
	f := exNewFake(old, cand, r1)
	rec := &dbpilot.Recovery{}
	if err := (&Executor{Ctl: exPositioning{f}, Opt: exOptions()}).Switchover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}, rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Success {
		t.Fatalf("rec = %+v", rec)
	}
	if q, ro := f.callIndex("SetSemiSync "+exR1.String()+" false true"), f.callIndex("SetReadOnly "+exOld.String()+" true"); q < 0 || q > ro {
		t.Errorf("replica quieted at call %d, writes stopped at %d", q, ro)
	}
	for _, k := range []dbpilot.InstanceKey{exOld, exR1} {
		if calls := f.callsOf(k); calls[len(calls)-1] != "SetSemiSync true true" {
			t.Errorf("%s calls: %v", k, calls)
		}
	}
	if got := f.callsOf(exCand); !slices.Contains(got, "SetSemiSync true true") {
		t.Errorf("candidate calls: %v", got)
	}
}
