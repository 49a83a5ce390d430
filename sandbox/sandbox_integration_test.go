package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// waitValue polls a query on a node until it returns want.
func waitValue(t *testing.T, d *sandbox.Descriptor, node, query, want string) {
	t.Helper()
	testutil.WaitValue(t, d, node, query, want, 20*time.Second)
}

func mustExec(t *testing.T, d *sandbox.Descriptor, node, query string) {
	t.Helper()
	if _, err := sandbox.Exec(context.Background(), d, node, query); err != nil {
		t.Fatalf("%s on %s: %v", query, node, err)
	}
}

// serverProcesses lists live server processes whose config lies under dir.
func serverProcesses(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			continue
		}
		out = append(out, e.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

func assertDestroyed(t *testing.T, d *sandbox.Descriptor) {
	t.Helper()
	if err := sandbox.Destroy(d.Name); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if p := serverProcesses(d.Dir); len(p) > 0 {
		t.Fatalf("processes survive destroy: %v", p)
	}
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after destroy (%v)", d.Dir, err)
	}
	if _, err := sandbox.Load(d.Name); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Fatalf("Load after destroy = %v, want not found", err)
	}
}

func TestReplicationTopology(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Name: "repl", Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	st, err := os.Stat(filepath.Join(d.Dir, "sandbox.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("descriptor mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	// A fresh sandbox has no GTIDs at all: accounts were created with binlog off.
	for _, n := range d.Nodes {
		waitValue(t, d, n.Name, "SELECT @@gtid_binlog_pos", "")
	}
	mustExec(t, d, "node1", "CREATE DATABASE app")
	mustExec(t, d, "node1", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10))")
	mustExec(t, d, "node1", "INSERT INTO app.t VALUES (1, 'x')")
	for _, n := range []string{"node2", "node3"} {
		waitValue(t, d, n, "SELECT v FROM app.t WHERE id=1", "x")
		waitValue(t, d, n, "SELECT @@read_only", "1")
	}
	waitValue(t, d, "node1", "SELECT @@read_only", "0")
	waitValue(t, d, "node1", "SELECT variable_value FROM information_schema.global_status WHERE variable_name='Rpl_semi_sync_master_clients'", "2")
	waitValue(t, d, "node2", "SELECT @@gtid_slave_pos", "0-"+fmt.Sprint(d.Nodes[0].ServerID)+"-3")

	// Stop and start one node: replication resumes.
	if err := sandbox.Stop(d, "node3"); err != nil {
		t.Fatal(err)
	}
	if st := sandbox.Status(context.Background(), d); st[2].Running {
		t.Fatalf("node3 still running after stop: %+v", st[2])
	}
	mustExec(t, d, "node1", "INSERT INTO app.t VALUES (2, 'y')")
	if err := sandbox.Start(context.Background(), d, "node3", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	waitValue(t, d, "node3", "SELECT v FROM app.t WHERE id=2", "y")
	for _, s := range sandbox.Status(context.Background(), d) {
		if !s.Running {
			t.Errorf("%s not running: %s", s.Node, s.Error)
		}
		if s.Node != "node1" && (len(s.Channels) != 1 || s.Channels[0].IO != "Yes" || !s.Channels[0].SQL) {
			t.Errorf("%s channels = %+v", s.Node, s.Channels)
		}
	}
	// Every node starts read_only; Start opens the primary again after its
	// restart, and a former primary started while another node is
	// writable stays read_only.
	if err := sandbox.Restart(context.Background(), d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	waitValue(t, d, "node1", "SELECT @@read_only", "0")
	mustExec(t, d, "node1", "INSERT INTO app.t VALUES (3, 'z')")
	waitValue(t, d, "node2", "SELECT v FROM app.t WHERE id=3", "z")
	if err := sandbox.Stop(d, "node1"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, d, "node2", "STOP ALL SLAVES")
	mustExec(t, d, "node2", "RESET SLAVE ALL")
	mustExec(t, d, "node2", "SET GLOBAL read_only = OFF")
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	if err := sandbox.Start(context.Background(), d, "node1", sandbox.ProcessOptions{KillWithParent: true, Log: logf}); err != nil {
		t.Fatal(err)
	}
	waitValue(t, d, "node1", "SELECT @@read_only", "1")
	if !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "node1 stays read_only: node2 is writable") }) {
		t.Errorf("start of the former primary logged %q", logged)
	}
	// With two nodes without replication and none writable, none is opened.
	mustExec(t, d, "node2", "SET GLOBAL read_only = ON")
	if err := sandbox.Restart(context.Background(), d, "node1", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
		t.Fatal(err)
	}
	waitValue(t, d, "node1", "SELECT @@read_only", "1")
	waitValue(t, d, "node2", "SELECT @@read_only", "1")

	env := strings.Join(sandbox.Env(d), "\n")
	if !strings.Contains(env, fmt.Sprintf("export NODE2_PORT=%d", d.Nodes[1].Port)) || !strings.Contains(env, "DBPILOT_PASSWORD=") {
		t.Errorf("env output incomplete:\n%s", env)
	}
	assertDestroyed(t, d)
}

