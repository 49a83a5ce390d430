package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/galera"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// requireGalera skips (or, with CI=true, fails) a test when the machine
// cannot run a Galera sandbox with the given state transfer method.
func requireGalera(t *testing.T, sst string) {
	t.Helper()
	srv := testutil.RequireServer(t)
	missing := func(format string, args ...any) {
		t.Helper()
		if testutil.InCI() {
			t.Fatalf("CI=true and Galera cannot run: "+format, args...)
		}
		t.Skipf("Galera cannot run (run 'make test-deps'): "+format, args...)
	}
	if srv.Flavor != dbpilot.FlavorMariaDB {
		missing("the server is %s, not MariaDB", srv.Flavor)
	}
	if _, err := sandbox.FindGaleraProvider(context.Background(), srv.Basedir, ""); err != nil {
		missing("%v", err)
	}
	tools := []string{"rsync"}
	if sst == sandbox.SSTMariabackup {
		tools = []string{"socat"}
		if _, err := exec.LookPath("mariabackup"); err != nil {
			if _, err := exec.LookPath("mariadb-backup"); err != nil {
				missing("mariabackup is not installed")
			}
		}
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing("%s is not installed", tool)
		}
	}
}

// galeraSpec is the spec of a Galera test sandbox: tests stop and start
// nodes themselves, so servers die with the test binary.
func galeraSpec(name, topology string, nodes int, sst string) sandbox.Spec {
	return sandbox.Spec{Name: name, Topology: topology, Nodes: nodes, SST: sst, Process: sandbox.ProcessOptions{KillWithParent: true}}
}

var testPO = sandbox.ProcessOptions{KillWithParent: true}

// waitSynced waits until every Galera node of d runs and is Synced in one
// Primary component of the full size.
func waitSynced(t *testing.T, d *sandbox.Descriptor) {
	t.Helper()
	size := 0
	for _, n := range d.Nodes {
		if n.IsGalera() {
			size++
		}
	}
	testutil.WaitFor(t, 60*time.Second, "every Galera node Synced", func() (bool, string) {
		for _, s := range sandbox.Status(context.Background(), d) {
			n, _ := d.Node(s.Node)
			if !n.IsGalera() {
				continue
			}
			if !s.Running || !s.Galera.Synced() || s.Galera.ClusterSize != size {
				return false, s.Node + ": " + s.Error + " " + galeraState(s.Galera)
			}
		}
		return true, ""
	})
}

func galeraState(g *sandbox.GaleraStatus) string {
	if g == nil {
		return "no wsrep status"
	}
	return g.State + " " + g.ClusterStatus + " " + g.Error
}

