package topology_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/topology"
)

// Integration tests: discovery, analysis and rendering over real sandboxes,
// through a real mysql.Inspector. They are not parallel (testutil uses
// t.Setenv).

// fleet is a sandbox with an inspector for it.
type fleet struct {
	t  *testing.T
	d  *sandbox.Descriptor
	in *mysql.Inspector
}

func newFleet(t *testing.T, spec sandbox.Spec) *fleet {
	t.Helper()
	d := testutil.MustSandbox(t, spec)
	in := mysql.NewInspector(d.AdminOptions())
	t.Cleanup(func() { in.Close() })
	return &fleet{t: t, d: d, in: in}
}

func (f *fleet) node(name string) *sandbox.Node {
	f.t.Helper()
	n, err := f.d.Node(name)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fleet) key(name string) dbpilot.InstanceKey { return f.node(name).Key() }

func (f *fleet) keys(names ...string) []dbpilot.InstanceKey {
	out := make([]dbpilot.InstanceKey, len(names))
	for i, n := range names {
		out[i] = f.key(n)
	}
	return out
}

// name returns the node name of a key ("node2"), or the key itself.
func (f *fleet) name(k dbpilot.InstanceKey) string {
	for _, n := range f.d.Nodes {
		if n.Key().Equal(k) {
			return n.Name
		}
	}
	return k.String()
}

// discover runs Discover from the seeds and fails the test on error.
func (f *fleet) discover(seeds ...string) []*dbpilot.Instance {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	insts, err := topology.Discover(ctx, f.in, f.keys(seeds...), topology.Options{})
	if err != nil {
		f.t.Fatalf("discover from %v: %v", seeds, err)
	}
	return insts
}

