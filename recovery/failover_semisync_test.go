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
// the semi-sync timeout), and on again at the promotion.
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
		"SetSemiSync false true|WaitForGTID 0-1-10|StopReplica|ResetReplicaAll|SetSemiSync true false|SetReadOnly false"; got != want {
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
