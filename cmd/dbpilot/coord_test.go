package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/dbpilot/dbpilot/sqlite"
)

// coordServe is one dbpilot serve process of a coordinated test.
type coordServe struct {
	id, url, state string
	cmd            *exec.Cmd
	log            *os.File
	logPath        string
}

func (s *coordServe) get(t *testing.T, path string, v any) error {
	resp, err := http.Get(s.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return json.Unmarshal(b, v)
}

func (s *coordServe) signal(sig syscall.Signal) { _ = syscall.Kill(s.cmd.Process.Pid, sig) }

// audit reads the serve's own audit log from its state file (also after
// the serve was killed).
func (s *coordServe) audit(t *testing.T) []dbpilot.AuditEvent {
	t.Helper()
	db, err := sqlite.OpenReadOnly(s.state)
	if err != nil {
		t.Fatalf("open %s: %v", s.state, err)
	}
	defer db.Close()
	ev, err := db.AuditEvents(context.Background(), dbpilot.AuditFilter{Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// running waits until the serve's shared recovery of c runs and returns its ID.
func (r *coordRig) running(s *coordServe) int64 {
	r.t.Helper()
	var id int64
	testutil.WaitFor(r.t, 20*time.Second, "serve "+s.id+"'s recovery is running", func() (bool, string) {
		var st dbpilot.CoordinationStatus
		err := s.get(r.t, "/api/coordination", &st)
		if err == nil && len(st.Recoveries) == 1 && st.Recoveries[0].State == dbpilot.SharedRunning && st.Recoveries[0].Member == s.id {
			id = st.Recoveries[0].ID
			return true, ""
		}
		return false, fmt.Sprintf("%v %+v", err, st.Recoveries)
	})
	return id
}

// settled waits until no shared recovery of c runs, as s sees it.
func (r *coordRig) settled(s *coordServe) {
	r.t.Helper()
	testutil.WaitFor(r.t, 30*time.Second, "the recovery ends", func() (bool, string) {
		var st dbpilot.CoordinationStatus
		err := s.get(r.t, "/api/coordination", &st)
		return err == nil && (len(st.Recoveries) == 0 || st.Recoveries[0].State != dbpilot.SharedRunning), fmt.Sprintf("%v %+v", err, st.Recoveries)
	})
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// coordRig is three serves coordinated through a 3-member etcd on one
// 5-node sandbox.
type coordRig struct {
	t      *testing.T
	d      *sandbox.Descriptor
	etcd   *testutil.EtcdCluster
	serves []*coordServe
	slow   string // the pre-failover hook sleeps while this file exists
}

func newCoordRig(t *testing.T) *coordRig {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 5, Options: []string{"general_log=1"}})
	r := &coordRig{t: t, d: d, etcd: testutil.StartEtcd(t, 3)}
	dir := t.TempDir()
	bin := filepath.Join(dir, "dbpilot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	r.slow = filepath.Join(dir, "slow")
	hook := filepath.Join(dir, "hook.sh")
	os.WriteFile(hook, []byte("#!/bin/sh\nwhile [ -e "+r.slow+" ]; do sleep 0.1; done\nexit 0\n"), 0o700)
	eps := `"` + strings.Join(r.etcd.Endpoints, `", "`) + `"`
	for i, id := range []string{"a", "b", "c"} {
		port := closedPort(t)
		s := &coordServe{id: id, url: fmt.Sprintf("http://127.0.0.1:%d", port), state: filepath.Join(dir, id+".db"), logPath: filepath.Join(dir, id+".log")}
		cfg := fmt.Sprintf(`state: %s
metrics: {dir: %s}
token: tok
credentials: {user: %q, password: %q}
replication: {user: %q, password: %q}
poll_interval: 200ms
recovery: {block_period: 1s}
hooks: {pre_failover: [%q], timeout: 60s}
coordination:
  etcd: {endpoints: [%s], lease_ttl: 2s}
clusters:
  - {name: c, seeds: ["127.0.0.1:%d"], auto_failover: true}
`, s.state, filepath.Join(dir, id+"-metrics"), d.Admin.User, d.Admin.Password, d.Repl.User, d.Repl.Password, hook, eps, d.Nodes[0].Port)
		cfgPath := filepath.Join(dir, id+".yaml")
		os.WriteFile(cfgPath, []byte(cfg), 0o600)
		log, err := os.Create(s.logPath)
		if err != nil {
			t.Fatal(err)
		}
		s.log = log
		s.cmd = exec.Command(bin, "serve", "--config", cfgPath, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--id", id)
		s.cmd.Stdout, s.cmd.Stderr = log, log
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.serves = append(r.serves, s)
		_ = i
	}
	t.Cleanup(func() {
		for _, s := range r.serves {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			_ = s.cmd.Wait()
			s.log.Close()
			if t.Failed() {
				b, _ := os.ReadFile(s.logPath)
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("serve %s log tail:\n%s", s.id, b)
			}
		}
	})
	// Every serve sees all three members and one leader of c.
	for _, s := range r.serves {
		testutil.WaitFor(t, 30*time.Second, "serve "+s.id+" sees 3 members and a leader", func() (bool, string) {
			var st dbpilot.CoordinationStatus
			if err := s.get(t, "/api/coordination", &st); err != nil {
				return false, err.Error()
			}
			return st.State == dbpilot.CoordinationOK && len(st.Members) == 3 && len(st.Leaders) == 1 && st.Leaders[0].Member != "", fmt.Sprintf("%+v", st)
		})
	}
	// The cluster's owner has observed all five servers (with ownership,
	// only it does, from when it leads): a primary killed before any
	// observation leaves no serve knowing its replicas from a seed that is
	// the dead primary alone.
	for _, s := range r.serves {
		testutil.WaitFor(t, 30*time.Second, "serve "+s.id+" lists the 5 servers of c, reachable", func() (bool, string) {
			var st dbpilot.ClusterStatus
			if err := s.get(t, "/api/clusters/c", &st); err != nil {
				return false, err.Error()
			}
			n := 0
			for _, i := range st.Instances {
				if i.Reachable {
					n++
				}
			}
			return n == 5, fmt.Sprintf("%d reachable: %+v", n, st.State)
		})
	}
	return r
}

// leader returns the serve leading c, as the given serve sees it.
func (r *coordRig) leader(from *coordServe) *coordServe {
	r.t.Helper()
	var st dbpilot.CoordinationStatus
	testutil.WaitFor(r.t, 20*time.Second, "a leader of c", func() (bool, string) {
		st = dbpilot.CoordinationStatus{}
		err := from.get(r.t, "/api/coordination", &st)
		return err == nil && len(st.Leaders) == 1 && st.Leaders[0].Member != "", fmt.Sprintf("%v %+v", err, st)
	})
	for _, s := range r.serves {
		if s.id == st.Leaders[0].Member {
			return s
		}
	}
	r.t.Fatalf("unknown leader %q", st.Leaders[0].Member)
	return nil
}

// primaryOf returns the writable node among the running ones.
func (r *coordRig) writable() []string {
	var out []string
	for _, n := range r.d.Nodes {
		if v, err := testutil.Value(r.d, n.Name, "SELECT @@read_only"); err == nil && v == "0" {
			out = append(out, n.Name)
		}
	}
	return out
}

// waitPrimary waits until exactly one running node is writable, not old.
func (r *coordRig) waitPrimary(old string, timeout time.Duration) string {
	r.t.Helper()
	var w []string
	testutil.WaitFor(r.t, timeout, "one new writable primary", func() (bool, string) {
		w = r.writable()
		return len(w) == 1 && w[0] != old, fmt.Sprint(w)
	})
	return w[0]
}

// allKnowPrimary waits until every serve of ss names node as c's primary.
// A serve that does not own c knows it from the owner's status, read every
// 5 s (shadowLoop): one that takes c over sooner after a failover starts
// from the old primary: a known limitation (docs/serve.md, coordination).
func (r *coordRig) allKnowPrimary(node string, ss ...*coordServe) {
	r.t.Helper()
	port := 0
	for _, n := range r.d.Nodes {
		if n.Name == node {
			port = n.Port
		}
	}
	for _, s := range ss {
		testutil.WaitFor(r.t, 20*time.Second, "serve "+s.id+" knows "+node+" as the primary", func() (bool, string) {
			var st dbpilot.ClusterStatus
			if err := s.get(r.t, "/api/clusters/c", &st); err != nil {
				return false, err.Error()
			}
			return st.Primary.Port == port, st.Primary.String()
		})
	}
}

// resetSlaveCount counts RESET SLAVE statements in every node's general log.
func (r *coordRig) resetSlaveCount() map[string]int {
	out := map[string]int{}
	for _, n := range r.d.Nodes {
		matches, _ := filepath.Glob(filepath.Join(n.Datadir, "*.log"))
		for _, m := range matches {
			b, _ := os.ReadFile(m)
			out[n.Name] += strings.Count(strings.ToUpper(string(b)), "RESET SLAVE")
		}
	}
	return out
}

// heartbeatWrites counts the heartbeat rows written on a node, in its
// general log.
func (r *coordRig) heartbeatWrites(node string) int {
	n := 0
	for _, nd := range r.d.Nodes {
		if nd.Name != node {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(nd.Datadir, "*.log"))
		for _, m := range matches {
			b, _ := os.ReadFile(m)
			n += strings.Count(string(b), "REPLACE INTO dbpilot.heartbeat")
		}
	}
	return n
}

func totalEvents(t *testing.T, serves []*coordServe, event string, recovery int64) (int, map[string]int) {
	per := map[string]int{}
	total := 0
	for _, s := range serves {
		for _, e := range s.audit(t) {
			if e.Event == event && (recovery == 0 || e.RecoveryID == recovery) {
				per[s.id]++
				total++
			}
		}
	}
	return total, per
}

// TestCoordinatedServes: three serves coordinated through a 3-member etcd
// watch one 5-node cluster. A dead primary is recovered once, by one
// serve; a leader paused (SIGSTOP) past its lease during a recovery is
// replaced and, resumed, changes nothing (fencing token); a leader killed
// (SIGKILL) during a recovery is replaced and the recovery finished once;
// without etcd quorum no serve recovers, and with quorum back one does.
func TestCoordinatedServes(t *testing.T) {
	r := newCoordRig(t)
	d := r.d

	// 1. Kill the primary: exactly one recovery, audited on one serve.
	if err := sandbox.Kill(d, "node1"); err != nil {
		t.Fatal(err)
	}
	p1 := r.waitPrimary("node1", 30*time.Second)
	lead := r.leader(r.serves[0])
	r.settled(lead)
	testutil.WaitFor(t, 10*time.Second, "the recovery is recorded", func() (bool, string) {
		n, per := totalEvents(t, r.serves, dbpilot.AuditRecovered, 0)
		return n == 1, fmt.Sprint(per)
	})
	if n, per := totalEvents(t, r.serves, dbpilot.AuditDetect, 0); n != 1 || per[lead.id] != 1 {
		t.Errorf("round 1: detect events per serve = %v (leader %s), want exactly one on the leader", per, lead.id)
	}
	if n, per := totalEvents(t, r.serves, dbpilot.AuditPromote, 0); n != 1 {
		t.Errorf("round 1: promote events per serve = %v, want 1", per)
	}
	// The other serves list the recovery too (shared state).
	for _, s := range r.serves {
		testutil.WaitFor(t, 10*time.Second, "serve "+s.id+" lists the recovery", func() (bool, string) {
			var recs []*dbpilot.Recovery
			err := s.get(t, "/api/recoveries?cluster=c", &recs)
			return err == nil && len(recs) == 1 && recs[0].ID == 1, fmt.Sprintf("%v %+v", err, recs)
		})
	}
	t.Logf("round 1: %s promoted by serve %s", p1, lead.id)

	// The leader exposes its leadership on /metrics.
	if body := httpGet(t, lead.url+"/metrics"); !strings.Contains(body, `dbpilot_coordination_leader{cluster="c"} 1`) || !strings.Contains(body, "dbpilot_coordination_fence_checks_total") {
		t.Errorf("the leader's /metrics lacks dbpilot_coordination_leader{cluster=\"c\"} 1 or the fence checks")
	}
	// A switchover asked of a serve that does not lead is forwarded to the
	// leader, which runs it.
	var follower *coordServe
	for _, s := range r.serves {
		if s != lead {
			follower = s
			break
		}
	}
	target := ""
	for _, n := range d.Nodes {
		if n.Name != "node1" && n.Name != p1 {
			target = fmt.Sprintf("127.0.0.1:%d", n.Port)
			break
		}
	}
	req, _ := http.NewRequest("POST", follower.url+"/api/clusters/c/switchover", strings.NewReader(`{"to": "`+target+`"}`))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), target) {
		t.Fatalf("switchover through the follower %s: %d %s", follower.id, resp.StatusCode, b)
	}
	if n, per := totalEvents(t, r.serves, dbpilot.AuditWriteWindow, 0); n != 1 || per[lead.id] != 1 {
		t.Errorf("switchover write-window events per serve = %v, want one on the leader %s", per, lead.id)
	}
	p1 = r.waitPrimary("node1", 10*time.Second)
	t.Logf("switchover through serve %s, run by %s: %s is the primary", follower.id, lead.id, p1)
	// The heartbeat is written by the leader alone: about one row a second
	// on the primary, not one per serve.
	time.Sleep(time.Second)
	hb0 := r.heartbeatWrites(p1)
	time.Sleep(4 * time.Second)
	if n := r.heartbeatWrites(p1) - hb0; n < 2 || n > 6 {
		t.Errorf("heartbeat rows written on the primary %s in 4 s: %d, want about 4 (the leader's alone; three serves would write about 12)", p1, n)
	}

	// 2. A leader paused past its lease while a slow pre-failover hook holds
	// its recovery open: another serve takes the recovery over; the paused
	// one, resumed, sends no statement.
	before := r.resetSlaveCount()
	os.WriteFile(r.slow, nil, 0o600)
	if err := sandbox.Kill(d, p1); err != nil {
		t.Fatal(err)
	}
	paused := r.leader(r.serves[0])
	rec2 := r.running(paused)
	paused.signal(syscall.SIGSTOP)
	os.Remove(r.slow) // the hook of the paused serve keeps running: it ends now
	var others []*coordServe
	for _, s := range r.serves {
		if s != paused {
			others = append(others, s)
		}
	}
	p2 := r.waitPrimary(p1, 30*time.Second)
	taker := r.leader(others[0])
	r.settled(taker)
	if taker == paused {
		t.Fatalf("the paused serve still leads")
	}
	paused.signal(syscall.SIGCONT)
	testutil.WaitFor(t, 20*time.Second, "the resumed serve ends its recovery as fenced", func() (bool, string) {
		ev := paused.audit(t)
		for _, e := range ev {
			if e.RecoveryID == rec2 && e.Event == dbpilot.AuditFailed {
				return strings.Contains(e.Message, "not the cluster's leader any more"), e.Message
			}
		}
		return false, fmt.Sprint(len(ev), " events")
	})
	for _, e := range paused.audit(t) {
		if e.RecoveryID == rec2 && (e.Event == dbpilot.AuditPromote || e.Event == dbpilot.AuditRepoint || e.Event == dbpilot.AuditSemiSync || e.Event == dbpilot.AuditApplyRelayLog) {
			t.Errorf("the paused serve changed a server after it resumed: %+v", e)
		}
	}
	after := r.resetSlaveCount()
	resets := 0
	for n := range after {
		resets += after[n] - before[n]
	}
	if resets != 1 || after[p2]-before[p2] != 1 {
		t.Errorf("round 2: RESET SLAVE statements in the general logs: before %v after %v; want one, on %s", before, after, p2)
	}
	if n, per := totalEvents(t, r.serves, dbpilot.AuditPromote, rec2); n != 1 || per[taker.id] != 1 {
		t.Errorf("round 2: promote events of the recovery per serve = %v, want one on %s", per, taker.id)
	}
	t.Logf("round 2: serve %s paused; %s promoted by serve %s", paused.id, p2, taker.id)

	// 3. The leader killed (SIGKILL) while its recovery waits on the hook:
	// another serve finishes it, one promotion. Every serve knows round
	// 2's primary first.
	r.allKnowPrimary(p2, r.serves...)
	os.WriteFile(r.slow, nil, 0o600)
	if err := sandbox.Kill(d, p2); err != nil {
		t.Fatal(err)
	}
	killed := r.leader(others[0])
	rec3 := r.running(killed)
	killedAt := time.Now()
	_ = syscall.Kill(-killed.cmd.Process.Pid, syscall.SIGKILL)
	os.Remove(r.slow)
	var alive []*coordServe
	for _, s := range r.serves {
		if s != killed {
			alive = append(alive, s)
		}
	}
	p3 := r.waitPrimary(p2, 30*time.Second)
	newLead := r.leader(alive[0])
	r.settled(newLead)
	t.Logf("round 3: serve %s killed; %s promoted by serve %s %s after the kill", killed.id, p3, newLead.id, time.Since(killedAt).Round(time.Millisecond))
	if n, per := totalEvents(t, r.serves, dbpilot.AuditPromote, rec3); n != 1 || per[newLead.id] != 1 {
		t.Errorf("round 3: promote events of the recovery per serve = %v, want one on %s", per, newLead.id)
		for _, sv := range r.serves {
			for _, e := range sv.audit(t) {
				if e.RecoveryID == rec3 {
					t.Logf("  %s: %s %s %s %s", sv.id, e.Time.Format("15:04:05.000"), e.Event, e.Instance, e.Message)
				}
			}
		}
	}
	if n, _ := totalEvents(t, []*coordServe{newLead}, dbpilot.AuditCoordination, rec3); n == 0 {
		t.Errorf("round 3: serve %s did not audit taking the recovery over", newLead.id)
	}

	// 4. No etcd quorum: serves keep monitoring, none recovers, the state
	// says why; with the quorum back the recovery proceeds.
	r.etcd.Stop(1)
	r.etcd.Stop(2)
	for _, s := range alive {
		testutil.WaitFor(t, 15*time.Second, "serve "+s.id+" reports coordination unavailable", func() (bool, string) {
			var st dbpilot.CoordinationStatus
			err := s.get(t, "/api/coordination", &st)
			return err == nil && st.State == dbpilot.CoordinationUnavailable && st.Reason != "", fmt.Sprintf("%v %+v", err, st)
		})
	}
	// Nobody leads: nobody writes the heartbeat.
	hb0 = r.heartbeatWrites(p3)
	time.Sleep(2 * time.Second)
	if n := r.heartbeatWrites(p3) - hb0; n != 0 {
		t.Errorf("heartbeat rows written on %s without etcd quorum: %d, want none", p3, n)
	}
	if err := sandbox.Kill(d, p3); err != nil {
		t.Fatal(err)
	}
	var cl dbpilot.ClusterStatus
	testutil.WaitFor(t, 10*time.Second, "serves see the primary dead", func() (bool, string) {
		err := alive[0].get(t, "/api/clusters/c", &cl)
		return err == nil && cl.State == dbpilot.ClusterDead, fmt.Sprintf("%v %s", err, cl.State)
	})
	time.Sleep(3 * time.Second) // what must not happen: a promotion without quorum
	if w := r.writable(); len(w) != 0 {
		t.Fatalf("a node was promoted without etcd quorum: %v", w)
	}
	logs := ""
	for _, s := range alive {
		b, _ := os.ReadFile(s.logPath)
		logs += string(b)
	}
	if !strings.Contains(logs, "no automatic recovery") {
		t.Errorf("serve logs do not say why nothing is recovered")
	}
	r.etcd.Start(1)
	r.etcd.Start(2)
	p4 := r.waitPrimary(p3, 60*time.Second)
	t.Logf("round 4: quorum back; %s promoted", p4)
	// An ack given to one serve reaches every serve.
	ackAt := alive[len(alive)-1]
	req, _ = http.NewRequest("POST", ackAt.url+"/api/clusters/c/ack", strings.NewReader(`{"by": "dba", "comment": "checked"}`))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("ack at serve %s: %v %v", ackAt.id, err, resp.Status)
	}
	resp.Body.Close()
	for _, s := range alive {
		testutil.WaitFor(t, 10*time.Second, "serve "+s.id+" sees the ack", func() (bool, string) {
			var recs []*dbpilot.Recovery
			err := s.get(t, "/api/recoveries?cluster=c&limit=1", &recs)
			return err == nil && len(recs) == 1 && recs[0].Acked && recs[0].AckedBy == "dba", fmt.Sprintf("%v %+v", err, recs)
		})
	}

	// Rounds 1-4 and the switchover promoted once each.
	var promotes int
	var per map[string]int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if promotes, per = totalEvents(t, r.serves, dbpilot.AuditPromote, 0); promotes >= 5 {
			break
		}
	}
	if promotes != 5 {
		t.Errorf("promote events per serve = %v, want 5 in all", per)
	}
	if t.Failed() {
		for _, sv := range r.serves {
			for _, e := range sv.audit(t) {
				if e.Event == dbpilot.AuditPromote || e.Event == dbpilot.AuditDetect || e.Event == dbpilot.AuditCoordination || e.Event == dbpilot.AuditFailed {
					t.Logf("  %s: #%d %s %s %s %s", sv.id, e.RecoveryID, e.Time.Format("15:04:05.000"), e.Event, e.Instance, e.Message)
				}
			}
		}
	}
}