// summary names each problem as "Code@node" or "Code@node/channel", sorted.
func (f *fleet) summary(ps []dbpilot.Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		s := string(p.Code) + "@" + f.name(p.Instance)
		if p.Channel != "" {
			s += "/" + p.Channel
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// describe lists problems in full for failure messages.
func (f *fleet) describe(ps []dbpilot.Problem) string {
	if len(ps) == 0 {
		return "(no problems)"
	}
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n  %s %s@%s(%s) ch=%q: %s %v", p.Severity, p.Code, f.name(p.Instance), p.Instance, p.Channel, p.Message, p.Detail)
	}
	return b.String()
}

// waitProblems discovers from seeds and analyzes until the problems are
// exactly want (as summary spells them), for up to timeout. It returns the
// last observation.
func (f *fleet) waitProblems(seeds []string, opt topology.AnalyzeOptions, timeout time.Duration, want ...string) ([]*dbpilot.Instance, []dbpilot.Problem) {
	f.t.Helper()
	if want == nil {
		want = []string{}
	}
	slices.Sort(want)
	deadline := time.Now().Add(timeout)
	for {
		insts := f.discover(seeds...)
		ps := topology.Analyze(insts, opt)
		if slices.Equal(f.summary(ps), want) {
			return insts, ps
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("after %s, problems = %v, want %v; in full:%s\ntree:\n%s", timeout, f.summary(ps), want, f.describe(ps), render(f.t, insts, ps))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitClean waits until discovery from seeds finds no problem at all.
func (f *fleet) waitClean(seeds ...string) {
	f.t.Helper()
	f.waitProblems(seeds, topology.AnalyzeOptions{}, 15*time.Second)
}

// problem returns the one problem with code on node, failing the test when
// there is not exactly one.
func (f *fleet) problem(ps []dbpilot.Problem, code dbpilot.ProblemCode, node string) dbpilot.Problem {
	f.t.Helper()
	var found []dbpilot.Problem
	for _, p := range ps {
		if p.Code == code && p.Instance.Equal(f.key(node)) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		f.t.Fatalf("want exactly one %s on %s, got %d; problems:%s", code, node, len(found), f.describe(ps))
	}
	return found[0]
}

// exec runs one statement on a node through a fresh connection.
func (f *fleet) exec(node, query string) {
	f.t.Helper()
	if _, err := sandbox.Exec(context.Background(), f.d, node, query); err != nil {
		f.t.Fatalf("%s on %s: %v", query, node, err)
	}
}

// value returns the single value of a query on a node ("" for NULL).
func (f *fleet) value(node, query string) string {
	f.t.Helper()
	rows, err := sandbox.Exec(context.Background(), f.d, node, query)
	if err != nil {
		f.t.Fatalf("%s on %s: %v", query, node, err)
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 {
		f.t.Fatalf("%s on %s: got %d rows, want one value", query, node, len(rows.Values))
	}
	if v := rows.Values[0][0]; v != nil {
		return *v
	}
	return ""
}

// waitValue polls a query on a node until it returns want.
func (f *fleet) waitValue(node, query, want string) {
	f.t.Helper()
	testutil.WaitValue(f.t, f.d, node, query, want, 15*time.Second)
}

// waitConverged waits until every named node has one @@gtid_current_pos.
func (f *fleet) waitConverged(nodes ...string) string {
	f.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pos := map[string]string{}
		same := true
		for _, n := range nodes {
			pos[n] = f.value(n, "SELECT @@gtid_current_pos")
			same = same && pos[n] == pos[nodes[0]]
		}
		if same {
			return pos[nodes[0]]
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("members did not converge: gtid_current_pos %v", pos)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// session holds one connection to a node, so that session settings (SET
// SESSION sql_log_bin=0) and open transactions stay put between statements.
type session struct {
	t    *testing.T
	node string
	conn *sql.Conn
}

func (f *fleet) session(node string) *session {
	f.t.Helper()
	ctx := context.Background()
	db, err := mysql.Open(ctx, f.key(node), f.d.AdminOptions())
	if err != nil {
		f.t.Fatalf("open %s: %v", node, err)
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		db.Close()
		f.t.Fatalf("connect %s: %v", node, err)
	}
	f.t.Cleanup(func() {
		conn.Close()
		db.Close()
	})
	return &session{t: f.t, node: node, conn: conn}
}

func (s *session) exec(stmts ...string) {
	s.t.Helper()
	for _, q := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.conn.ExecContext(ctx, q)
		cancel()
		if err != nil {
			s.t.Fatalf("%s on %s: %v", q, s.node, err)
		}
	}
}

func (s *session) close() { s.conn.Close() }

func render(t *testing.T, insts []*dbpilot.Instance, ps []dbpilot.Problem) string {
	t.Helper()
	var b strings.Builder
	if err := topology.RenderText(&b, topology.Clusters(insts), ps); err != nil {
		t.Fatalf("render: %v", err)
	}
	return b.String()
}

// lineOf returns the tree line of key (the first, for a node drawn twice).
func lineOf(tree string, k dbpilot.InstanceKey) string {
	for _, l := range strings.Split(tree, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " +"), k.String()+" ") {
			return l
		}
	}
	return ""
}

func instanceAt(insts []*dbpilot.Instance, k dbpilot.InstanceKey) *dbpilot.Instance {
	for _, in := range insts {
		if in.Key.Equal(k) {
			return in
		}
	}
	return nil
}

func (f *fleet) keysOf(insts []*dbpilot.Instance) []string {
	out := make([]string, len(insts))
	for i, in := range insts {
		out[i] = f.name(in.Key)
	}
	return out
}

func (f *fleet) names(keys []dbpilot.InstanceKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = f.name(k)
	}
	return out
}

// TestIntegrationReplication deploys one primary with two semi-sync replicas,
// checks that it is found healthy, then breaks it in one way after another,
// each time checking the problem analysis names and repairing it. The
// errant transaction, which cannot be repaired, comes last.
func TestIntegrationReplication(t *testing.T) {
	f := newFleet(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 3, SemiSync: true})
	seeds := []string{"node2"}
	lag1s := topology.AnalyzeOptions{LagThreshold: time.Second}

	t.Run("healthy", func(t *testing.T) {
		f.t = t
		insts := f.discover(seeds...)
		if got := f.keysOf(insts); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
			t.Fatalf("discovered %v, want node1..node3", got)
		}
		for _, in := range insts {
			if !in.Reachable {
				t.Fatalf("%s unreachable: %s", f.name(in.Key), in.LastError)
			}
		}
		cs := topology.Clusters(insts)
		if len(cs) != 1 || len(cs[0].Primaries) != 1 || cs[0].Primaries[0] != f.key("node1") || len(cs[0].Instances) != 3 {
			t.Fatalf("clusters = %+v, want one of 3 instances with primary node1", cs)
		}
		if cs[0].Name != f.key("node1").String() {
			t.Errorf("cluster name %q, want %q", cs[0].Name, f.key("node1"))
		}
		ps := topology.Analyze(insts, topology.AnalyzeOptions{})
		if len(ps) != 0 {
			t.Fatalf("a fresh sandbox has problems:%s", f.describe(ps))
		}
		tree := render(t, insts, ps)
		t.Logf("tree:\n%s", tree)
		lines := strings.Split(strings.TrimSuffix(tree, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("tree has %d lines, want 3:\n%s", len(lines), tree)
		}
		if !strings.HasPrefix(lines[0], f.key("node1").String()+" ") || !strings.Contains(lines[0], "semi:primary") || !strings.Contains(lines[0], "[-,") {
			t.Errorf("first line should be primary node1 with semi:primary:\n%s", tree)
		}
		for i, name := range []string{"node2", "node3"} {
			l := lines[i+1]
			if !strings.HasPrefix(l, "+ "+f.key(name).String()+" ") || !strings.Contains(l, "semi:replica") {
				t.Errorf("line %d should be replica %s with semi:replica:\n%s", i+2, name, tree)
			}
		}
		for _, l := range lines {
			if !strings.Contains(l, ",ok,") || !strings.Contains(l, ",GTID,") {
				t.Errorf("line %q lacks ok or GTID:\n%s", l, tree)
			}
		}
	})

	t.Run("sql-thread-stopped", func(t *testing.T) {
		f.t = t
		f.exec("node1", "CREATE DATABASE app")
		f.exec("node1", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10))")
		f.waitValue("node2", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app' AND table_name='t'", "1")
		f.waitValue("node3", "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='app' AND table_name='t'", "1")
		// A row only node2 has, written without a GTID: no errant transaction.
		s := f.session("node2")
		s.exec("SET SESSION sql_log_bin=0", "INSERT INTO app.t VALUES (1, 'replica')")
		f.exec("node1", "INSERT INTO app.t VALUES (1, 'primary')")
		_, ps := f.waitProblems(seeds, topology.AnalyzeOptions{}, 15*time.Second, "ReplicationSQLStopped@node2")
		p := f.problem(ps, dbpilot.ProblemReplicationSQLStopped, "node2")
		if p.Severity != dbpilot.SeverityCritical || !strings.Contains(p.Detail["last_sql_error"], "Duplicate") ||
			p.Detail["last_sql_errno"] != "1062" || p.Detail["source"] != f.key("node1").String() || !strings.Contains(p.Message, "Duplicate") {
			t.Errorf("problem = %+v, want critical with the duplicate key error 1062 from node1", p)
		}
		// Repair: remove the conflicting row and restart the SQL thread.
		s.exec("DELETE FROM app.t WHERE id=1", "START SLAVE")
		s.close()
		f.waitValue("node2", "SELECT v FROM app.t WHERE id=1", "primary")
		f.waitClean(seeds...)
	})

	t.Run("writable-replica", func(t *testing.T) {
		f.t = t
		f.exec("node3", "SET GLOBAL read_only=0")
		_, ps := f.waitProblems(seeds, topology.AnalyzeOptions{}, 10*time.Second, "ReplicaNotReadOnly@node3")
		if p := f.problem(ps, dbpilot.ProblemReplicaNotReadOnly, "node3"); p.Detail["read_only"] != "OFF" || p.Detail["sources"] != f.key("node1").String() {
			t.Errorf("problem = %+v", p)
		}
		f.exec("node3", "SET GLOBAL read_only=1")
		f.waitClean(seeds...)
	})

	t.Run("delayed-replica-is-not-lagging", func(t *testing.T) {
		// A replica behind by less than its configured MASTER_DELAY is as
		// configured, not lagging.
		f.t = t
		f.exec("node3", "STOP SLAVE")
		f.exec("node3", "CHANGE MASTER TO MASTER_DELAY=30")
		f.exec("node3", "START SLAVE")
		f.exec("node1", "INSERT INTO app.t VALUES (2, 'delayed')")
		deadline := time.Now().Add(10 * time.Second)
		for {
			insts := f.discover(seeds...)
			ps := topology.Analyze(insts, lag1s)
			if len(ps) != 0 {
				t.Fatalf("delayed replica: problems:%s", f.describe(ps))
			}
			n3 := instanceAt(insts, f.key("node3"))
			if n3 == nil && time.Now().Before(deadline) {
				// Just restarted, node3 may not be registered on its
				// source yet (SHOW SLAVE HOSTS): crawl again.
				time.Sleep(200 * time.Millisecond)
				continue
			}
			var ch *dbpilot.ReplicationChannel
			if n3 != nil {
				ch = n3.Channel(f.key("node1"))
			}
			if ch == nil || ch.SQLDelay != 30 {
				t.Fatalf("node3 channel = %+v, want SQL_Delay 30", ch)
			}
			if ch.SecondsBehind != nil && *ch.SecondsBehind >= 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node3 never reported a lag of 3s or more under MASTER_DELAY=30: %+v", ch)
			}
			time.Sleep(200 * time.Millisecond)
		}
		f.exec("node3", "STOP SLAVE")
		f.exec("node3", "CHANGE MASTER TO MASTER_DELAY=0")
		f.exec("node3", "START SLAVE")
		f.waitValue("node3", "SELECT v FROM app.t WHERE id=2", "delayed")
		f.waitClean(seeds...)
	})

	t.Run("lagging-replica", func(t *testing.T) {
		// A transaction on node2 holds the row lock the next replicated update
		// needs: node2's applier waits and falls behind.
		f.t = t
		f.exec("node1", "INSERT INTO app.t VALUES (3, 'a')")
		f.waitValue("node2", "SELECT v FROM app.t WHERE id=3", "a")
		s := f.session("node2")
		s.exec("BEGIN", "SELECT v FROM app.t WHERE id=3 FOR UPDATE")
		f.exec("node1", "UPDATE app.t SET v='b' WHERE id=3")
		_, ps := f.waitProblems(seeds, lag1s, 10*time.Second, "ReplicaLagging@node2")
		p := f.problem(ps, dbpilot.ProblemReplicaLagging, "node2")
		if n, err := strconv.Atoi(p.Detail["seconds_behind"]); err != nil || n < 2 || p.Detail["threshold"] != "1s" || p.Severity != dbpilot.SeverityWarning {
			t.Errorf("problem = %+v, want seconds_behind >= 2 and threshold 1s", p)
		}
		s.exec("ROLLBACK")
		s.close()
		f.waitValue("node2", "SELECT v FROM app.t WHERE id=3", "b")
		f.waitProblems(seeds, lag1s, 15*time.Second)
	})

	t.Run("io-thread-stopped", func(t *testing.T) {
		f.t = t
		f.exec("node2", "STOP SLAVE IO_THREAD")
		_, ps := f.waitProblems(seeds, topology.AnalyzeOptions{}, 10*time.Second, "ReplicationIOStopped@node2")
		if p := f.problem(ps, dbpilot.ProblemReplicationIOStopped, "node2"); p.Detail["io_running"] != "No" || p.Severity != dbpilot.SeverityWarning {
			t.Errorf("problem = %+v, want a warning with io_running No", p)
		}
		f.exec("node2", "START SLAVE IO_THREAD")
		f.waitClean(seeds...)
	})

	t.Run("killed-replica", func(t *testing.T) {
		f.t = t
		if err := sandbox.Kill(f.d, "node3"); err != nil {
			t.Fatal(err)
		}
		// The primary forgets a dead replica once its dump thread ends, so
		// node3 is a seed too.
		killSeeds := []string{"node1", "node3"}
		insts, ps := f.waitProblems(killSeeds, topology.AnalyzeOptions{}, 10*time.Second, "Unreachable@node3")
		in := instanceAt(insts, f.key("node3"))
		if in == nil || in.Reachable || !strings.Contains(in.LastError, f.key("node3").String()) {
			t.Fatalf("node3 = %+v, want unreachable with its address in the error", in)
		}
		if got := f.keysOf(insts); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
			t.Errorf("discovered %v, want node1..node3", got)
		}
		p := f.problem(ps, dbpilot.ProblemUnreachable, "node3")
		if p.Severity != dbpilot.SeverityCritical || p.Detail["error"] != in.LastError {
			t.Errorf("problem = %+v", p)
		}
		tree := render(t, insts, ps)
		t.Logf("tree:\n%s", tree)
		if l := lineOf(tree, f.key("node3")); !strings.Contains(l, "[unreachable: ") {
			t.Errorf("node3 line %q should say unreachable:\n%s", l, tree)
		}
		if err := sandbox.Start(context.Background(), f.d, "node3", sandbox.ProcessOptions{KillWithParent: true}); err != nil {
			t.Fatal(err)
		}
		f.waitValue("node1", "SELECT variable_value FROM information_schema.global_status WHERE variable_name='Rpl_semi_sync_master_clients'", "2")
		insts, _ = f.waitProblems(seeds, topology.AnalyzeOptions{}, 15*time.Second)
		if got := f.keysOf(insts); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
			t.Errorf("after restart discovered %v, want node1..node3", got)
		}
	})

	// Last: an errant transaction cannot be undone, and under
	// gtid_strict_mode the primary's next write would break node2.
	t.Run("errant-transaction", func(t *testing.T) {
		f.t = t
		f.exec("node2", "CREATE DATABASE errant")
		own := f.value("node2", "SELECT @@gtid_binlog_pos")
		want := fmt.Sprintf("0-%d-", f.node("node2").ServerID)
		if !strings.HasPrefix(own, want) {
			t.Fatalf("node2 gtid_binlog_pos = %q after a local write, want %s<seq>", own, want)
		}
		_, ps := f.waitProblems(seeds, topology.AnalyzeOptions{}, 10*time.Second, "ErrantGTID@node2")
		p := f.problem(ps, dbpilot.ProblemErrantGTID, "node2")
		if p.Detail["errant"] != own || p.Detail["sources"] != f.key("node1").String() ||
			!strings.Contains(p.Message, fmt.Sprintf("written on this replica (server_id %d)", f.node("node2").ServerID)) {
			t.Errorf("problem = %+v, want errant %s written on node2", p, own)
		}
	})
}

