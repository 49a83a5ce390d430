package recovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// exFakeCtl is a Controller over instances in memory. It records every call
// ("Op host:port args"); StartReplica makes channels healthy unless the
// instance is in broken; a successful WaitForGTID moves gtid_slave_pos
// there, as replication would.
type exFakeCtl struct {
	mu      sync.Mutex
	inst    map[dbpilot.InstanceKey]*dbpilot.Instance
	calls   []string
	fail    map[string]error // by "Op host:port"
	broken  map[dbpilot.InstanceKey]bool
	waitErr map[dbpilot.InstanceKey]error
	stuck   map[dbpilot.InstanceKey]bool // WaitForGTID waits its timeout, then fails
}

func exNewFake(insts ...*dbpilot.Instance) *exFakeCtl {
	f := &exFakeCtl{inst: map[dbpilot.InstanceKey]*dbpilot.Instance{}, fail: map[string]error{},
		broken: map[dbpilot.InstanceKey]bool{}, waitErr: map[dbpilot.InstanceKey]error{}, stuck: map[dbpilot.InstanceKey]bool{}}
	for _, i := range insts {
		f.inst[i.Key] = i
	}
	return f
}

func (f *exFakeCtl) call(op string, key dbpilot.InstanceKey, args ...any) (*dbpilot.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := op + " " + key.String()
	for _, a := range args {
		line += " " + fmt.Sprint(a)
	}
	if op != "Inspect" {
		f.calls = append(f.calls, line)
	}
	if err := f.fail[op+" "+key.String()]; err != nil {
		return nil, err
	}
	i, ok := f.inst[key]
	if !ok {
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: connect on %s: connection refused", key)
	}
	return i, nil
}

// callsOf returns the recorded calls on key, without the key.
func (f *exFakeCtl) callsOf(key dbpilot.InstanceKey) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		op, rest, _ := strings.Cut(c, " ")
		k, args, _ := strings.Cut(rest, " ")
		if k == key.String() {
			out = append(out, strings.TrimSpace(op+" "+args))
		}
	}
	return out
}

func (f *exFakeCtl) Inspect(_ context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	i, err := f.call("Inspect", key)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *i
	c.Channels = slices.Clone(i.Channels)
	return &c, nil
}

func (f *exFakeCtl) setChannels(key dbpilot.InstanceKey, fn func(ch *dbpilot.ReplicationChannel)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.inst[key].Channels {
		fn(&f.inst[key].Channels[i])
	}
}

func (f *exFakeCtl) StopReplica(_ context.Context, key dbpilot.InstanceKey) error {
	if _, err := f.call("StopReplica", key); err != nil {
		return err
	}
	f.setChannels(key, func(ch *dbpilot.ReplicationChannel) { ch.IORunning, ch.SQLRunning = dbpilot.IOStopped, false })
	return nil
}

func (f *exFakeCtl) StartReplica(_ context.Context, key dbpilot.InstanceKey) error {
	if _, err := f.call("StartReplica", key); err != nil {
		return err
	}
	broken := f.broken[key]
	f.setChannels(key, func(ch *dbpilot.ReplicationChannel) {
		ch.IORunning, ch.SQLRunning, ch.LastIOErrno, ch.LastIOError = dbpilot.IORunning, true, 0, ""
		if broken {
			ch.IORunning, ch.LastIOErrno, ch.LastIOError = dbpilot.IOStopped, 1236, "position not in the master's binlog"
		}
	})
	return nil
}

func (f *exFakeCtl) ResetReplicaAll(_ context.Context, key dbpilot.InstanceKey) error {
	i, err := f.call("ResetReplicaAll", key)
	if err == nil {
		f.mu.Lock()
		i.Channels = nil
		f.mu.Unlock()
	}
	return err
}

func (f *exFakeCtl) ChangeSource(_ context.Context, key, source dbpilot.InstanceKey, opt dbpilot.ChangeSourceOptions) error {
	i, err := f.call("ChangeSource", key, source, "channel="+opt.Channel, fmt.Sprintf("ignore=%v", opt.IgnoreDomains))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range i.Channels {
		if i.Channels[c].Name == opt.Channel {
			i.Channels[c].Source = source
			i.Channels[c].IORunning, i.Channels[c].SQLRunning = dbpilot.IOStopped, false
			return nil
		}
	}
	i.Channels = append(i.Channels, dbpilot.ReplicationChannel{Name: opt.Channel, Source: source, IORunning: dbpilot.IOStopped})
	return nil
}

