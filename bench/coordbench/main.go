// Command coordbench measures dbpilot serves coordinated through etcd
// (bench/coordination.sh runs it): how long the serves take to replace a
// killed leader serve, and the write-unavailability a client sees when the
// MariaDB primary is killed, with one serve alone and with three
// coordinated serves, on the same sandbox in the same run.
//
// After each primary kill the killed server is started again and serve
// (rejoin on) fences it and makes it a replica of the new primary, as
// `dbpilot drill` does; when it cannot within 20 s (the killed primary
// kept transactions nobody received: errant GTIDs), the serves are
// stopped, the sandbox is redeployed, fresh serves are started and the run
// goes on. Every process the bench starts (etcd, serves) is killed on every
// way out, and the kernel kills them should the bench itself be killed.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

func main() {
	bin := flag.String("dbpilot", "bin/dbpilot", "dbpilot binary")
	sb := flag.String("sandbox", "", "replication sandbox")
	rounds := flag.Int("rounds", 10, "rounds")
	keep := flag.Bool("keep", false, "keep the temporary directory (serve and etcd logs)")
	flag.Parse()
	// The driver logs dropped idle connections to the killed server.
	_ = gomysql.SetLogger(log.New(io.Discard, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *bin, *sb, *rounds, *keep)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "coordbench:", err)
		os.Exit(1)
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a process the bench starts: an etcd member or a serve.
type proc struct {
	id, url string
	args    []string
	mu      sync.Mutex
	cmd     *exec.Cmd
}

func (p *proc) start(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logf, err := os.OpenFile(filepath.Join(dir, p.id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C reaches the bench, which kills it. If
	// the bench dies without doing so, the kernel kills it (the bench never
	// ends an OS thread, which would fire this early).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.id, err)
	}
	p.cmd = cmd
	return nil
}

func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}

func getJSON(url string, v any) error {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func waitFor(ctx context.Context, d time.Duration, what string, f func() bool) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if f() {
			return nil
		}
		sleep(ctx, 10*time.Millisecond)
	}
	return fmt.Errorf("timed out after %s: %s", d, what)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// bench holds what a run shares: the sandbox, etcd, and every process
// started, so that all are killed however the run ends.
type bench struct {
	bin, dir string
	d        *sandbox.Descriptor
	eps      []string
	mu       sync.Mutex
	procs    []*proc
	gen      int // serve generation: fresh state files and etcd prefix
}

func (b *bench) start(p *proc) error {
	b.mu.Lock()
	b.procs = append(b.procs, p)
	b.mu.Unlock()
	return p.start(b.dir)
}

// killAll kills every process the bench started, newest first.
func (b *bench) killAll() {
	b.mu.Lock()
	ps := slices.Clone(b.procs)
	b.mu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].kill()
	}
}