// TestIntegrationRing: every member of a ring is a primary; their own
// writes going round the ring are not errant.
func TestIntegrationRing(t *testing.T) {
	f := newFleet(t, sandbox.Spec{Topology: sandbox.TopologyRing, Nodes: 3})
	insts := f.discover("node2")
	if got := f.keysOf(insts); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
		t.Fatalf("discovered %v, want node1..node3", got)
	}
	cs := topology.Clusters(insts)
	if len(cs) != 1 || !slices.Equal(f.names(cs[0].Primaries), []string{"node1", "node2", "node3"}) {
		t.Fatalf("clusters = %+v, want one with primaries node1..node3", cs)
	}
	ps := topology.Analyze(insts, topology.AnalyzeOptions{})
	if len(ps) != 0 {
		t.Fatalf("a fresh ring has problems:%s", f.describe(ps))
	}
	lowest := f.d.Nodes[0].Port
	for _, n := range f.d.Nodes {
		lowest = min(lowest, n.Port)
	}
	tree := render(t, insts, ps)
	t.Logf("tree:\n%s", tree)
	if want := fmt.Sprintf("(ring → 127.0.0.1:%d)", lowest); !strings.Contains(tree, want) {
		t.Errorf("tree lacks %q:\n%s", want, tree)
	}
	if lines := strings.Split(strings.TrimSuffix(tree, "\n"), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], fmt.Sprintf("127.0.0.1:%d ", lowest)) {
		t.Errorf("tree should be drawn from the lowest key, 3 members and the back edge:\n%s", tree)
	}

	for _, n := range f.d.Nodes {
		f.exec(n.Name, "CREATE DATABASE w"+n.Name)
	}
	pos := f.waitConverged("node1", "node2", "node3")
	if strings.Count(pos, ",") != 2 {
		t.Fatalf("converged gtid_current_pos %q, want one GTID per member's domain", pos)
	}
	insts = f.discover("node2")
	if ps := topology.Analyze(insts, topology.AnalyzeOptions{}); len(ps) != 0 {
		t.Fatalf("after a write on every member (gtid_current_pos %s), problems:%s\n%s", pos, f.describe(ps), render(t, insts, ps))
	}
}