func (f *exFakeCtl) SetReadOnly(_ context.Context, key dbpilot.InstanceKey, ro bool) error {
	i, err := f.call("SetReadOnly", key, ro)
	if err == nil {
		f.mu.Lock()
		i.ReadOnly = ro
		f.mu.Unlock()
	}
	return err
}

func (f *exFakeCtl) WaitForGTID(_ context.Context, key dbpilot.InstanceKey, pos string, timeout time.Duration) error {
	i, err := f.call("WaitForGTID", key, pos)
	if err != nil {
		return err
	}
	if err := f.waitErr[key]; err != nil {
		return err
	}
	f.mu.Lock()
	stuck := f.stuck[key]
	f.mu.Unlock()
	if stuck {
		time.Sleep(timeout)
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: wait for GTID on %s: %s not reached within %s", key, pos, timeout)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if i.Flavor == dbpilot.FlavorMariaDB {
		i.GTID.SlavePos, _ = posMax(i.GTID.SlavePos, pos)
	}
	return nil
}

func (f *exFakeCtl) KillClientConnections(_ context.Context, key dbpilot.InstanceKey) (int, error) {
	_, err := f.call("KillClientConnections", key)
	return 2, err
}

func (f *exFakeCtl) SetSemiSync(_ context.Context, key dbpilot.InstanceKey, primary, replica bool) error {
	i, err := f.call("SetSemiSync", key, primary, replica)
	if err == nil {
		f.mu.Lock()
		i.SemiSync.PrimaryEnabled, i.SemiSync.ReplicaEnabled = primary, replica
		f.mu.Unlock()
	}
	return err
}

// exPositioning is a exFakeCtl that can set gtid_slave_pos.
type exPositioning struct{ *exFakeCtl }

func (f exPositioning) SetReplicaPosition(_ context.Context, key dbpilot.InstanceKey, pos string) error {
	i, err := f.call("SetReplicaPosition", key, pos)
	if err == nil {
		f.mu.Lock()
		i.GTID.SlavePos = pos
		f.mu.Unlock()
	}
	return err
}

// exAudit records events.
type exAudit struct {
	mu sync.Mutex
	ev []dbpilot.AuditEvent
}

func (a *exAudit) Audit(_ context.Context, e dbpilot.AuditEvent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ev = append(a.ev, e)
	return nil
}

func (a *exAudit) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.ev {
		out = append(out, e.Event)
	}
	return out
}

func exKey(port int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "10.0.0.1", Port: port} }

func exMaria(port int, binlog, slave string, sources ...dbpilot.InstanceKey) *dbpilot.Instance {
	i := &dbpilot.Instance{Key: exKey(port), Reachable: true, Flavor: dbpilot.FlavorMariaDB, ReadOnly: len(sources) > 0,
		GTID: dbpilot.GTIDState{BinlogPos: binlog, SlavePos: slave}}
	for _, s := range sources {
		i.Channels = append(i.Channels, dbpilot.ReplicationChannel{Source: s, IORunning: dbpilot.IORunning, SQLRunning: true, GTIDIOPos: slave})
	}
	return i
}

var (
	exOld  = exKey(1)
	exCand = exKey(2)
	exR1   = exKey(3)
	exR2   = exKey(4)
	exR3   = exKey(5)
)

func exOptions() Options {
	return Options{ApplyTimeout: time.Second, DrainTimeout: time.Second, RepointVerify: 400 * time.Millisecond, KillGrace: 10 * time.Millisecond}
}

