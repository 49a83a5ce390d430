package recovery

import (
	"context"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// rjCluster is a fenced old primary exOld (server_id 1, gtid_binlog_state
// oldState), alone, beside the primary exCand (server_id 2) and its
// replica exR1.
func rjCluster(oldState string) *exFakeCtl {
	old := exMaria(1, oldState, "")
	old.ServerID, old.ReadOnly, old.LogBin = 1, true, true
	old.GTID.BinlogState = oldState
	p := exMaria(2, "0-2-7", "0-1-5")
	p.ServerID, p.LogBin, p.GTID.BinlogState = 2, true, "0-1-5,0-2-7"
	r := exMaria(3, "0-2-7", "0-2-7", exCand)
	r.ServerID, r.LogBin, r.GTID.BinlogState = 3, true, "0-1-5,0-2-7"
	return exNewFake(old, p, r)
}

// rjRecloner re-provisions in the fake: the target's binary log is reset
// and it replicates from the source at the source's position.
type rjRecloner struct {
	f       *exFakeCtl
	a       *exAudit
	audited bool // the errant GTIDs were audited before the copy
}

func (c *rjRecloner) Reclone(_ context.Context, source, target dbpilot.InstanceKey) (*dbpilot.RecloneResult, error) {
	i, err := c.f.call("Reclone", target, source)
	if err != nil {
		return nil, err
	}
	c.a.mu.Lock()
	c.audited = len(c.a.ev) > 0 && c.a.ev[0].Event == dbpilot.AuditReclone && c.a.ev[0].Detail["errant"] != ""
	c.a.mu.Unlock()
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	i.GTID = dbpilot.GTIDState{SlavePos: "0-2-7"}
	i.Channels = []dbpilot.ReplicationChannel{{Source: source, IORunning: dbpilot.IORunning, SQLRunning: true}}
	return &dbpilot.RecloneResult{Position: "0-2-7", Tables: 3, Rows: 10, Dropped: []string{"lost"}}, nil
}

func TestRejoinSteps(t *testing.T) {
	f := rjCluster("0-1-5")
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	ex := &Executor{Ctl: exPositioning{f}, Audit: a, Opt: exOptions()}
	ex.Opt.SemiSync = true
	if err := ex.Rejoin(context.Background(), exOld, exCand, RejoinOptions{}, rec); err != nil || !rec.Success || rec.NewPrimary != exCand {
		t.Fatalf("rejoin: %v %+v", err, rec)
	}
	want := "SetReadOnly true|StopReplica|SetReplicaPosition 0-1-5|ChangeSource 10.0.0.1:2 channel= ignore=[]|SetSemiSync false true|StartReplica"
	if got := strings.Join(f.callsOf(exOld), "|"); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(a.names(), ","); got != "rejoin,done" {
		t.Errorf("audit %s", got)
	}
	if len(f.callsOf(exCand)) != 0 {
		t.Errorf("the primary was changed: %v", f.callsOf(exCand))
	}
}

func TestRejoinRefusesErrant(t *testing.T) {
	f := rjCluster("0-1-6")
	rec := &dbpilot.Recovery{}
	err := (&Executor{Ctl: exPositioning{f}, Audit: &exAudit{}, Opt: exOptions()}).Rejoin(context.Background(), exOld, exCand, RejoinOptions{}, rec)
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "errant transactions the primary 10.0.0.1:2 lacks: 0-1-6") ||
		!strings.Contains(err.Error(), "--reclone") || strings.Contains(err.Error(), "\n") {
		t.Errorf("rejoin with an errant transaction: %v", err)
	}
	if rec.Success || len(f.callsOf(exOld)) != 0 {
		t.Errorf("something changed: %+v, calls %v", rec, f.callsOf(exOld))
	}
}

func TestRejoinReclone(t *testing.T) {
	f := rjCluster("0-1-6")
	a := &exAudit{}
	rc := &rjRecloner{f: f, a: a}
	rec := &dbpilot.Recovery{}
	ex := &Executor{Ctl: exPositioning{f}, Audit: a, Opt: exOptions(), Recloner: rc}
	if err := ex.Rejoin(context.Background(), exOld, exCand, RejoinOptions{Reclone: true, Source: exR1}, rec); err != nil || !rec.Success {
		t.Fatalf("rejoin --reclone: %v %+v\n%v", err, rec, a.ev)
	}
	if !rc.audited {
		t.Error("the errant GTIDs were not audited before the copy")
	}
	if e := a.ev[0]; e.Event != dbpilot.AuditReclone || e.Detail["errant"] != "0-1-6" || !strings.Contains(e.Message, "0-1-6") {
		t.Errorf("first audit event %+v", e)
	}
	want := "SetReadOnly true|StopReplica|ResetReplicaAll|Reclone 10.0.0.1:3|StopReplica|ChangeSource 10.0.0.1:2 channel= ignore=[]|SetSemiSync false false|StartReplica"
	if got := strings.Join(f.callsOf(exOld), "|"); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(a.names(), ","); got != "reclone,reclone,rejoin,done" || !strings.Contains(a.ev[1].Message, "lost") {
		t.Errorf("audit %s: %v", got, a.ev)
	}
	// Without a recloner: refused before anything.
	f = rjCluster("0-1-6")
	err := (&Executor{Ctl: f, Opt: exOptions()}).Rejoin(context.Background(), exOld, exCand, RejoinOptions{Reclone: true, Source: exR1}, &dbpilot.Recovery{})
	if dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED || len(f.callsOf(exOld)) != 0 {
		t.Errorf("no recloner: %v %v", err, f.callsOf(exOld))
	}
}

func TestRejoinNotReplicatingIsUndone(t *testing.T) {
	f := rjCluster("0-1-5")
	f.broken[exOld] = true
	rec := &dbpilot.Recovery{}
	err := (&Executor{Ctl: exPositioning{f}, Audit: &exAudit{}, Opt: exOptions()}).Rejoin(context.Background(), exOld, exCand, RejoinOptions{}, rec)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "stays read_only outside the cluster") || rec.Success {
		t.Fatalf("rejoin that does not replicate: %v %+v", err, rec)
	}
	calls := f.callsOf(exOld)
	if got := strings.Join(calls[len(calls)-2:], "|"); got != "StopReplica|ResetReplicaAll" {
		t.Errorf("replication not removed again: %v", calls)
	}
	if i, _ := f.Inspect(context.Background(), exOld); !i.ReadOnly || len(i.Channels) != 0 {
		t.Errorf("left %+v", i)
	}
}

func TestRecloneSource(t *testing.T) {
	lag := func(s int64) *int64 { return &s }
	r1 := exMaria(3, "", "", exCand)
	r1.LogBin, r1.Channels[0].SecondsBehind = true, lag(5)
	r2 := exMaria(4, "", "", exCand)
	r2.LogBin, r2.Channels[0].SecondsBehind = true, lag(0)
	stopped := exMaria(5, "", "", exCand)
	stopped.LogBin, stopped.Channels[0].SQLRunning = true, false
	if s, ok := RecloneSource(exOld, exCand, []*dbpilot.Instance{r1, r2, stopped}); !ok || s != r2.Key {
		t.Errorf("source %s %t, want the replica with the least lag", s, ok)
	}
	if s, ok := RecloneSource(exOld, exCand, []*dbpilot.Instance{stopped}); ok || s != exCand {
		t.Errorf("source %s %t, want the primary when no replica replicates", s, ok)
	}
}