// TestIntegrationMultiSource: node3 replicates from node1 and node2, which are
// both primaries of one cluster; a write on node3 itself is errant.
func TestIntegrationMultiSource(t *testing.T) {
	f := newFleet(t, sandbox.Spec{Topology: sandbox.TopologyMultiSource, Nodes: 3})
	insts := f.discover("node3")
	if got := f.keysOf(insts); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
		t.Fatalf("discovered %v, want node1..node3", got)
	}
	cs := topology.Clusters(insts)
	if len(cs) != 1 || !slices.Equal(f.names(cs[0].Primaries), []string{"node1", "node2"}) || len(cs[0].Instances) != 3 {
		t.Fatalf("clusters = %+v, want one of 3 instances with primaries node1, node2", cs)
	}
	if ps := topology.Analyze(insts, topology.AnalyzeOptions{}); len(ps) != 0 {
		t.Fatalf("a fresh multi-source sandbox has problems:%s", f.describe(ps))
	}

	f.exec("node1", "CREATE DATABASE a")
	f.exec("node2", "CREATE DATABASE b")
	want := f.value("node1", "SELECT @@gtid_binlog_pos") + "," + f.value("node2", "SELECT @@gtid_binlog_pos")
	f.waitValue("node3", "SELECT @@gtid_current_pos", want)
	insts = f.discover("node3")
	ps := topology.Analyze(insts, topology.AnalyzeOptions{})
	if len(ps) != 0 {
		t.Fatalf("after writes on both sources (node3 at %s), problems:%s", want, f.describe(ps))
	}
	tree := render(t, insts, ps)
	t.Logf("tree:\n%s", tree)
	for _, ch := range []string{"[channel node1]", "[channel node2]"} {
		if !strings.Contains(tree, ch) {
			t.Errorf("tree lacks %s:\n%s", ch, tree)
		}
	}

	// The sink is a replica: its own write is errant.
	f.exec("node3", "CREATE DATABASE sink")
	errant := fmt.Sprintf("%d-%d-1", f.node("node3").DomainID, f.node("node3").ServerID)
	_, ps = f.waitProblems([]string{"node3"}, topology.AnalyzeOptions{}, 10*time.Second, "ErrantGTID@node3")
	p := f.problem(ps, dbpilot.ProblemErrantGTID, "node3")
	if p.Detail["errant"] != errant || p.Detail["sources"] != f.key("node1").String()+","+f.key("node2").String() {
		t.Errorf("problem = %+v, want errant %s from sources node1,node2", p, errant)
	}
}

