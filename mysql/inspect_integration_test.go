package mysql_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// inspectUntil inspects key until ok(instance) holds or 10 s pass.
func inspectUntil(t *testing.T, in *mysql.Inspector, key dbpilot.InstanceKey, what string, ok func(*dbpilot.Instance) bool) *dbpilot.Instance {
	t.Helper()
	var inst *dbpilot.Instance
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		inst, err = in.Inspect(context.Background(), key)
		if err == nil && ok(inst) {
			return inst
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("inspect %s: %s never held (last: %+v, %v)", key, what, inst, err)
	return nil
}

func TestInspectReplication(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	in := mysql.NewInspector(d.AdminOptions())
	t.Cleanup(func() { in.Close() })
	ctx := context.Background()
	p, r := d.Nodes[0], d.Nodes[1]
	if _, err := sandbox.Exec(ctx, d, "node1", "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	pid := p.ServerID
	wantPos := fmt.Sprintf("0-%d-1", pid)

	prim := inspectUntil(t, in, p.Key(), "2 semi-sync clients and 2 replicas", func(i *dbpilot.Instance) bool {
		return i.SemiSync.PrimaryClients == 2 && len(i.Replicas) == 2
	})
	if !prim.Reachable || prim.Key != p.Key() || prim.Flavor != dbpilot.FlavorMariaDB || prim.Version.Major != 10 || !strings.Contains(prim.Version.Raw, "MariaDB") {
		t.Errorf("primary identity: %+v", prim)
	}
	if prim.ServerID != pid || prim.ServerUUID != "" || prim.ReadOnly || prim.SuperReadOnly || !prim.LogBin || prim.BinlogFormat != "ROW" || !prim.LogReplicaUpdates {
		t.Errorf("primary settings: id %d uuid %q ro %v sro %v log_bin %v format %q lsu %v", prim.ServerID, prim.ServerUUID, prim.ReadOnly, prim.SuperReadOnly, prim.LogBin, prim.BinlogFormat, prim.LogReplicaUpdates)
	}
	g := prim.GTID
	if g.Mode != "ON" || g.BinlogPos != wantPos || g.CurrentPos != wantPos || g.SlavePos != "" || g.BinlogState != wantPos || g.DomainID != 0 || !g.StrictMode {
		t.Errorf("primary GTID: %+v, want binlog/current/state %s", g, wantPos)
	}
	if len(prim.Channels) != 0 || prim.IsReplica() {
		t.Errorf("primary has channels: %+v", prim.Channels)
	}
	s := prim.SemiSync
	if !s.PrimaryEnabled || !s.PrimaryActive || s.PrimaryTimeout != 10*time.Second || s.ReplicaEnabled {
		t.Errorf("primary semi-sync: %+v", s)
	}
	var reps []string
	for _, k := range prim.Replicas {
		reps = append(reps, k.String())
	}
	sort.Strings(reps)
	if want := d.Nodes[1].Key().String() + "," + d.Nodes[2].Key().String(); strings.Join(reps, ",") != want {
		t.Errorf("replicas = %v, want %s", reps, want)
	}
	if time.Since(prim.ObservedAt) > time.Minute {
		t.Errorf("observed at %v", prim.ObservedAt)
	}
	// Uptime has a resolution of one second; a fresh server may show 0.
	inspectUntil(t, in, p.Key(), "uptime of 1 s or more", func(i *dbpilot.Instance) bool { return i.Uptime >= time.Second && i.Uptime < time.Hour })

	rep := inspectUntil(t, in, r.Key(), "replica caught up", func(i *dbpilot.Instance) bool { return i.GTID.CurrentPos == wantPos })
	if !rep.ReadOnly || rep.ServerID != r.ServerID || rep.SlaveNetTimeout != 4*time.Second || !rep.LogBin || !rep.LogReplicaUpdates {
		t.Errorf("replica settings: ro %v id %d net timeout %v", rep.ReadOnly, rep.ServerID, rep.SlaveNetTimeout)
	}
	if rep.GTID.SlavePos != wantPos || rep.GTID.BinlogPos != wantPos {
		t.Errorf("replica GTID: %+v", rep.GTID)
	}
	if len(rep.Channels) != 1 {
		t.Fatalf("replica channels: %+v", rep.Channels)
	}
	c := rep.Channels[0]
	if c.Name != "" || c.Source != p.Key() || c.SourceUser != "repl" || c.IORunning != dbpilot.IORunning || !c.SQLRunning || !c.Healthy() {
		t.Errorf("channel: %+v", c)
	}
	if c.SecondsBehind == nil || *c.SecondsBehind != 0 || c.UsingGTID != "Slave_Pos" || c.GTIDIOPos != wantPos || c.SourceServerID != pid {
		t.Errorf("channel position: lag %v using %q io pos %q source id %d", c.SecondsBehind, c.UsingGTID, c.GTIDIOPos, c.SourceServerID)
	}
	if c.HeartbeatPeriod != time.Second || c.ConnectRetry != 1 || c.SourceLogFile == "" || c.ReadSourceLogPos == 0 || c.ExecSourceLogPos != c.ReadSourceLogPos {
		t.Errorf("channel settings: %+v", c)
	}
	if !rep.SemiSync.ReplicaEnabled || !rep.SemiSync.ReplicaActive || rep.SemiSync.PrimaryEnabled {
		t.Errorf("replica semi-sync: %+v", rep.SemiSync)
	}

	// A stopped SQL thread with an error is reported with the error.
	if _, err := sandbox.Exec(ctx, d, "node2", "STOP SLAVE SQL_THREAD"); err != nil {
		t.Fatal(err)
	}
	rep = inspectUntil(t, in, r.Key(), "SQL thread stopped", func(i *dbpilot.Instance) bool { return len(i.Channels) == 1 && !i.Channels[0].SQLRunning })
	if rep.Channels[0].IORunning != dbpilot.IORunning || rep.Channels[0].SecondsBehind != nil {
		t.Errorf("after STOP SLAVE SQL_THREAD: %+v", rep.Channels[0])
	}
}

func TestInspectMultiSource(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyMultiSource, Nodes: 3})
	in := mysql.NewInspector(d.AdminOptions())
	t.Cleanup(func() { in.Close() })
	sink := inspectUntil(t, in, d.Nodes[2].Key(), "two running channels", func(i *dbpilot.Instance) bool {
		return len(i.Channels) == 2 && i.Channels[0].Healthy() && i.Channels[1].Healthy()
	})
	names := []string{sink.Channels[0].Name, sink.Channels[1].Name}
	sort.Strings(names)
	if strings.Join(names, ",") != "node1,node2" {
		t.Errorf("channel names = %v", names)
	}
	for _, c := range sink.Channels {
		src, _ := d.Node(c.Name)
		if c.Source != src.Key() || c.UsingGTID != "Slave_Pos" {
			t.Errorf("channel %s: source %s using %s", c.Name, c.Source, c.UsingGTID)
		}
	}
	if sink.GTID.DomainID != 3 {
		t.Errorf("sink domain %d", sink.GTID.DomainID)
	}
}

