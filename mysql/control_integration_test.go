package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// ctlValue runs a one-value query on a node.
func ctlValue(t *testing.T, d *sandbox.Descriptor, node, query string) string {
	t.Helper()
	rows, err := sandbox.Exec(context.Background(), d, node, query)
	if err != nil {
		t.Fatalf("%s on %s: %v", query, node, err)
	}
	if len(rows.Values) != 1 || rows.Values[0][0] == nil {
		return ""
	}
	return *rows.Values[0][0]
}

// ctlUntil inspects key until ok holds or 10 s pass.
func ctlUntil(t *testing.T, ctl *mysql.Controller, key dbpilot.InstanceKey, what string, ok func(*dbpilot.Instance) bool) *dbpilot.Instance {
	t.Helper()
	var inst *dbpilot.Instance
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		inst, err = ctl.Inspect(context.Background(), key)
		if err == nil && ok(inst) {
			return inst
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("inspect %s: %s never held (last: %+v, %v)", key, what, inst, err)
	return nil
}

func healthyFrom(source dbpilot.InstanceKey) func(*dbpilot.Instance) bool {
	return func(i *dbpilot.Instance) bool {
		return len(i.Channels) == 1 && i.Channels[0].Source == source && i.Channels[0].Healthy()
	}
}

func stopped(i *dbpilot.Instance) bool {
	for _, c := range i.Channels {
		if c.IORunning != dbpilot.IOStopped || c.SQLRunning {
			return false
		}
	}
	return true
}

// TestControllerMariaDB runs every Controller method on a real 3-node
// semi-sync sandbox.
func TestControllerMariaDB(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	ctl := mysql.NewController(d.AdminOptions(), d.Repl)
	t.Cleanup(func() { ctl.Close() })
	ctx := context.Background()
	n1, n2, n3 := d.Nodes[0].Key(), d.Nodes[1].Key(), d.Nodes[2].Key()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	t.Run("read-only", func(t *testing.T) {
		must("read_only off", ctl.SetReadOnly(ctx, n2, false))
		if v := ctlValue(t, d, "node2", "SELECT @@global.read_only"); v != "0" {
			t.Errorf("read_only after off = %s", v)
		}
		must("read_only on", ctl.SetReadOnly(ctx, n2, true))
		must("read_only on again", ctl.SetReadOnly(ctx, n2, true))
		if v := ctlValue(t, d, "node2", "SELECT @@global.read_only"); v != "1" {
			t.Errorf("read_only after on = %s", v)
		}
	})

	t.Run("stop-start", func(t *testing.T) {
		must("stop", ctl.StopReplica(ctx, n2))
		ctlUntil(t, ctl, n2, "replication stopped", stopped)
		must("stop again", ctl.StopReplica(ctx, n2))
		must("start", ctl.StartReplica(ctx, n2))
		ctlUntil(t, ctl, n2, "replication running", healthyFrom(n1))
		// A primary has nothing to stop or start.
		must("stop on the primary", ctl.StopReplica(ctx, n1))
		must("start on the primary", ctl.StartReplica(ctx, n1))
	})

	t.Run("stop-receivers", func(t *testing.T) {
		// The applier keeps running; MariaDB's semi-sync kill-connection
		// timeout is lowered for the stop only and set back.
		_, err := sandbox.Exec(ctx, d, "node3", "SET GLOBAL rpl_semi_sync_slave_kill_conn_timeout = 7")
		must("set kill_conn_timeout", err)
		must("stop receivers", ctl.StopReceivers(ctx, n3))
		ctlUntil(t, ctl, n3, "IO stopped, SQL running", func(i *dbpilot.Instance) bool {
			return len(i.Channels) == 1 && i.Channels[0].IORunning == dbpilot.IOStopped && i.Channels[0].SQLRunning
		})
		if v := ctlValue(t, d, "node3", "SELECT @@global.rpl_semi_sync_slave_kill_conn_timeout"); v != "7" {
			t.Errorf("rpl_semi_sync_slave_kill_conn_timeout after the stop = %s, want 7 again", v)
		}
		must("stop receivers again", ctl.StopReceivers(ctx, n3))
		must("stop receivers on the primary", ctl.StopReceivers(ctx, n1))
		must("start", ctl.StartReplica(ctx, n3))
		ctlUntil(t, ctl, n3, "replication running", healthyFrom(n1))
		_, err = sandbox.Exec(ctx, d, "node3", "SET GLOBAL rpl_semi_sync_slave_kill_conn_timeout = 5")
		must("reset kill_conn_timeout", err)
	})

	t.Run("change-source", func(t *testing.T) {
		must("change node3 to node2 ignoring domains 2,1", ctl.ChangeSource(ctx, n3, n2, dbpilot.ChangeSourceOptions{IgnoreDomains: []uint32{2, 1}}))
		rows, err := sandbox.Exec(ctx, d, "node3", "SHOW ALL SLAVES STATUS")
		must("show slaves", err)
		m := rows.Maps()
		if len(m) != 1 || m[0]["Master_Port"] != fmt.Sprint(n2.Port) || strings.ReplaceAll(m[0]["Replicate_Ignore_Domain_Ids"], " ", "") != "1,2" ||
			m[0]["Slave_IO_Running"] != "No" || m[0]["Using_Gtid"] != "Slave_Pos" || m[0]["Master_User"] != d.Repl.User || strings.TrimRight(strings.TrimRight(m[0]["Slave_heartbeat_period"], "0"), ".") != "1" || m[0]["Connect_Retry"] != "1" {
			t.Errorf("after change source with ignored domains: %v", m)
		}
		// The setting persists unless cleared: ChangeSource clears it.
		must("change node3 back to node1", ctl.ChangeSource(ctx, n3, n1, dbpilot.ChangeSourceOptions{}))
		rows, err = sandbox.Exec(ctx, d, "node3", "SHOW ALL SLAVES STATUS")
		must("show slaves", err)
		if m := rows.Maps(); len(m) != 1 || m[0]["Replicate_Ignore_Domain_Ids"] != "" || m[0]["Master_Port"] != fmt.Sprint(n1.Port) {
			t.Errorf("after change source without ignored domains: %v", m)
		}
		must("start node3", ctl.StartReplica(ctx, n3))
		ctlUntil(t, ctl, n3, "node3 replicating from node1", healthyFrom(n1))
		// ChangeSource stops a running channel itself.
		must("change running channel", ctl.ChangeSource(ctx, n3, n1, dbpilot.ChangeSourceOptions{}))
		must("start node3", ctl.StartReplica(ctx, n3))
		ctlUntil(t, ctl, n3, "node3 replicating from node1", healthyFrom(n1))
	})

	t.Run("named-channel-and-reset", func(t *testing.T) {
		must("add channel x", ctl.ChangeSource(ctx, n3, n2, dbpilot.ChangeSourceOptions{Channel: "x"}))
		inst := ctlUntil(t, ctl, n3, "two channels", func(i *dbpilot.Instance) bool { return len(i.Channels) == 2 })
		if ch := inst.Channel(n2); ch == nil || ch.Name != "x" || ch.IORunning != dbpilot.IOStopped {
			t.Errorf("channel x: %+v", inst.Channels)
		}
		must("stop all", ctl.StopReplica(ctx, n3))
		ctlUntil(t, ctl, n3, "both channels stopped", stopped)
		must("reset all", ctl.ResetReplicaAll(ctx, n3))
		ctlUntil(t, ctl, n3, "no channel", func(i *dbpilot.Instance) bool { return len(i.Channels) == 0 })
		must("reset again", ctl.ResetReplicaAll(ctx, n3))
		must("stop without channels", ctl.StopReplica(ctx, n3))
		must("start without channels", ctl.StartReplica(ctx, n3))
		// gtid_slave_pos survives the reset: node3 resumes where it was.
		must("rewire node3", ctl.ChangeSource(ctx, n3, n1, dbpilot.ChangeSourceOptions{}))
		must("start node3", ctl.StartReplica(ctx, n3))
		ctlUntil(t, ctl, n3, "node3 replicating from node1", healthyFrom(n1))
	})

	t.Run("wait-for-gtid", func(t *testing.T) {
		if _, err := sandbox.Exec(ctx, d, "node1", "CREATE DATABASE app"); err != nil {
			t.Fatal(err)
		}
		pos := ctlValue(t, d, "node1", "SELECT @@global.gtid_binlog_pos")
		if pos == "" {
			t.Fatal("no binlog position on node1")
		}
		must("wait for "+pos, ctl.WaitForGTID(ctx, n2, pos, 5*time.Second))
		must("empty position", ctl.WaitForGTID(ctx, n2, "", time.Second))

		// A position never reached: the wait outlasts the controller's
		// statement timeout (1 s here) and ends with the server's own timeout.
		short := mysql.NewController(mysql.Options{Credentials: d.Admin, QueryTimeout: time.Second}, d.Repl)
		defer short.Close()
		far := fmt.Sprintf("0-%d-1000", d.Nodes[0].ServerID)
		start := time.Now()
		err := short.WaitForGTID(ctx, n2, far, 2*time.Second)
		el := time.Since(start)
		if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || el < 2*time.Second || el > 3500*time.Millisecond {
			t.Fatalf("wait for %s: %v (code %s) after %s", far, err, dbpilot.ErrorCode(err), el)
		}
		for _, want := range []string{"wait for GTID on " + n2.String(), far, "reached " + pos} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("timeout error %q lacks %q", err, want)
			}
		}
		if err := ctl.WaitForGTID(ctx, n2, pos, 0); dbpilot.ErrorCode(err) != dbpilot.EINVALID {
			t.Errorf("zero timeout: %v", err)
		}
	})

	t.Run("replica-position", func(t *testing.T) {
		must("stop node3", ctl.StopReplica(ctx, n3))
		sp := ctlValue(t, d, "node3", "SELECT @@global.gtid_slave_pos")
		must("set gtid_slave_pos", ctl.SetReplicaPosition(ctx, n3, sp))
		if got := ctlValue(t, d, "node3", "SELECT @@global.gtid_slave_pos"); got != sp {
			t.Errorf("gtid_slave_pos = %q, want %q", got, sp)
		}
		must("start node3", ctl.StartReplica(ctx, n3))
		ctlUntil(t, ctl, n3, "node3 replicating from node1", healthyFrom(n1))
	})

	t.Run("kill-connections", func(t *testing.T) {
		var clients []*sql.Conn
		for i := 0; i < 3; i++ {
			db, err := mysql.Open(ctx, n1, d.AdminOptions())
			must("open client", err)
			defer db.Close()
			c, err := db.SQL().Conn(ctx)
			must("client connection", err)
			defer c.Close()
			if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		if _, err := ctl.Inspect(ctx, n1); err != nil { // a pooled connection of the controller's own
			t.Fatal(err)
		}
		n, err := ctl.KillClientConnections(ctx, n1)
		must("kill", err)
		if n < 3 {
			t.Errorf("killed %d connections, want at least the 3 clients", n)
		}
		for i, c := range clients {
			if _, err := c.ExecContext(ctx, "SELECT 1"); err == nil {
				t.Errorf("client %d survived the kill", i)
			}
		}
		// Replication threads survive; the controller keeps working.
		ctlUntil(t, ctl, n1, "both replicas still connected", func(i *dbpilot.Instance) bool {
			return len(i.Replicas) == 2 && i.SemiSync.PrimaryClients == 2
		})
		ctlUntil(t, ctl, n2, "node2 still replicating", healthyFrom(n1))
		n, err = ctl.KillClientConnections(ctx, n1)
		must("kill again", err)
		t.Logf("second kill ended %d connection(s)", n)
	})

	t.Run("semi-sync", func(t *testing.T) {
		must("node2 semi-sync primary", ctl.SetSemiSync(ctx, n2, true, false))
		if p, r := ctlValue(t, d, "node2", "SELECT @@global.rpl_semi_sync_master_enabled"), ctlValue(t, d, "node2", "SELECT @@global.rpl_semi_sync_slave_enabled"); p != "1" || r != "0" {
			t.Errorf("node2 semi-sync primary=%s replica=%s, want 1 0", p, r)
		}
		must("node2 semi-sync replica", ctl.SetSemiSync(ctx, n2, false, true))
		inst := ctlUntil(t, ctl, n2, "semi-sync replica side only", func(i *dbpilot.Instance) bool { return i.SemiSync.Role() == "replica" })
		if inst.SemiSync.PrimaryEnabled {
			t.Errorf("semi-sync: %+v", inst.SemiSync)
		}
	})

	t.Run("errors", func(t *testing.T) {
		dead := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}
		err := ctl.ChangeSource(ctx, dead, n1, dbpilot.ChangeSourceOptions{})
		if dbpilot.ErrorCode(err) != dbpilot.EUNAVAIL || !strings.HasPrefix(err.Error(), "mysql: change source on 127.0.0.1:1: ") ||
			strings.Contains(err.Error(), d.Repl.Password) || strings.Contains(err.Error(), d.Admin.Password) {
			t.Errorf("change source on a dead server: %v (code %s)", err, dbpilot.ErrorCode(err))
		}
		if _, err := ctl.KillClientConnections(ctx, dead); !strings.HasPrefix(fmt.Sprint(err), "mysql: kill client connections on 127.0.0.1:1: ") {
			t.Errorf("kill on a dead server: %v", err)
		}
	})
}