func TestFailoverSteps(t *testing.T) {
	cand := exMaria(2, "0-1-8", "0-1-8", exOld)
	cand.Channels[0].GTIDIOPos = "0-1-10" // received more than applied
	r1 := exMaria(3, "0-1-10", "0-1-10", exOld)
	r1.Channels[0].Name = "" // default channel
	f := exNewFake(cand, r1) // the old primary and exR2 are unreachable
	a := &exAudit{}
	e := &Executor{Ctl: f, Audit: a, Opt: Options{SemiSync: true, RepointVerify: 400 * time.Millisecond}}
	p := &Plan{Cluster: "c", OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1, exR2}, Lost: []Lost{{Key: exR3, Reason: "errant GTIDs"}}}
	rec := &dbpilot.Recovery{ID: 9}
	if err := e.Failover(context.Background(), p, rec); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.callsOf(exCand), "|"),
		"WaitForGTID 0-1-10|StopReplica|ResetReplicaAll|SetSemiSync true false|SetReadOnly false"; got != want {
		t.Errorf("candidate calls:\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(f.callsOf(exR1), "|"),
		"StopReplica|ChangeSource 10.0.0.1:2 channel= ignore=[]|SetSemiSync false true|StartReplica"; got != want {
		t.Errorf("replica calls:\n got %s\nwant %s", got, want)
	}
	if !rec.Success || rec.NewPrimary != exCand || rec.Ended.IsZero() || rec.Started.IsZero() || rec.Cluster != "c" {
		t.Errorf("rec = %+v", rec)
	}
	lost := slices.Clone(rec.LostReplicas)
	slices.SortFunc(lost, func(a, b dbpilot.InstanceKey) int { return a.Port - b.Port })
	if !slices.Equal(lost, []dbpilot.InstanceKey{exR2, exR3}) {
		t.Errorf("lost = %v", rec.LostReplicas)
	}
	names := a.names()
	if names[0] != "lost" || names[1] != "apply-relay-log" || names[2] != "promote" || names[len(names)-1] != "done" ||
		!slices.Contains(names, "repoint") || len(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s != "lost" })) != 2 {
		t.Errorf("audit = %v", names)
	}
	for _, ev := range a.ev {
		if ev.RecoveryID != 9 || ev.Cluster != "c" || ev.Time.IsZero() {
			t.Errorf("event %+v", ev)
		}
	}
}

func TestFailoverCandidateFailsBeforePromotion(t *testing.T) {
	cand := exMaria(2, "0-1-8", "0-1-8", exOld)
	cand.Channels[0].GTIDIOPos = "0-1-10"
	f := exNewFake(cand, exMaria(3, "0-1-10", "0-1-10", exOld))
	f.waitErr[exCand] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: wait for GTID on %s: connection refused", exCand)
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Failover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}, rec)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "apply relay log failed") || !strings.Contains(err.Error(), "no replica promoted") {
		t.Errorf("error = %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	if rec.Success || rec.Error == "" || !rec.NewPrimary.IsZero() || rec.Ended.IsZero() {
		t.Errorf("rec = %+v", rec)
	}
	if calls := f.callsOf(exR1); len(calls) != 0 {
		t.Errorf("replica touched: %v", calls)
	}
	if slices.Contains(f.callsOf(exCand), "SetReadOnly false") {
		t.Error("candidate made writable")
	}
	if names := a.names(); names[len(names)-1] != "failed" {
		t.Errorf("audit = %v", names)
	}
	// An unreachable candidate, and bad plans.
	err = (&Executor{Ctl: f}).Failover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exKey(99)}, &dbpilot.Recovery{})
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "inspect candidate failed") {
		t.Errorf("unreachable candidate: %v", err)
	}
	for _, p := range []*Plan{nil, {OldPrimary: exOld}, {OldPrimary: exOld, Candidate: exOld}} {
		if err := (&Executor{Ctl: f}).Failover(context.Background(), p, nil); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("plan %+v: %v", p, err)
		}
	}
}