func TestGaleraRsync(t *testing.T) {
	requireGalera(t, sandbox.SSTRsync)
	d := testutil.MustSandbox(t, galeraSpec("gal", sandbox.TopologyGalera, 3, ""))
	if d.Galera == nil || d.Galera.SST != sandbox.SSTRsync || !strings.HasSuffix(d.Galera.Provider, "libgalera_smm.so") {
		t.Fatalf("descriptor Galera = %+v", d.Galera)
	}
	// Every port of the sandbox is distinct and lies in its block.
	seen := map[int]string{}
	for _, n := range d.Nodes {
		if !n.IsGalera() || n.Role != sandbox.RoleGalera {
			t.Fatalf("%s: role %s, galera port %d", n.Name, n.Role, n.GaleraPort)
		}
		for _, p := range n.Ports() {
			if other, dup := seen[p]; dup {
				t.Fatalf("port %d of %s also used by %s", p, n.Name, other)
			}
			seen[p] = n.Name
			if p <= d.Nodes[0].Port-1 || p > d.Nodes[0].Port-1+12 {
				t.Errorf("port %d of %s outside the block %d+1..12", p, n.Name, d.Nodes[0].Port-1)
			}
		}
	}
	waitSynced(t, d)
	for _, n := range d.Nodes {
		// Loopback only, GTIDs on, the Galera basics, and the accounts
		// (created on node1 before the others joined) everywhere.
		waitValue(t, d, n.Name, "SELECT CONCAT_WS(',', @@bind_address, @@wsrep_gtid_mode, @@wsrep_gtid_domain_id, @@binlog_format, @@innodb_autoinc_lock_mode, @@log_slave_updates)", "127.0.0.1,ON,0,ROW,2,ON")
		waitValue(t, d, n.Name, "SELECT COUNT(*) FROM mysql.user WHERE user IN ('dbpilot','repl')", "6")
		waitValue(t, d, n.Name, "SELECT @@wsrep_provider_options LIKE '%gmcast.listen_addr = tcp://127.0.0.1:%'", "1")
	}
	// Writes on any node appear on the others.
	mustExec(t, d, "node1", "CREATE DATABASE app")
	mustExec(t, d, "node1", "CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))")
	waitTable(t, d, "node2", "app", "t")
	mustExec(t, d, "node2", "INSERT INTO app.t (v) VALUES ('from-node2')")
	mustExec(t, d, "node3", "INSERT INTO app.t (v) VALUES ('from-node3')")
	for _, n := range []string{"node1", "node2", "node3"} {
		waitValue(t, d, n, "SELECT GROUP_CONCAT(v ORDER BY v) FROM app.t", "from-node2,from-node3")
	}
	// The cluster's transactions carry GTIDs of the shared domain 0.
	pos, err := testutil.Value(d, "node1", "SELECT @@gtid_binlog_pos")
	if err != nil || !strings.HasPrefix(pos, "0-") {
		t.Errorf("gtid_binlog_pos on node1 = %q, %v; want domain 0", pos, err)
	}

	// A crashed node rejoins (by IST) on start and is Synced again.
	if err := sandbox.Kill(d, "node2"); err != nil {
		t.Fatal(err)
	}
	waitValue(t, d, "node1", "SELECT variable_value FROM information_schema.global_status WHERE variable_name='wsrep_cluster_size'", "2")
	mustExec(t, d, "node1", "INSERT INTO app.t (v) VALUES ('while-node2-down')")
	if err := sandbox.Start(context.Background(), d, "node2", testPO); err != nil {
		t.Fatal(err)
	}
	waitValue(t, d, "node2", "SELECT COUNT(*) FROM app.t WHERE v='while-node2-down'", "1")
	waitSynced(t, d)
	if b, _ := os.ReadFile(d.Nodes[1].ErrorLog); !strings.Contains(string(b), "IST received") {
		t.Errorf("node2 did not rejoin by IST; its error log lacks \"IST received\"")
	}

	// Stop and start the whole sandbox: node1 stops last and carries the
	// safe_to_bootstrap mark; start bootstraps from it and the rest join.
	if err := sandbox.Stop(d, ""); err != nil {
		t.Fatal(err)
	}
	st := sandbox.Status(context.Background(), d)
	if st[0].Running || !strings.Contains(st[0].Error, "safe_to_bootstrap 1") || !strings.Contains(st[2].Error, "safe_to_bootstrap 0") {
		t.Errorf("status after stop: %+v", st)
	}
	if err := sandbox.Start(context.Background(), d, "", testPO); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, d)
	waitValue(t, d, "node3", "SELECT COUNT(*) FROM app.t", "3")
}

// TestGaleraMariabackup deploys a 2-node cluster whose joiner gets its
// state by mariabackup, then kills the donor in the middle of a second full
// transfer: the joiner's start fails with its state and the error-log lines
// that explain it, and nothing is bootstrapped behind the user's back.
func TestGaleraMariabackup(t *testing.T) {
	requireGalera(t, sandbox.SSTMariabackup)
	d := testutil.MustSandbox(t, galeraSpec("galmb", sandbox.TopologyGalera, 2, sandbox.SSTMariabackup))
	waitSynced(t, d)
	if b, _ := os.ReadFile(d.Nodes[1].ErrorLog); !strings.Contains(string(b), "wsrep_sst_mariabackup --role 'joiner'") {
		t.Fatalf("node2 did not join by mariabackup SST")
	}
	mustExec(t, d, "node1", "CREATE DATABASE app")
	mustExec(t, d, "node1", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))")
	waitTable(t, d, "node2", "app", "t")
	mustExec(t, d, "node2", "INSERT INTO app.t VALUES (1, 'via-node2')")
	waitValue(t, d, "node1", "SELECT v FROM app.t WHERE id=1", "via-node2")

	// Force a full transfer: node2 loses its saved state.
	if err := sandbox.Stop(d, "node2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d.Nodes[1].Datadir, galera.GrastateFile)); err != nil {
		t.Fatal(err)
	}
	donorLog := d.Nodes[0].ErrorLog
	before, _ := os.ReadFile(donorLog)
	errc := make(chan error, 1)
	go func() { errc <- sandbox.Start(context.Background(), d, "node2", testPO) }()
	// Kill the donor once it is sending.
	testutil.WaitFor(t, 60*time.Second, "node1 donating by mariabackup", func() (bool, string) {
		b, _ := os.ReadFile(donorLog)
		return len(b) > len(before) && strings.Contains(string(b[len(before):]), "wsrep_sst_mariabackup --role 'donor'"), ""
	})
	time.Sleep(300 * time.Millisecond)
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(3 * time.Minute):
		t.Fatal("node2's start did not return after its donor died")
	}
	if err == nil {
		t.Fatal("node2 joined although its donor was killed mid-transfer")
	}
	msg := err.Error()
	t.Logf("start error, as the user sees it:\n%s", msg)
	if !strings.Contains(msg, "node2 did not join the cluster") || !strings.Contains(msg, "error log") ||
		!(strings.Contains(msg, "State transfer") || strings.Contains(msg, "SST") || strings.Contains(msg, "never receive state")) {
		t.Errorf("start error does not explain the failed transfer:\n%s", msg)
	}
	// Nothing was bootstrapped by accident.
	time.Sleep(500 * time.Millisecond)
	for _, s := range sandbox.Status(context.Background(), d) {
		if s.Running {
			t.Errorf("%s runs after the failed transfer: %+v", s.Node, s)
		}
	}
	// Starting node2 alone has nothing to join: refused.
	if err := sandbox.Start(context.Background(), d, "node2", testPO); err == nil || !strings.Contains(err.Error(), "nothing to join") {
		t.Errorf("starting one node of a stopped cluster = %v, want a refusal", err)
	}
	// The safe bootstrap recovers node1's position (it crashed), ignores
	// the unfinished joiner, and brings both back; node2 gets a full SST.
	if err := sandbox.Start(context.Background(), d, "", testPO); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, d)
	waitValue(t, d, "node2", "SELECT v FROM app.t WHERE id=1", "via-node2")
}

