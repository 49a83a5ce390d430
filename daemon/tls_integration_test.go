package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/certs"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// slaveStatus returns node's SHOW SLAVE STATUS row.
func (f *fixture) slaveStatus(node string) map[string]string {
	f.t.Helper()
	rows, err := sandbox.Exec(context.Background(), f.d, node, "SHOW SLAVE STATUS")
	if err != nil {
		f.t.Fatalf("SHOW SLAVE STATUS on %s: %v", node, err)
	}
	if len(rows.Values) != 1 {
		return nil
	}
	return rows.Maps()[0]
}

// TestTLSFailover: serve watches a sandbox whose servers require TLS
// (require_secure_transport=ON), with the cluster's own tls block over a
// top-level tls whose CA is wrong: it discovers and monitors the servers
// over TLS, and a failover (kill -9 of the primary) promotes a replica and
// re-points the other with MASTER_SSL and the replication.tls CA, verified.
func TestTLSFailover(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, TLS: true, RequireSecureTransport: true})
	other, err := certs.NewCA("not the sandbox's CA", certs.Years(1))
	if err != nil {
		t.Fatal(err)
	}
	op, _ := other.Pair()
	wrongCA := filepath.Join(t.TempDir(), "wrong-ca.pem")
	if err := op.Write(wrongCA, ""); err != nil {
		t.Fatal(err)
	}
	// The replicas' SSL options as someone else left them: TLS without a
	// CA or verification. dbpilot's CHANGE MASTER must set replication.tls.
	for _, n := range []string{"node2", "node3"} {
		if _, err := sandbox.Exec(context.Background(), d, n, "STOP SLAVE"); err != nil {
			t.Fatal(err)
		}
		if _, err := sandbox.Exec(context.Background(), d, n, "CHANGE MASTER TO MASTER_SSL=1, MASTER_SSL_CA='', MASTER_SSL_CERT='', MASTER_SSL_KEY='', MASTER_SSL_VERIFY_SERVER_CERT=0"); err != nil {
			t.Fatal(err)
		}
		if _, err := sandbox.Exec(context.Background(), d, n, "START SLAVE"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	ms := openMetrics(t, dir)
	f := startDaemon(t, d, func(c *daemon.Config) {
		own := c.TLS
		c.Clusters[0].TLS = &own
		c.TLS = daemon.TLSConfig{CA: wrongCA}
	}, daemon.Wiring{MetricsStore: ms})
	if st := f.status(); len(st.Instances) != 3 {
		t.Fatalf("discovered %d instances, want 3: %+v", len(st.Instances), st)
	}
	testutil.WaitFor(t, 15*time.Second, "collectors on 3 nodes over TLS", func() (bool, string) {
		series, err := ms.QueryInstant(context.Background(), "mysql_global_status_uptime > 0", time.Now())
		return err == nil && len(series) == 3, fmt.Sprint(len(series), " series, ", err)
	})

	f.exec("node1", "CREATE DATABASE app")
	f.exec("node1", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	f.exec("node1", "INSERT INTO app.t VALUES (1)")
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	rec := f.waitRecovery(1, 30*time.Second)
	if !rec.Success || rec.OldPrimary != f.key("node1") {
		t.Fatalf("recovery: %+v\naudit:\n%s", rec, f.auditText())
	}
	newP := map[dbpilot.InstanceKey]string{f.key("node2"): "node2", f.key("node3"): "node3"}[rec.NewPrimary]
	replica := map[string]string{"node2": "node3", "node3": "node2"}[newP]
	if newP == "" {
		t.Fatalf("new primary %s is not node2 or node3", rec.NewPrimary)
	}
	f.assertFollows(replica, newP)
	st := f.slaveStatus(replica)
	if st["Master_SSL_Allowed"] != "Yes" || st["Master_SSL_Verify_Server_Cert"] != "Yes" || st["Master_SSL_CA_File"] != d.TLS.CA ||
		st["Master_SSL_Cert"] != d.TLS.ClientCert || st["Slave_IO_Running"] != "Yes" || st["Slave_SQL_Running"] != "Yes" {
		t.Errorf("%s after the failover: SSL %s, verify %s, CA %q, cert %q, IO %s, SQL %s, error %q", replica,
			st["Master_SSL_Allowed"], st["Master_SSL_Verify_Server_Cert"], st["Master_SSL_CA_File"], st["Master_SSL_Cert"],
			st["Slave_IO_Running"], st["Slave_SQL_Running"], st["Last_IO_Error"])
	}
	f.waitValue(newP, "SELECT @@read_only", "0", 30*time.Second)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the replica and the new primary say, for a failure after
		// the failover (the row not replicated: it happened once in CI).
		st := f.slaveStatus(replica)
		t.Logf("%s: IO %s (%s), SQL %s, Last_IO_Error %q, Last_SQL_Error %q, Master_Host:Port %s:%s, Gtid_IO_Pos %s, gtid_slave_pos %s; %s: gtid_binlog_pos %s",
			replica, st["Slave_IO_Running"], st["Slave_IO_State"], st["Slave_SQL_Running"], st["Last_IO_Error"], st["Last_SQL_Error"],
			st["Master_Host"], st["Master_Port"], st["Gtid_IO_Pos"], f.value(replica, "SELECT @@global.gtid_slave_pos"), newP, f.value(newP, "SELECT @@global.gtid_binlog_pos"))
		t.Logf("audit:\n%s", f.auditText())
	})
	f.exec(newP, "INSERT INTO app.t VALUES (2)")
	f.waitValue(replica, "SELECT COUNT(*) FROM app.t", "2", 30*time.Second)
	if got := f.waitState(dbpilot.ClusterOK, 15*time.Second).Primary; got != rec.NewPrimary {
		t.Errorf("status primary %s, want %s", got, rec.NewPrimary)
	}
}