func TestFailoverCatchUpBorrowsPosition(t *testing.T) {
	cand := exMaria(2, "0-1-5,1-1-9,2-1-3", "0-1-5,1-1-9,2-1-3", exOld)
	from := exMaria(3, "0-1-5,1-1-7,2-1-6", "0-1-5,1-1-7,2-1-6", exOld)
	f := exNewFake(cand, from)
	a := &exAudit{}
	p := &Plan{OldPrimary: exOld, Candidate: exCand, CatchUp: []CatchUp{{From: exR1, Domains: []uint32{2}, Until: "0-1-5,1-1-7,2-1-6"}}, Repoint: []dbpilot.InstanceKey{exR1}}
	if err := (&Executor{Ctl: exPositioning{f}, Audit: a, Opt: exOptions()}).Failover(context.Background(), p, &dbpilot.Recovery{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"StopReplica",
		"SetReplicaPosition 0-1-5,1-1-7,2-1-3", // ahead of the source in ignored domain 1: borrow its position
		"ChangeSource 10.0.0.1:3 channel= ignore=[0 1]",
		"StartReplica",
		"WaitForGTID 2-1-6", // the catch-up domain only
		"StopReplica",
		"ResetReplicaAll",
		"SetReplicaPosition 0-1-5,1-1-9,2-1-6", // own position back, plus what was fetched
		"StopReplica", "ResetReplicaAll", "SetSemiSync false false", "SetReadOnly false",
	}
	if got := f.callsOf(exCand); !slices.Equal(got, want) {
		t.Errorf("candidate calls:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	// Without positioning the catch-up is tried as is.
	f = exNewFake(exMaria(2, "0-1-5,1-1-9,2-1-3", "0-1-5,1-1-9,2-1-3", exOld), exMaria(3, "0-1-5,1-1-7,2-1-6", "0-1-5,1-1-7,2-1-6", exOld))
	if err := (&Executor{Ctl: f, Opt: exOptions()}).Failover(context.Background(), p, &dbpilot.Recovery{}); err != nil {
		t.Fatal(err)
	}
	if got := f.callsOf(exCand); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "SetReplicaPosition") }) || got[1] != "ChangeSource 10.0.0.1:3 channel= ignore=[0 1]" {
		t.Errorf("calls without positioning: %v", got)
	}
}

func TestFailoverLosesReplicaThatDoesNotReplicate(t *testing.T) {
	f := exNewFake(exMaria(2, "0-1-5", "0-1-5", exOld), exMaria(3, "0-1-5", "0-1-5", exOld), exMaria(4, "0-1-5", "0-1-5", exOld))
	f.broken[exR2] = true
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	if err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Failover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1, exR2}}, rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Success || !slices.Equal(rec.LostReplicas, []dbpilot.InstanceKey{exR2}) {
		t.Errorf("rec = %+v", rec)
	}
	var reason string
	for _, ev := range a.ev {
		if ev.Event == "lost" {
			reason = ev.Detail["reason"]
		}
	}
	if !strings.Contains(reason, "not replicating from 10.0.0.1:2") || !strings.Contains(reason, "1236") {
		t.Errorf("lost reason = %q", reason)
	}
}

func TestFailoverMultiSourceReplica(t *testing.T) {
	other := exKey(50)
	ms := exMaria(3, "0-1-5", "0-1-5", other, exOld)
	ms.Channels[0].Name, ms.Channels[1].Name = "a", "b"
	f := exNewFake(exMaria(2, "0-1-5", "0-1-5", exOld), ms)
	if err := (&Executor{Ctl: f, Opt: exOptions()}).Failover(context.Background(),
		&Plan{OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}, &dbpilot.Recovery{}); err != nil {
		t.Fatal(err)
	}
	if got := f.callsOf(exR1); !slices.Contains(got, "ChangeSource 10.0.0.1:2 channel=b ignore=[]") {
		t.Errorf("multi-source replica calls: %v", got)
	}
}

func TestSwitchoverSteps(t *testing.T) {
	old := exMaria(1, "0-1-20", "")
	old.SemiSync.PrimaryEnabled = true
	f := exNewFake(old, exMaria(2, "0-1-20", "0-1-20", exOld), exMaria(3, "0-1-20", "0-1-20", exOld))
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	p := &Plan{Kind: dbpilot.RecoverySwitchover, OldPrimary: exOld, Candidate: exCand, Repoint: []dbpilot.InstanceKey{exR1}}
	if err := (&Executor{Ctl: exPositioning{f}, Audit: a, Opt: exOptions()}).Switchover(context.Background(), p, rec); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.callsOf(exOld), "|"),
		"SetReadOnly true|KillClientConnections|StopReplica|SetReplicaPosition 0-1-20|ChangeSource 10.0.0.1:2 channel= ignore=[]|SetSemiSync false false|StartReplica"; got != want {
		t.Errorf("old primary calls:\n got %s\nwant %s", got, want)
	}
	// Caught up already: no wait.
	if got, want := strings.Join(f.callsOf(exCand), "|"), "StopReplica|ResetReplicaAll|SetSemiSync false false|SetReadOnly false"; got != want {
		t.Errorf("candidate calls:\n got %s\nwant %s", got, want)
	}
	if !rec.Success || rec.NewPrimary != exCand || len(rec.LostReplicas) != 0 {
		t.Errorf("rec = %+v", rec)
	}
	var window string
	for _, ev := range a.ev {
		if ev.Event == "done" {
			window = ev.Detail["write_unavailable_ms"]
		}
	}
	if window == "" {
		t.Errorf("no write-unavailable window in %v", a.names())
	}
}