func TestInspectErrors(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	ctx := context.Background()
	bad := mysql.NewInspector(mysql.Options{Credentials: mysql.Credentials{User: d.Admin.User, Password: "wrong-secret"}})
	defer bad.Close()
	_, err := bad.Inspect(ctx, d.Nodes[0].Key())
	if dbpilot.ErrorCode(err) != dbpilot.EAUTH || !strings.Contains(err.Error(), d.Nodes[0].Key().String()) || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong password: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
	in := mysql.NewInspector(d.AdminOptions())
	defer in.Close()
	if _, err := in.Inspect(ctx, d.Nodes[0].Key()); err != nil {
		t.Fatal(err)
	}
	// ReadRows: NULL, empty and multi-byte values over several rows.
	db, err := mysql.Open(ctx, d.Nodes[0].Key(), d.AdminOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Query(ctx, "SELECT 'a' AS x, NULL AS y, '' AS z UNION ALL SELECT 'bç', 'd', NULL UNION ALL SELECT '', '', 'end'")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range r.Values {
		for _, v := range row {
			if v == nil {
				got = append(got, "NULL")
			} else {
				got = append(got, "'"+*v+"'")
			}
		}
	}
	if strings.Join(r.Columns, ",") != "x,y,z" || strings.Join(got, " ") != "'a' NULL '' 'bç' 'd' NULL '' '' 'end'" {
		t.Errorf("rows %v of %v", got, r.Columns)
	}
	// Several statements in one round trip: one result each, in order; the
	// first that fails is the error (the server runs none after it).
	multi := d.AdminOptions()
	multi.MultiStatements = true
	mdb, err := mysql.Open(ctx, d.Nodes[0].Key(), multi)
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	res, err := mdb.QueryMulti(ctx, "SELECT @@global.server_id AS id", "SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime', 'Questions')", "SHOW ALL SLAVES STATUS", "SELECT 'last' AS x")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Columns[0] != "id" || *res[0].Values[0][0] != fmt.Sprint(d.Nodes[0].ServerID) ||
		len(res[1].NameValues()) != 2 || res[1].NameValues()["uptime"] == "" || len(res[2].Values) != 0 || len(res[2].Columns) < 40 ||
		*res[3].Values[0][0] != "last" {
		t.Errorf("QueryMulti results: %d %+v", len(res), res)
	}
	if _, err := mdb.QueryMulti(ctx, "SELECT 1", "SELECT @@global.no_such_variable", "SELECT 3"); mysql.ServerErrorNumber(err) != 1193 {
		t.Errorf("QueryMulti with an unknown variable second: %v, want error 1193", err)
	}
	if _, err := db.QueryMulti(ctx, "SELECT 1", "SELECT 2"); err == nil {
		t.Error("QueryMulti on a pool opened without MultiStatements: no error")
	}
	// The server goes away: the next inspect, although it holds a pooled
	// connection, reports the connect error, without the password.
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	_, err = in.Inspect(ctx, d.Nodes[0].Key())
	if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || strings.Contains(err.Error(), d.Admin.Password) ||
		!strings.Contains(err.Error(), "connect on "+d.Nodes[0].Key().String()+": connection refused") {
		t.Errorf("inspect of a killed server: %v (code %s)", err, dbpilot.ErrorCode(err))
	}
}

// InspectOr reads through the inspector's own connection when it is idle,
// and through the spare's when an inspection holds it: it never waits for
// monitoring, and opens no connection while the warm one is free.
func TestInspectOr(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	in, spare := mysql.NewInspector(d.AdminOptions()), mysql.NewInspector(d.AdminOptions())
	t.Cleanup(func() { in.Close(); spare.Close() })
	ctx := context.Background()
	k := d.Nodes[0].Key()
	if _, err := in.Inspect(ctx, k); err != nil {
		t.Fatal(err)
	}
	if inst, err := in.InspectOr(ctx, k, spare); err != nil || !inst.Reachable {
		t.Fatalf("idle connection: %+v, %v", inst, err)
	}
	if mysql.Opened(spare, k) {
		t.Fatal("the spare opened a connection while the inspector's was idle")
	}
	release, err := mysql.HoldInspection(in, k)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	inst, err := in.InspectOr(ctx, k, spare)
	release()
	if err != nil || !inst.Reachable {
		t.Fatalf("busy connection: %+v, %v", inst, err)
	}
	if !mysql.Opened(spare, k) {
		t.Error("the inspection did not go through the spare while the inspector's connection was held")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v: waited for the held connection", took)
	}
}

// InspectReplicaOr re-reads a replica's channels (one statement) through
// an idle connection, and keeps the rest of the last observation.
func TestInspectReplicaOr(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	in, spare := mysql.NewInspector(d.AdminOptions()), mysql.NewInspector(d.AdminOptions())
	t.Cleanup(func() { in.Close(); spare.Close() })
	ctx := context.Background()
	p, r := d.Nodes[0].Key(), d.Nodes[1].Key()
	last := inspectUntil(t, in, r, "replicating", func(i *dbpilot.Instance) bool {
		return i.Channel(p) != nil && i.Channel(p).IORunning == dbpilot.IORunning
	})
	stale := *last
	stale.Channels = nil
	stale.ServerID = 4242 // kept from the last observation, not re-read
	got, err := in.InspectReplicaOr(ctx, &stale, spare)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Reachable || got.Channel(p) == nil || got.Channel(p).IORunning != dbpilot.IORunning || got.ServerID != 4242 {
		t.Errorf("channels re-read: reachable %v, channel %+v, server_id %d (want the last observation's 4242)", got.Reachable, got.Channel(p), got.ServerID)
	}
	if mysql.Opened(spare, r) {
		t.Error("the spare connected while the inspector's connection was idle")
	}
	// Held by a crawl: the spare, which never read the server, inspects it whole.
	release, err := mysql.HoldInspection(in, r)
	if err != nil {
		t.Fatal(err)
	}
	got, err = in.InspectReplicaOr(ctx, &stale, spare)
	release()
	if err != nil || got.Channel(p) == nil || got.ServerID == 4242 {
		t.Errorf("through the spare: %+v, %v", got, err)
	}
}
