package recovery

import (
	"context"
	"strings"
	"testing"
	"time"

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

// exThreads is a exFakeCtl that reads applier threads.
type exThreads struct {
	*exFakeCtl
	threads map[dbpilot.InstanceKey][]dbpilot.ApplierThread
}

func (f exThreads) ApplierThreads(_ context.Context, key dbpilot.InstanceKey) ([]dbpilot.ApplierThread, error) {
	return f.threads[key], nil
}

// TestSwitchoverPrecheckRefuses: a candidate that cannot apply what it
// has left in time is refused before anything changes, in one line that
// names it, its backlog and switchover.max_lag.
func TestSwitchoverPrecheckRefuses(t *testing.T) {
	behind := func(s int64) func(*dbpilot.Instance) {
		return func(in *dbpilot.Instance) { in.Channels[0].SecondsBehind = &s }
	}
	tests := []struct {
		name    string
		cand    func(*dbpilot.Instance)
		threads []dbpilot.ApplierThread
		maxLag  time.Duration
		want    string
	}{
		{name: "stalled", cand: func(*dbpilot.Instance) {},
			want: "switchover: candidate 10.0.0.1:2 is not ready, nothing changed: 5 transactions to apply and none applied in 500ms: its applier is not progressing, so it cannot catch up within switchover.max_lag (10s); let it catch up, or choose another candidate"},
		{name: "a worker waits for a lock", cand: func(*dbpilot.Instance) {}, threads: []dbpilot.ApplierThread{{ID: 3, State: "Waiting for table metadata lock", Wait: "Waiting for table metadata lock"}},
			want: "5 transactions to apply and its applier waits for a lock (Waiting for table metadata lock): it cannot catch up within switchover.max_lag (10s)"},
		{name: "lagging", cand: behind(30), maxLag: 20 * time.Second,
			want: "30s behind its source (Seconds_Behind_Master) with 5 transactions to apply: over switchover.max_lag (20s)"},
		{name: "SQL thread stopped", cand: func(in *dbpilot.Instance) { in.Channels[0].SQLRunning = false },
			want: "5 transactions received but not applied and its SQL thread is stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cand := exMaria(2, "0-1-15", "0-1-15", exOld)
			cand.Channels[0].GTIDIOPos = "0-1-20"
			tt.cand(cand)
			f := exNewFake(exMaria(1, "0-1-20", ""), cand)
			a := &exAudit{}
			opt := exOptions()
			opt.MaxLag = tt.maxLag
			ctl := exThreads{f, map[dbpilot.InstanceKey][]dbpilot.ApplierThread{exCand: tt.threads}}
			rec := &dbpilot.Recovery{}
			err := (&Executor{Ctl: ctl, Audit: a, Opt: opt}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, rec)
			if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error = %v (code %s), want %q", err, dbpilot.ErrorCode(err), tt.want)
			}
			if calls := f.callsOf(exOld); len(calls) != 0 {
				t.Errorf("old primary changed: %v", calls)
			}
			if calls := f.callsOf(exCand); len(calls) != 0 {
				t.Errorf("candidate changed: %v", calls)
			}
			if got := strings.Join(a.names(), ","); got != "failed" {
				t.Errorf("audit %s, want failed", got)
			}
			if rec.Success || rec.Error != err.Error() {
				t.Errorf("rec = %+v", rec)
			}
		})
	}
}

// TestSwitchoverDrainTimeout: a candidate that does not reach the old
// primary's position within DrainTimeout of read_only is given up: the old
// primary is writable again at once, nothing else changed, and the error,
// the rollback and the failure audited say one line naming
// switchover.drain_timeout, no other timeout.
func TestSwitchoverDrainTimeout(t *testing.T) {
	f := exNewFake(exMaria(1, "0-1-21", ""), exMaria(2, "0-1-20", "0-1-20", exOld))
	f.stuck[exCand] = true
	a := &exAudit{}
	opt := exOptions()
	opt.ApplyTimeout = time.Minute // not a switchover's bound
	opt.DrainTimeout = 400 * time.Millisecond
	ctl := exThreads{f, map[dbpilot.InstanceKey][]dbpilot.ApplierThread{exCand: {{ID: 3, Wait: "an InnoDB row lock"}}}}
	rec := &dbpilot.Recovery{}
	start := time.Now()
	err := (&Executor{Ctl: ctl, Audit: a, Opt: opt}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, rec)
	took := time.Since(start)
	want := "switchover: 10.0.0.1:2 had not applied 10.0.0.1:1's last transactions when switchover.drain_timeout (400ms) ran out with 1 transaction left to apply (its applier waits for a lock: an InnoDB row lock); rolled back: 10.0.0.1:1 is writable again, nothing else changed"
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || err == nil || err.Error() != want {
		t.Fatalf("error = %v (code %s)\nwant %s", err, dbpilot.ErrorCode(err), want)
	}
	if took > opt.DrainTimeout+2*time.Second {
		t.Errorf("took %s with a drain timeout of %s", took, opt.DrainTimeout)
	}
	if got, want := strings.Join(f.callsOf(exOld), "|"), "SetReadOnly true|KillClientConnections|SetReadOnly false"; got != want {
		t.Errorf("old primary calls:\n got %s\nwant %s", got, want)
	}
	for _, c := range f.callsOf(exCand) {
		if !strings.HasPrefix(c, "WaitForGTID") {
			t.Errorf("candidate changed: %s", c)
		}
	}
	if got := strings.Join(a.names(), ","); got != "read-only,kill,rollback,failed" {
		t.Errorf("audit %s", got)
	}
	for _, ev := range a.ev {
		if (ev.Event == dbpilot.AuditRollback || ev.Event == dbpilot.AuditFailed) && ev.Message != want {
			t.Errorf("%s audited %q, want the error's line", ev.Event, ev.Message)
		}
		if ev.Event == dbpilot.AuditRollback && ev.Detail["drain_timeout_ms"] != "400" {
			t.Errorf("rollback detail %v", ev.Detail)
		}
	}
	if rec.Success || rec.Error != want || !rec.NewPrimary.IsZero() {
		t.Errorf("rec = %+v", rec)
	}
}

// TestRelocatePrecheckRefuses: a target that replicates and cannot apply
// what it has left in time is refused before the replica is touched.
func TestRelocatePrecheckRefuses(t *testing.T) {
	target := exMaria(2, "0-1-5", "0-1-5", exOld)
	target.Channels[0].GTIDIOPos = "0-1-9"
	target.Channels[0].SQLStateText = "Waiting for global read lock"
	f := exNewFake(exMaria(1, "0-1-9", ""), target, exMaria(3, "0-1-5", "0-1-5", exOld))
	a := &exAudit{}
	err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Relocate(context.Background(), exR1, exCand, &dbpilot.Recovery{})
	want := "relocate: target 10.0.0.1:2 is not ready, nothing changed: 4 transactions to apply and its applier waits for a lock (Waiting for global read lock): it cannot catch up within switchover.max_lag (10s)"
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v (code %s)\nwant %s", err, dbpilot.ErrorCode(err), want)
	}
	if calls := f.callsOf(exR1); len(calls) != 0 {
		t.Errorf("replica changed: %v", calls)
	}
	// Caught up, the same target is fine.
	f.setChannels(exCand, func(ch *dbpilot.ReplicationChannel) { ch.GTIDIOPos = "0-1-5" })
	if err := (&Executor{Ctl: f, Opt: exOptions()}).Relocate(context.Background(), exR1, exCand, &dbpilot.Recovery{}); err != nil {
		t.Fatalf("relocate below a caught-up target: %v", err)
	}
}