// TestSwitchoverWaitsForConnectingCandidate: a candidate whose IO thread was
// just started (Preparing, then Yes) is waited for, not refused; one whose
// IO thread failed to connect is refused with nothing changed.
func TestSwitchoverWaitsForConnectingCandidate(t *testing.T) {
	cand := exMaria(2, "0-1-20", "0-1-20", exOld)
	cand.Channels[0].IORunning = dbpilot.IOPreparing
	f := exNewFake(exMaria(1, "0-1-20", ""), cand)
	time.AfterFunc(150*time.Millisecond, func() {
		f.setChannels(exCand, func(ch *dbpilot.ReplicationChannel) { ch.IORunning = dbpilot.IORunning })
	})
	rec := &dbpilot.Recovery{}
	p := &Plan{Kind: dbpilot.RecoverySwitchover, OldPrimary: exOld, Candidate: exCand}
	if err := (&Executor{Ctl: exPositioning{f}, Opt: exOptions()}).Switchover(context.Background(), p, rec); err != nil || !rec.Success {
		t.Fatalf("switchover to a connecting candidate: %v, %+v", err, rec)
	}

	cand = exMaria(2, "0-1-20", "0-1-20", exOld)
	cand.Channels[0].IORunning, cand.Channels[0].LastIOErrno, cand.Channels[0].LastIOError = dbpilot.IOConnecting, 2003, "Can't connect"
	f = exNewFake(exMaria(1, "0-1-20", ""), cand)
	err := (&Executor{Ctl: exPositioning{f}, Opt: exOptions()}).Switchover(context.Background(), p, &dbpilot.Recovery{})
	if dbpilot.ErrorCode(err) != dbpilot.EINVALID || !strings.Contains(err.Error(), "IO error 2003") || len(f.callsOf(exOld)) != 0 {
		t.Errorf("candidate failing to connect: %v, calls %v", err, f.callsOf(exOld))
	}
}

func TestSwitchoverRollsBack(t *testing.T) {
	f := exNewFake(exMaria(1, "0-1-20", ""), exMaria(2, "0-1-18", "0-1-18", exOld))
	f.waitErr[exCand] = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: wait for GTID on %s: position 0-1-20 not reached within 1s; reached 0-1-18", exCand)
	a := &exAudit{}
	rec := &dbpilot.Recovery{}
	err := (&Executor{Ctl: f, Audit: a, Opt: exOptions()}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, rec)
	if err == nil || !strings.Contains(err.Error(), "rolled back") || rec.Success {
		t.Fatalf("error = %v, rec %+v", err, rec)
	}
	calls := f.callsOf(exOld)
	if calls[0] != "SetReadOnly true" || calls[len(calls)-1] != "SetReadOnly false" {
		t.Errorf("old primary calls: %v", calls)
	}
	if got := f.callsOf(exCand); slices.Contains(got, "ResetReplicaAll") || !slices.Contains(got, "WaitForGTID 0-1-20") {
		t.Errorf("candidate calls: %v", got)
	}
	if !slices.Contains(a.names(), "rollback") {
		t.Errorf("audit = %v", a.names())
	}
	// A candidate that does not replicate from the old primary: nothing done.
	f = exNewFake(exMaria(1, "0-1-20", ""), exMaria(2, "0-1-18", "0-1-18", exKey(77)))
	err = (&Executor{Ctl: f}).Switchover(context.Background(), &Plan{OldPrimary: exOld, Candidate: exCand}, &dbpilot.Recovery{})
	if dbpilot.ErrorCode(err) != dbpilot.EINVALID || len(f.callsOf(exOld)) != 0 {
		t.Errorf("not a replica of the old primary: %v, calls %v", err, f.callsOf(exOld))
	}
}