func TestRingTopology(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Name: "ring", Topology: sandbox.TopologyRing, Nodes: 3})
	mustExec(t, d, "node1", "CREATE DATABASE app")
	waitValue(t, d, "node3", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='app'", "1")
	mustExec(t, d, "node2", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	waitValue(t, d, "node3", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app' AND table_name='t'", "1")
	mustExec(t, d, "node3", "INSERT INTO app.t VALUES (3)")
	waitValue(t, d, "node3", "SELECT COUNT(*) FROM app.t", "1")
	// Every write reaches every member; each member has its own domain.
	// node1 is the one writer; the others are read_only (the admin account
	// writes through it, as a DBA would). Two writable members would be
	// MultipleWritable.
	for _, n := range d.Nodes {
		waitValue(t, d, n.Name, "SELECT COUNT(*) FROM app.t", "1")
		waitValue(t, d, n.Name, "SELECT @@gtid_domain_id", fmt.Sprint(n.Index))
		ro := "1"
		if n.Name == "node1" {
			ro = "0"
		}
		waitValue(t, d, n.Name, "SELECT @@read_only", ro)
	}
	want := fmt.Sprintf("1-%d-1,2-%d-1,3-%d-1", d.Nodes[0].ServerID, d.Nodes[1].ServerID, d.Nodes[2].ServerID)
	for _, n := range d.Nodes {
		waitValue(t, d, n.Name, "SELECT @@gtid_current_pos", want)
	}
	// Inserts on every writer do not collide on AUTO_INCREMENT keys.
	mustExec(t, d, "node1", "CREATE TABLE app.ai (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
	for _, n := range d.Nodes {
		waitValue(t, d, n.Name, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app' AND table_name='ai'", "1")
	}
	for i := 0; i < 5; i++ {
		for _, n := range d.Nodes {
			mustExec(t, d, n.Name, "INSERT INTO app.ai (n) VALUES (1)")
		}
	}
	for _, n := range d.Nodes {
		waitValue(t, d, n.Name, "SELECT COUNT(*) FROM app.ai", "15")
	}
	for _, s := range sandbox.Status(context.Background(), d) {
		if len(s.Channels) != 1 || s.Channels[0].IO != "Yes" || !s.Channels[0].SQL {
			t.Errorf("%s replication broke after concurrent inserts: %+v", s.Node, s.Channels)
		}
	}
	assertDestroyed(t, d)
}

func TestMultiSourceTopology(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Name: "ms", Topology: sandbox.TopologyMultiSource, Nodes: 3})
	mustExec(t, d, "node1", "CREATE DATABASE a")
	mustExec(t, d, "node2", "CREATE DATABASE b")
	waitValue(t, d, "node3", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name IN ('a','b')", "2")
	waitValue(t, d, "node3", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name IN ('a','b')", "2")
	rows, err := sandbox.Exec(context.Background(), d, "node3", "SHOW ALL SLAVES STATUS")
	if err != nil {
		t.Fatal(err)
	}
	var conns []string
	for _, r := range rows.Maps() {
		conns = append(conns, r["Connection_name"]+":"+r["Slave_IO_Running"]+"/"+r["Slave_SQL_Running"])
	}
	if strings.Join(conns, ",") != "node1:Yes/Yes,node2:Yes/Yes" {
		t.Errorf("connections = %v", conns)
	}
	// The sources do not replicate from each other.
	waitValue(t, d, "node1", "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name='b'", "0")
	want := fmt.Sprintf("1-%d-1,2-%d-1", d.Nodes[0].ServerID, d.Nodes[1].ServerID)
	waitValue(t, d, "node3", "SELECT @@gtid_slave_pos", want)
	assertDestroyed(t, d)
}

func TestSingle(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Name: "one", Topology: sandbox.TopologySingle})
	waitValue(t, d, "node1", "SELECT @@bind_address", "127.0.0.1")
	waitValue(t, d, "1", "SELECT @@log_bin", "1")
	// The admin account works over TCP and root has a password.
	if _, err := sandbox.Exec(context.Background(), &sandbox.Descriptor{Name: d.Name, Nodes: d.Nodes, Admin: d.Repl}, "node1", "CREATE DATABASE x"); dbpilot.ErrorCode(err) != dbpilot.EAUTH {
		t.Errorf("replication user could create a database: %v", err)
	}
	root := *d
	root.Admin.User = "root"
	root.Admin.Password = ""
	if _, err := sandbox.Exec(context.Background(), &root, "node1", "SELECT 1"); dbpilot.ErrorCode(err) != dbpilot.EAUTH {
		t.Errorf("root without password: %v, want access denied", err)
	}
}

func TestDeployFailures(t *testing.T) {
	testutil.RequireServer(t)
	testutil.Home(t)
	ctx := context.Background()

	// An existing name fails clearly; --force replaces it.
	d := testutil.MustSandbox(t, sandbox.Spec{Name: "dup", Topology: sandbox.TopologySingle})
	_, err := sandbox.Deploy(ctx, sandbox.Spec{Name: "dup", Topology: sandbox.TopologySingle})
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("deploy over existing: %v", err)
	}
	d2, err := sandbox.Deploy(ctx, sandbox.Spec{Name: "dup", Topology: sandbox.TopologySingle, Force: true, Process: sandbox.ProcessOptions{KillWithParent: true}})
	if err != nil {
		t.Fatalf("deploy --force: %v", err)
	}
	if p := serverProcesses(d.Nodes[0].Config); len(p) != 1 {
		t.Errorf("after --force want exactly the new server, got %v", p)
	}
	if d2.Admin.Password == d.Admin.Password {
		t.Error("--force kept the old credentials")
	}

	// A port in use is refused before anything is created.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	_, err = sandbox.Deploy(ctx, sandbox.Spec{Name: "busy", Topology: sandbox.TopologySingle, PortBase: busy - 1})
	if dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), fmt.Sprintf("port %d", busy)) {
		t.Errorf("deploy on a busy port: %v", err)
	}
	if dir, _ := sandbox.Dir("busy"); fileExists(dir) {
		t.Errorf("%s left behind", dir)
	}

	// A server that cannot start: the error quotes its log, and nothing is left.
	_, err = sandbox.Deploy(ctx, sandbox.Spec{Name: "broken", Topology: sandbox.TopologyReplication, Nodes: 2,
		Options: []string{"no_such_server_option=1"}, Process: sandbox.ProcessOptions{KillWithParent: true}})
	if err == nil || !strings.Contains(err.Error(), "no_such_server_option") {
		t.Errorf("deploy with a bad option: %v, want the error log quoted", err)
	}
	dir, _ := sandbox.Dir("broken")
	if fileExists(dir) {
		t.Errorf("%s left behind after a failed deploy", dir)
	}
	if p := serverProcesses(dir); len(p) > 0 {
		t.Errorf("processes left after a failed deploy: %v", p)
	}

	// A missing server binary.
	_, err = sandbox.Deploy(ctx, sandbox.Spec{Name: "nobin", Basedir: t.TempDir()})
	if dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND || !strings.Contains(err.Error(), "no server binary") {
		t.Errorf("deploy without binaries: %v", err)
	}

	// An unknown sandbox.
	if _, err := sandbox.Load("nosuch"); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND || !strings.Contains(err.Error(), `no sandbox named "nosuch"`) {
		t.Errorf("Load(nosuch) = %v", err)
	}
	if err := sandbox.Destroy("nosuch"); dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		t.Errorf("Destroy(nosuch) = %v", err)
	}
}

func TestDeployCancelled(t *testing.T) {
	testutil.RequireServer(t)
	testutil.Home(t)
	// Cancel mid-deploy (what Ctrl-C does), once the servers run and before
	// replication is wired: nothing survives.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logf := func(format string, args ...any) {
		if strings.Contains(format, "accept connections") {
			cancel()
		}
	}
	_, err := sandbox.Deploy(ctx, sandbox.Spec{Name: "cancel", Topology: sandbox.TopologyReplication, Nodes: 3, PortBase: 19500, Log: logf, Process: sandbox.ProcessOptions{KillWithParent: true}})
	if err == nil {
		sandbox.Destroy("cancel")
		t.Fatal("deploy succeeded although it was cancelled while its servers ran")
	}
	dir, _ := sandbox.Dir("cancel")
	if fileExists(dir) {
		t.Errorf("%s left behind after cancellation", dir)
	}
	if p := serverProcesses(dir); len(p) > 0 {
		t.Errorf("processes left after cancellation: %v", p)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