func run(ctx context.Context, bin, name string, rounds int, keep bool) error {
	d, err := sandbox.Load(name)
	if err != nil {
		return err
	}
	if d.Topology != sandbox.TopologyReplication || len(d.Nodes) < 2 {
		return fmt.Errorf("sandbox %s: want a replication sandbox", name)
	}
	dir, err := os.MkdirTemp("", "coordbench")
	if err != nil {
		return err
	}
	b := &bench{bin: bin, dir: dir, d: d}
	defer func() {
		b.killAll()
		if keep {
			fmt.Fprintln(os.Stderr, "coordbench: logs kept in", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	// A signal cancels ctx and the run returns through the deferred
	// killAll; should it not within 10 s, kill everything and leave.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.killAll()
			fmt.Fprintln(os.Stderr, "coordbench: interrupted")
			os.Exit(130)
		}
	}()

	// A 3-member etcd on loopback.
	var peers []string
	var etcds []*proc
	for i := range 3 {
		cp, pp := freePort(), freePort()
		b.eps = append(b.eps, fmt.Sprintf("http://127.0.0.1:%d", cp))
		peers = append(peers, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, pp))
		etcds = append(etcds, &proc{id: fmt.Sprintf("etcd%d", i), args: []string{"etcd", "--name", fmt.Sprintf("m%d", i),
			"--data-dir", filepath.Join(dir, fmt.Sprintf("etcd%d", i)), "--listen-client-urls", b.eps[i], "--advertise-client-urls", b.eps[i],
			"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pp), "--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pp),
			"--initial-cluster-state", "new", "--heartbeat-interval", "50", "--election-timeout", "500"}})
	}
	for _, e := range etcds {
		e.args = append(e.args, "--initial-cluster", strings.Join(peers, ","))
		if err := b.start(e); err != nil {
			return err
		}
	}

	fmt.Printf("%-48s %6s %8s %8s %8s\n", "measure", "rounds", "p50 s", "p95 s", "max s")
	mgr, err := b.managerRounds(ctx, rounds)
	if err != nil {
		return err
	}
	report("manager failover (leader serve SIGKILL, ttl 2s)", mgr)

	// 2. Primary failover as a client sees it: 3 coordinated serves, then 1.
	coord, err := b.primaryRounds(ctx, rounds, 3)
	if err != nil {
		return err
	}
	solo, err := b.primaryRounds(ctx, rounds, 1)
	if err != nil {
		return err
	}
	report("primary failover, 3 coordinated serves", coord.took)
	report("primary failover, 1 serve", solo.took)
	fmt.Printf("coordination adds %.3f s at p50, %.3f s at p95 (target <= 0.050 s)\n", pct(coord.took, 50)-pct(solo.took, 50), pct(coord.took, 95)-pct(solo.took, 95))
	fmt.Printf("rounds that needed a sandbox redeploy: %d of %d with 3 coordinated serves, %d of %d with 1 serve\n", coord.redeploys, rounds, solo.redeploys, rounds)
	return nil
}

// mkServe returns a serve of the sandbox's cluster c (not started):
// coordinated through etcd under prefix when prefix is set.
func (b *bench) mkServe(id, prefix string) *proc {
	port := freePort()
	var seeds []string
	for _, n := range b.d.Nodes {
		seeds = append(seeds, fmt.Sprintf("%q", n.Key().String()))
	}
	cfg := fmt.Sprintf("state: %s\nmetrics: {dir: %s}\ntoken: tok\ncredentials: {user: %q, password: %q}\nreplication: {user: %q, password: %q}\npoll_interval: 1s\nrecovery: {block_period: 1s}\nclusters:\n  - {name: c, seeds: [%s], auto_failover: true, rejoin: true}\n",
		filepath.Join(b.dir, id+".db"), filepath.Join(b.dir, id+"-m"), b.d.Admin.User, b.d.Admin.Password, b.d.Repl.User, b.d.Repl.Password, strings.Join(seeds, ", "))
	if prefix != "" {
		cfg += fmt.Sprintf("coordination: {etcd: {endpoints: [%s], prefix: %s, lease_ttl: 2s}}\n", strings.Join(b.eps, ", "), prefix)
	}
	_ = os.WriteFile(filepath.Join(b.dir, id+".yaml"), []byte(cfg), 0o600)
	args := []string{b.bin, "serve", "--config", filepath.Join(b.dir, id+".yaml"), "--listen", fmt.Sprintf("127.0.0.1:%d", port)}
	if prefix != "" {
		args = append(args, "--id", id)
	}
	return &proc{id: id, url: fmt.Sprintf("http://127.0.0.1:%d", port), args: args}
}

func leaderOf(p *proc) string {
	var st dbpilot.CoordinationStatus
	if getJSON(p.url+"/api/coordination", &st) != nil || st.State != dbpilot.CoordinationOK || len(st.Leaders) != 1 {
		return ""
	}
	return st.Leaders[0].Member
}