func TestRelocateSteps(t *testing.T) {
	f := exNewFake(exMaria(1, "0-1-5", ""), exMaria(2, "0-1-5", "0-1-5", exOld), exMaria(3, "0-1-5", "0-1-5", exOld))
	rec := &dbpilot.Recovery{}
	if err := (&Executor{Ctl: f, Opt: exOptions()}).Relocate(context.Background(), exR1, exCand, rec); err != nil || !rec.Success {
		t.Fatalf("relocate: %v %+v", err, rec)
	}
	if got, want := strings.Join(f.callsOf(exR1), "|"), "StopReplica|ChangeSource 10.0.0.1:2 channel= ignore=[]|StartReplica"; got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
	// Verification fails: pointed back at the former source.
	f = exNewFake(exMaria(1, "0-1-5", ""), exMaria(2, "0-1-5", "0-1-5", exOld), exMaria(3, "0-1-5", "0-1-5", exOld))
	f.broken[exR1] = true
	rec = &dbpilot.Recovery{}
	err := (&Executor{Ctl: f, Opt: exOptions()}).Relocate(context.Background(), exR1, exCand, rec)
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.Contains(err.Error(), "pointed it back at 10.0.0.1:1") || rec.Success || len(rec.LostReplicas) != 0 {
		t.Errorf("relocate of a broken replica: %v, %+v", err, rec)
	}
	if got := f.callsOf(exR1); got[len(got)-2] != "ChangeSource 10.0.0.1:1 channel= ignore=[]" {
		t.Errorf("calls: %v", got)
	}
	// Refused: multi-source, no channel, a loop, itself.
	ms := exMaria(4, "", "", exOld, exKey(9))
	loop := exMaria(5, "", "", exR1)
	f = exNewFake(exMaria(1, "", ""), ms, loop, exMaria(3, "", "", exOld))
	for _, c := range []struct{ replica, target dbpilot.InstanceKey }{{exR2, exCand}, {exOld, exR1}, {exR1, exR3}, {exR1, exR1}} {
		if err := (&Executor{Ctl: f}).Relocate(context.Background(), c.replica, c.target, &dbpilot.Recovery{}); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("relocate %s below %s: %v", c.replica, c.target, err)
		}
	}
}

func TestPositions(t *testing.T) {
	check := func(name, got string, err error, want string) {
		t.Helper()
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	got, err := posMax("0-1-5,1-1-9", "0-2-7,2-1-1", "")
	check("posMax", got, err, "0-2-7,1-1-9,2-1-1")
	got, err = posRemaining("0-1-10,1-1-5,2-1-3", "0-1-10,1-1-4")
	check("posRemaining", got, err, "1-1-5,2-1-3")
	got, err = posRemaining("0-1-10", "0-1-12")
	check("posRemaining reached", got, err, "")
	got, err = posRestrict("0-1-5,1-1-7,2-1-6", []uint32{2, 3})
	check("posRestrict", got, err, "2-1-6")
	got, err = posBorrow("0-1-5,1-1-9,2-1-3,3-1-1", "0-1-5,1-1-7,2-1-6", []uint32{0, 1, 3})
	check("posBorrow", got, err, "0-1-5,1-1-7,2-1-3,3-1-1")
	got, err = posReplace("0-1-5,1-1-7,2-1-6", "0-1-5,1-1-9,3-1-1", []uint32{1, 3, 4})
	check("posReplace", got, err, "0-1-5,1-1-9,2-1-6,3-1-1")
	ds, err := posDomains("0-1-5,2-1-1", "", "7-3-3,2-2-2")
	if err != nil || !slices.Equal(ds, []uint32{0, 2, 7}) {
		t.Errorf("posDomains = %v, %v", ds, err)
	}
	if _, err := posMax("garbage"); err == nil {
		t.Error("posMax accepted garbage")
	}
}
