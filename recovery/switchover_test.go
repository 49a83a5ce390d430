package recovery

import (
	"context"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestSwitchoverPromotionFailsRollsBack(t *testing.T) {
	f := exNewFake(exMaria(1, "0-1-20", ""), exMaria(2, "0-1-20", "0-1-20", exOld))
	f.fail["SetSemiSync "+exCand.String()] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: set semi-sync on %s: lost connection", exCand)
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, rec)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "switchover to 10.0.0.1:2 failed; rolled back, 10.0.0.1:1 is the primary again") {
		t.Fatalf("error = %v", err)
	}
	if rec.Success || !rec.NewPrimary.IsZero() {
		t.Errorf("rec = %+v", rec)
	}
	// The candidate lost its channel in the promotion: put back under the
	// old primary, read-only.
	if got, want := strings.Join(f.callsOf(exCand), "|"),
		"StopReplica|ResetReplicaAll|SetSemiSync false false|SetReadOnly true|ChangeSource 10.0.0.1:1 channel= ignore=[]|StartReplica"; got != want {
		t.Errorf("candidate calls:\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(f.callsOf(exOld), "|"), "SetReadOnly true|KillClientConnections|SetReadOnly false"; got != want {
		t.Errorf("old primary calls:\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(a.names(), ","), "read-only,kill,catch-up,rollback,failed"; got != want {
		t.Errorf("audit %s, want %s", got, want)
	}
}

func TestSwitchoverRollbackFails(t *testing.T) {
	f := exNewFake(exMaria(1, "0-1-20", ""), exMaria(2, "0-1-20", "0-1-20", exOld))
	f.fail["SetReadOnly "+exOld.String()] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: set read_only on %s: lost connection", exOld)
	a := &exAudit{}
	err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, &dbpilot.Recovery{})
	want := "switchover to 10.0.0.1:2 failed and the rollback failed too (mysql: set read_only on 10.0.0.1:1: lost connection); check 10.0.0.1:1 and 10.0.0.1:2 by hand"
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v", err)
	}
	var incomplete bool
	for _, ev := range a.ev {
		if ev.Event == dbpilot.AuditRollback && strings.HasPrefix(ev.Message, "rollback incomplete") && ev.Detail["error"] != "" {
			incomplete = true
		}
	}
	if !incomplete {
		t.Errorf("no incomplete rollback audited: %v", a.names())
	}
	if got := f.callsOf(exCand); len(got) != 0 {
		t.Errorf("candidate calls: %v", got)
	}
}

// TestSwitchoverWritableLast: the replicas and the old primary are pointed
// at the candidate before it becomes writable, so a semi-sync primary's
// first commits find an acknowledger.
func TestSwitchoverWritableLast(t *testing.T) {
	old := exMaria(1, "0-1-20", "")
	f := exNewFake(old, exMaria(2, "0-1-20", "0-1-20", exOld), exMaria(3, "0-1-20", "0-1-20", exOld))
	rec := &dbpilot.Recovery{}
	p := &Plan{Kind: dbpilot.RecoverySwitchover, OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}
	if err := (&Executor{Ctl: exPositioning{f}, Opt: exOptions()}).Switchover(context.Background(), p, rec); err != nil {
		t.Fatal(err)
	}
	at := func(line string) int {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, c := range f.calls {
			if c == line {
				return i
			}
		}
		t.Fatalf("no call %q in %v", line, f.calls)
		return -1
	}
	writable := at("SetReadOnly " + exCand.String() + " false")
	for _, started := range []string{"StartReplica " + exR1.String(), "StartReplica " + exOld.String()} {
		if at(started) > writable {
			t.Errorf("%s after the candidate became writable: %v", started, f.calls)
		}
	}
	if !rec.Success || len(rec.LostReplicas) != 0 {
		t.Errorf("rec = %+v", rec)
	}
}

// TestSwitchoverWritableFailsRollsBack: the candidate cannot be made
// writable after the old primary started replicating from it: the old
// primary leaves that replication and is the primary again, the candidate
// goes back below it.
func TestSwitchoverWritableFailsRollsBack(t *testing.T) {
	f := exNewFake(exMaria(1, "0-1-20", ""), exMaria(2, "0-1-20", "0-1-20", exOld))
	f.fail["SetReadOnly "+exCand.String()] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: set read_only on %s: lost connection", exCand)
	rec := &dbpilot.Recovery{}
	err := (&Executor{Ctl: exPositioning{f}, Opt: exOptions()}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, rec)
	if err == nil || !strings.Contains(err.Error(), "failed and the rollback failed too") && !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("error = %v", err)
	}
	got := strings.Join(f.callsOf(exOld), "|")
	want := "SetReadOnly true|KillClientConnections|StopReplica|SetReplicaPosition 0-1-20|ChangeSource 10.0.0.1:2 channel= ignore=[]|SetSemiSync false false|StartReplica|StopReplica|ResetReplicaAll|SetReadOnly false"
	if got != want {
		t.Errorf("old primary calls:\n got %s\nwant %s", got, want)
	}
	if rec.Success || !rec.NewPrimary.IsZero() {
		t.Errorf("rec = %+v", rec)
	}
}