// TestGaleraReplica: an asynchronous GTID replica of node1 receives the
// writes made on any Galera node, and is no Galera node itself.
func TestGaleraReplica(t *testing.T) {
	requireGalera(t, sandbox.SSTRsync)
	d := testutil.MustSandbox(t, galeraSpec("galr", sandbox.TopologyGaleraReplica, 2, ""))
	if len(d.Nodes) != 3 || d.Nodes[2].IsGalera() || d.Nodes[2].Role != sandbox.RoleReplica || d.Nodes[2].Sources[0].Node != "node1" {
		t.Fatalf("layout: %+v", d.Nodes)
	}
	waitSynced(t, d)
	mustExec(t, d, "node1", "CREATE DATABASE app")
	mustExec(t, d, "node1", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))")
	waitTable(t, d, "node2", "app", "t")
	mustExec(t, d, "node2", "INSERT INTO app.t VALUES (1, 'written-on-node2')")
	waitValue(t, d, "node3", "SELECT v FROM app.t WHERE id=1", "written-on-node2")
	waitValue(t, d, "node3", "SELECT @@read_only", "1")
	// The replica follows by GTID in the cluster's domain.
	waitValue(t, d, "node3", "SELECT @@gtid_slave_pos LIKE '0-%'", "1")
	st := sandbox.Status(context.Background(), d)
	if st[2].Galera != nil || len(st[2].Channels) != 1 || st[2].Channels[0].IO != "Yes" || !st[2].Channels[0].SQL {
		t.Errorf("replica status: %+v", st[2])
	}
	// The replica is not a Galera node: asking it for wsrep state says so.
	gn, err := d.GaleraNodes(testPO)
	if err != nil || len(gn) != 2 {
		t.Fatalf("GaleraNodes = %v, %v", gn, err)
	}
	db, err := openNode(d, "node3")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := galera.QueryStatus(context.Background(), db, d.Nodes[2].Key()); !galera.IsNotGalera(err) || !strings.Contains(err.Error(), d.Nodes[2].Key().String()) {
		t.Errorf("QueryStatus on the replica = %v, want 'not a Galera node' naming it", err)
	}
	// Stop and start all: the cluster is bootstrapped, the replica resumes.
	if err := sandbox.Stop(d, ""); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.Start(context.Background(), d, "", testPO); err != nil {
		t.Fatal(err)
	}
	mustExec(t, d, "node1", "INSERT INTO app.t VALUES (2, 'after-restart')")
	waitValue(t, d, "node3", "SELECT v FROM app.t WHERE id=2", "after-restart")
}

func TestGaleraNotGaleraSandbox(t *testing.T) {
	d := &sandbox.Descriptor{Name: "plain", Topology: sandbox.TopologyReplication}
	if _, err := d.GaleraNodes(testPO); err == nil || dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED || !strings.Contains(err.Error(), "not a Galera sandbox") {
		t.Errorf("GaleraNodes on a replication sandbox = %v", err)
	}
}

func openNode(d *sandbox.Descriptor, node string) (*mysql.DB, error) {
	n, err := d.Node(node)
	if err != nil {
		return nil, err
	}
	return mysql.Open(context.Background(), n.Key(), d.AdminOptions())
}

// waitTable waits until node has db.table: a DDL statement returns once the
// Galera node that ran it applied it; the others apply it in the same total
// order, a moment later on a busy machine.
func waitTable(t *testing.T, d *sandbox.Descriptor, node, db, table string) {
	t.Helper()
	waitValue(t, d, node, fmt.Sprintf("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '%s' AND table_name = '%s'", db, table), "1")
}