// TestIntegrationUnreachableSeed: a seed nothing listens on is reported
// unreachable, with the address and the cause but not the password.
func TestIntegrationUnreachableSeed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	key := dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}
	const password = "s3cret-Pa55word-not-to-leak"
	in := mysql.NewInspector(mysql.Options{Credentials: mysql.Credentials{User: "dbpilot", Password: password}})
	t.Cleanup(func() { in.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	insts, err := topology.Discover(ctx, in, []dbpilot.InstanceKey{key}, topology.Options{})
	if err != nil {
		t.Fatalf("discover: %v", err)
	}
	if len(insts) != 1 || insts[0].Key != key || insts[0].Reachable {
		t.Fatalf("instances = %+v, want %s unreachable", insts, key)
	}
	msg := insts[0].LastError
	if !strings.Contains(msg, key.String()) || !strings.Contains(msg, "connection refused") || strings.Contains(msg, password) {
		t.Errorf("LastError = %q, want the address and 'connection refused', without the password", msg)
	}
	ps := topology.Analyze(insts, topology.AnalyzeOptions{})
	if len(ps) != 1 || ps[0].Code != dbpilot.ProblemUnreachable || strings.Contains(ps[0].Message, password) {
		t.Errorf("problems = %+v, want one Unreachable", ps)
	}
}