// managerRounds: the leader serve SIGKILLed → another serve leads.
func (b *bench) managerRounds(ctx context.Context, rounds int) ([]float64, error) {
	serves := []*proc{b.mkServe("a", "/dbpilot"), b.mkServe("b", "/dbpilot"), b.mkServe("c", "/dbpilot")}
	defer func() {
		for _, s := range serves {
			s.kill()
		}
	}()
	for _, s := range serves {
		if err := b.start(s); err != nil {
			return nil, err
		}
	}
	if err := waitFor(ctx, 60*time.Second, "a leader", func() bool { return leaderOf(serves[0]) != "" }); err != nil {
		return nil, err
	}
	var mgr []float64
	for range rounds {
		lead := leaderOf(serves[0])
		var killed *proc
		for _, s := range serves {
			if s.id == lead {
				killed = s
			}
		}
		if killed == nil {
			lead = leaderOf(serves[1])
			for _, s := range serves {
				if s.id == lead {
					killed = s
				}
			}
		}
		if killed == nil {
			return nil, fmt.Errorf("no leader")
		}
		var other *proc
		for _, s := range serves {
			if s != killed {
				other = s
				break
			}
		}
		t0 := time.Now()
		killed.kill()
		if err := waitFor(ctx, 20*time.Second, "new leader", func() bool { l := leaderOf(other); return l != "" && l != lead }); err != nil {
			return nil, err
		}
		mgr = append(mgr, time.Since(t0).Seconds())
		if err := killed.start(b.dir); err != nil {
			return nil, err
		}
		_ = waitFor(ctx, 20*time.Second, "restarted serve registered", func() bool {
			var st dbpilot.CoordinationStatus
			return getJSON(killed.url+"/api/coordination", &st) == nil && st.State == dbpilot.CoordinationOK && len(st.Members) == 3
		})
	}
	return mgr, ctx.Err()
}

// The client's application account: like a real application it has no
// privilege that bypasses read_only (the admin account could write on
// replicas, making errant GTIDs).
const appUser, appPassword = "coordapp", "coordapp-pw"

// mode is one set of serves watching the sandbox in part 2.
type mode struct {
	b      *bench
	n      int // serves: 3 coordinated, or 1 alone
	serves []*proc
	app    map[string]*sql.DB // by node name
}

type modeResult struct {
	took      []float64
	redeploys int
}

// up starts a fresh generation of serves (new state files and, when
// coordinated, a new etcd prefix: nothing carries over from a sandbox that
// was redeployed), waits for a leader and a healthy cluster, and prepares
// the client's table and account.
func (m *mode) up(ctx context.Context) error {
	b := m.b
	b.gen++
	m.serves = nil
	for i := range m.n {
		if m.n == 1 {
			m.serves = append(m.serves, b.mkServe(fmt.Sprintf("solo%d", b.gen), ""))
		} else {
			m.serves = append(m.serves, b.mkServe(fmt.Sprintf("%c%d", 'a'+i, b.gen), fmt.Sprintf("/coordbench/g%d", b.gen)))
		}
	}
	for _, s := range m.serves {
		if err := b.start(s); err != nil {
			return err
		}
	}
	var primary dbpilot.InstanceKey
	var why string
	if err := waitFor(ctx, 60*time.Second, "serves see a healthy cluster", func() bool {
		primary, why = m.healthy()
		return why == ""
	}); err != nil {
		return fmt.Errorf("%w (%s)", err, why)
	}
	p := nodeByKey(b.d, primary)
	db, err := mysql.Open(ctx, p.Key(), b.d.AdminOptions())
	if err != nil {
		return err
	}
	defer db.Close()
	// Random keys: a row the killed primary kept (never replicated) does
	// not collide should it replicate again.
	if err := db.Exec(ctx, "CREATE DATABASE IF NOT EXISTS coordbench",
		"CREATE TABLE IF NOT EXISTS coordbench.t (id BIGINT PRIMARY KEY, at DATETIME(6))",
		fmt.Sprintf("CREATE USER IF NOT EXISTS %s@'127.0.0.1' IDENTIFIED BY %s", mysql.Quote(appUser), mysql.Quote(appPassword)),
		fmt.Sprintf("GRANT SELECT, INSERT ON coordbench.* TO %s@'127.0.0.1'", mysql.Quote(appUser))); err != nil {
		return err
	}
	m.closeApp()
	m.app = map[string]*sql.DB{}
	for _, n := range b.d.Nodes {
		a, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/?timeout=200ms&readTimeout=500ms&writeTimeout=500ms", appUser, appPassword, n.Key()))
		if err != nil {
			return err
		}
		a.SetMaxOpenConns(2)
		m.app[n.Name] = a
	}
	return nil
}

func (m *mode) down() {
	for _, s := range m.serves {
		s.kill()
	}
	m.serves = nil
	m.closeApp()
}

func (m *mode) closeApp() {
	for _, a := range m.app {
		a.Close()
	}
	m.app = nil
}

// healthy returns the primary when every serve (and, coordinated, the
// cluster's leader among them) shows cluster c OK with every node of the
// sandbox in it, reachable, and every replica replicating from the
// primary; otherwise why not.
func (m *mode) healthy() (dbpilot.InstanceKey, string) {
	var none dbpilot.InstanceKey
	if m.n > 1 {
		lead := ""
		for _, s := range m.serves {
			if lead = leaderOf(s); lead != "" {
				break
			}
		}
		if lead == "" {
			return none, "no leader serve"
		}
	}
	var primary dbpilot.InstanceKey
	for _, s := range m.serves {
		p, why := clusterView(s.url, len(m.b.d.Nodes))
		if why != "" {
			return none, "serve " + s.id + ": " + why
		}
		if !primary.IsZero() && !p.Equal(primary) {
			return none, fmt.Sprintf("serves disagree on the primary (%s, %s)", primary, p)
		}
		primary = p
	}
	if nodeByKey(m.b.d, primary) == nil {
		return none, fmt.Sprintf("primary %s is not a node of the sandbox", primary)
	}
	return primary, ""
}

func clusterView(url string, nodes int) (dbpilot.InstanceKey, string) {
	var none dbpilot.InstanceKey
	var cs dbpilot.ClusterStatus
	if err := getJSON(url+"/api/clusters/c", &cs); err != nil {
		return none, err.Error()
	}
	if cs.State != dbpilot.ClusterOK {
		return none, "cluster state " + cs.State
	}
	if len(cs.Instances) != nodes {
		var det []string
		for _, i := range cs.Detached {
			det = append(det, i.Key.String())
		}
		return none, fmt.Sprintf("%d of %d instances in the cluster (detached: %v)", len(cs.Instances), nodes, det)
	}
	for _, i := range cs.Instances {
		if !i.Reachable {
			return none, i.Key.String() + " unreachable"
		}
		if i.Key.Equal(cs.Primary) {
			if len(i.Channels) > 0 || i.ReadOnly {
				return none, "primary " + i.Key.String() + " replicates or is read_only"
			}
			continue
		}
		ch := i.Channel(cs.Primary)
		if ch == nil {
			return none, fmt.Sprintf("%s does not replicate from %s", i.Key, cs.Primary)
		}
		if !ch.Healthy() {
			return none, fmt.Sprintf("%s replicates from %s with io=%s sql=%v%s", i.Key, cs.Primary, ch.IORunning, ch.SQLRunning, firstNonEmpty(": "+ch.LastIOError, ": "+ch.LastSQLError))
		}
	}
	return cs.Primary, ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" && s != ": " {
			return s
		}
	}
	return ""
}

func nodeByKey(d *sandbox.Descriptor, k dbpilot.InstanceKey) *sandbox.Node {
	for _, n := range d.Nodes {
		if n.Key().Equal(k) {
			return n
		}
	}
	return nil
}

// primaryRounds kills the primary each round and returns, per round, the
// time from the kill to the first INSERT the client's application account
// gets acknowledged by another node, trying every ~5 ms. Between rounds
// the killed node is started again and serve rejoins it; when it does not
// within 20 s, the sandbox is redeployed.
func (b *bench) primaryRounds(ctx context.Context, rounds, serves int) (modeResult, error) {
	var res modeResult
	m := &mode{b: b, n: serves}
	defer m.down()
	label := "1 serve"
	if serves > 1 {
		label = fmt.Sprintf("%d coordinated serves", serves)
	}
	if err := m.up(ctx); err != nil {
		return res, fmt.Errorf("%s: %w", label, err)
	}
	for r := 1; r <= rounds; r++ {
		var primary dbpilot.InstanceKey
		var why string
		if err := waitFor(ctx, 30*time.Second, "a healthy cluster before the round", func() bool {
			primary, why = m.healthy()
			return why == ""
		}); err != nil {
			return res, fmt.Errorf("%s, round %d: %w (%s)", label, r, err, why)
		}
		old := nodeByKey(b.d, primary)
		// The account writes on the primary (so the measure cannot wait on
		// anything but the failover), then replication catches up and the
		// serves watch a quiet, healthy cluster; the 1 s block period of
		// the previous recovery has passed.
		if err := waitFor(ctx, 10*time.Second, "a write on the primary "+old.Name, func() bool { return m.insert(ctx, old.Name) == nil }); err != nil {
			return res, fmt.Errorf("%s, round %d: %w", label, r, err)
		}
		sleep(ctx, 1500*time.Millisecond)

		t0 := time.Now()
		if err := sandbox.Kill(b.d, old.Name); err != nil {
			return res, err
		}
		var took float64
		var newNode string
		err := waitFor(ctx, 30*time.Second, "a write on a new primary", func() bool {
			for _, n := range b.d.Nodes {
				if n == old {
					continue
				}
				if m.insert(ctx, n.Name) == nil {
					took, newNode = time.Since(t0).Seconds(), n.Name
					return true
				}
			}
			sleep(ctx, 5*time.Millisecond)
			return false
		})
		if err != nil {
			return res, fmt.Errorf("%s, round %d: %w", label, r, err)
		}
		res.took = append(res.took, took)
		line := fmt.Sprintf("%s, round %2d: %s killed → write on %s after %.3f s; ", label, r, old.Name, newNode, took)

		// Restore: start the killed node; serve fences it and rejoins it
		// when it has no errant transactions.
		t1 := time.Now()
		why = ""
		if err := sandbox.Start(ctx, b.d, old.Name, sandbox.ProcessOptions{}); err != nil {
			why = "start failed: " + err.Error()
		} else if err := waitFor(ctx, 20*time.Second, old.Name+" rejoined", func() bool {
			_, why = m.healthy()
			return why == ""
		}); err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			why = m.rejoinFailure(old, why)
		}
		if why == "" {
			fmt.Fprintf(os.Stderr, "%s%s rejoined in %.1f s\n", line, old.Name, time.Since(t1).Seconds())
			continue
		}
		fmt.Fprintf(os.Stderr, "%sno rejoin (%s): redeploying the sandbox\n", line, why)
		res.redeploys++
		// Nothing may recover the sandbox while it is rebuilt.
		m.down()
		if err := b.redeploy(ctx); err != nil {
			return res, err
		}
		if err := m.up(ctx); err != nil {
			return res, fmt.Errorf("%s, after redeploy: %w", label, err)
		}
	}
	return res, nil
}

// insert writes one row on node as the client's application account.
func (m *mode) insert(ctx context.Context, node string) error {
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := m.app[node].ExecContext(qctx, "INSERT INTO coordbench.t (id, at) VALUES (FLOOR(RAND() * 9e18), NOW(6))")
	return err
}

// rejoinFailure says why the old primary did not rejoin: serve's fencing
// verdict on it when there is one.
func (m *mode) rejoinFailure(old *sandbox.Node, why string) string {
	for _, s := range m.serves {
		var evs []dbpilot.AuditEvent
		if getJSON(s.url+"/api/audit?cluster=c&limit=20", &evs) != nil {
			continue
		}
		for _, e := range evs {
			if e.Event == dbpilot.AuditFence && e.Instance.Equal(old.Key()) && strings.Contains(e.Message, "errant") {
				return "old primary has errant transactions: " + e.Detail["errant"]
			}
		}
	}
	return why
}

// redeploy replaces the sandbox with a fresh one on the same ports, as
// `dbpilot drill` does.
func (b *bench) redeploy(ctx context.Context) error {
	d := b.d
	spec := sandbox.Spec{Name: d.Name, Topology: d.Topology, Nodes: len(d.Nodes), SemiSync: d.SemiSync,
		Basedir: d.Server.Basedir, PortBase: d.Nodes[0].Port - 1, Options: d.Options, Force: true}
	nd, err := sandbox.Deploy(ctx, spec)
	if err != nil {
		return fmt.Errorf("redeploy sandbox %s: %w", d.Name, err)
	}
	b.d = nd
	return nil
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p/100 + 0.5)
	return s[i]
}

func report(label string, v []float64) {
	fmt.Printf("%-48s %6d %8.3f %8.3f %8.3f\n", label, len(v), pct(v, 50), pct(v, 95), pct(v, 100))
}
