package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/galera"
	"github.com/dbpilot/dbpilot/mysql"
)

// Galera state transfer methods.
const (
	SSTRsync       = "rsync"
	SSTMariabackup = "mariabackup"
)

// rootRsyncMethod is the wsrep_sst_method of rsync SST when root runs the
// sandbox. The rsync daemon that receives a state transfer switches to user
// nobody when started by root (rsyncd's default uid), and nobody cannot write
// into a datadir that root owns under a 0700 directory: the transfer fails
// with "Permission denied". mariadbd puts its own directory first on the SST
// script's PATH, so a wrapper named rsync is not found; a method of our own
// name is. wsrep_sst_dbpilot_rsync (in the sandbox's bin/) puts bin/ first on
// PATH and runs the real wsrep_sst_rsync, whose rsync daemon then comes from
// bin/rsync, which keeps uid root.
const rootRsyncMethod = "dbpilot_rsync"

// joinTimeout bounds a Galera joiner's start: a full state transfer comes first.
const joinTimeout = 3 * time.Minute

func sstScript(sst string) string {
	if sst == SSTRsync && os.Geteuid() == 0 {
		return rootRsyncMethod
	}
	return sst
}

// providerPaths are where Galera providers are installed by packages:
// Debian/Ubuntu galera-4 (and galera-3), RPMs, and MariaDB tarballs.
var providerPaths = []string{
	"/usr/lib/galera/libgalera_smm.so",
	"/usr/lib/galera-4/libgalera_smm.so",
	"/usr/lib/libgalera_smm.so",
	"/usr/lib64/galera-4/libgalera_smm.so",
	"/usr/lib64/galera/libgalera_smm.so",
	"/usr/lib/x86_64-linux-gnu/galera/libgalera_smm.so",
	"/usr/lib/aarch64-linux-gnu/galera/libgalera_smm.so",
	"/usr/local/lib/libgalera_smm.so",
}

// FindGaleraProvider returns the Galera provider library: explicit if given
// (it must exist), else under basedir/lib, the usual package locations, or
// the files of the Debian package galera-4.
func FindGaleraProvider(ctx context.Context, basedir, explicit string) (string, error) {
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil || !fileExists(abs) {
			return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: Galera provider %s not found", explicit)
		}
		return abs, nil
	}
	var candidates []string
	if basedir != "" {
		candidates = append(candidates, filepath.Join(basedir, "lib", "libgalera_smm.so"), filepath.Join(basedir, "lib", "galera", "libgalera_smm.so"))
	}
	for _, p := range append(candidates, providerPaths...) {
		if fileExists(p) {
			return p, nil
		}
	}
	if dpkg, err := exec.LookPath("dpkg"); err == nil {
		for _, pkg := range []string{"galera-4", "galera-3"} {
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			out, err := exec.CommandContext(qctx, dpkg, "-L", pkg).Output()
			cancel()
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasSuffix(line, "/libgalera_smm.so") && fileExists(line) {
					return line, nil
				}
			}
		}
	}
	return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: no Galera provider (libgalera_smm.so) in %s or the galera-4 package; install it (Debian: apt-get install galera-4) or pass --galera-provider PATH", strings.Join(providerPaths[:3], ", "))
}

// checkGalera checks that the server and the machine can run a Galera
// sandbox with the spec's state transfer method, and returns the provider.
func checkGalera(srv Server, spec Spec) (string, error) {
	if srv.Flavor != dbpilot.FlavorMariaDB {
		return "", dbpilot.Errorf(dbpilot.EUNSUPPORTED, "sandbox: topology %s needs MariaDB (found %s %s at %s): dbpilot's Galera sandboxes use MariaDB Galera Cluster", spec.Topology, srv.Flavor, srv.Version, srv.Mysqld)
	}
	if !srv.ParsedVersion().AtLeast(10, 4, 0) {
		return "", dbpilot.Errorf(dbpilot.EUNSUPPORTED, "sandbox: topology %s needs MariaDB 10.4 or newer (Galera 4), not %s", spec.Topology, srv.Version)
	}
	provider, err := FindGaleraProvider(context.Background(), srv.Basedir, spec.GaleraProvider)
	if err != nil {
		return "", err
	}
	var need [][2]string // program, package
	switch spec.SST {
	case SSTRsync:
		need = [][2]string{{"rsync", "rsync"}, {"wsrep_sst_rsync", "mariadb-server"}}
	case SSTMariabackup:
		need = [][2]string{{"socat", "socat"}, {"wsrep_sst_mariabackup", "mariadb-server"}}
		if sstTool(srv, "mariabackup") == "" && sstTool(srv, "mariadb-backup") == "" {
			return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: --sst mariabackup needs mariabackup, which is not installed; install it (Debian: apt-get install mariadb-backup) or use --sst rsync")
		}
	}
	for _, p := range need {
		if sstTool(srv, p[0]) == "" {
			return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: --sst %s needs %s, which is not installed; install it (Debian: apt-get install %s)", spec.SST, p[0], p[1])
		}
	}
	return provider, nil
}

// sstTool finds a program the state transfer scripts run: next to the
// server, in basedir/bin, or on PATH.
func sstTool(srv Server, name string) string {
	dirs := []string{filepath.Dir(srv.Mysqld)}
	if srv.Basedir != "" {
		dirs = append(dirs, filepath.Join(srv.Basedir, "bin"))
	}
	dirs = append(dirs, "/usr/bin")
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// binDir holds the sandbox's SST wrappers (root with rsync only).
func binDir(d *Descriptor) string { return filepath.Join(d.Dir, "bin") }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeSSTWrappers writes bin/rsync and bin/wsrep_sst_dbpilot_rsync (see
// rootRsyncMethod).
func writeSSTWrappers(d *Descriptor) error {
	rsync, script := sstTool(d.Server, "rsync"), sstTool(d.Server, "wsrep_sst_rsync")
	if rsync == "" || script == "" {
		return dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox: rsync SST needs rsync and wsrep_sst_rsync; install rsync and mariadb-server")
	}
	bin := binDir(d)
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return fmt.Errorf("sandbox: create %s: %w", bin, err)
	}
	files := map[string]string{
		"rsync": `#!/bin/sh
# Written by dbpilot for sandbox ` + d.Name + `. An rsync daemon started by
# root switches to user nobody, which cannot write into this sandbox's
# datadirs: the Galera SST daemon keeps uid root instead. Only this sandbox's
# state transfers find this file (through wsrep_sst_` + rootRsyncMethod + `).
for a in "$@"; do
	if [ "$a" = "--daemon" ]; then
		exec ` + shellQuote(rsync) + ` --dparam=uid=root --dparam=gid=root "$@"
	fi
done
exec ` + shellQuote(rsync) + ` "$@"
`,
		"wsrep_sst_" + rootRsyncMethod: `#!/bin/sh
# Written by dbpilot for sandbox ` + d.Name + `: rsync SST run by root (see bin/rsync).
PATH=` + shellQuote(bin) + `:"$PATH"
export PATH
exec ` + shellQuote(script) + ` "$@"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o700); err != nil {
			return fmt.Errorf("sandbox: write %s: %w", filepath.Join(bin, name), err)
		}
	}
	return nil
}

// galeraOptions renders the wsrep settings of a Galera node.
func galeraOptions(d *Descriptor, n *Node) [][2]string {
	g := d.Galera
	var peers []string
	for _, o := range d.Nodes {
		if o.IsGalera() {
			peers = append(peers, fmt.Sprintf("127.0.0.1:%d", o.GaleraPort))
		}
	}
	kv := [][2]string{
		{"wsrep_on", "ON"},
		{"wsrep_provider", g.Provider},
		{"wsrep_cluster_name", g.ClusterName},
		{"wsrep_cluster_address", "gcomm://" + strings.Join(peers, ",")},
		{"wsrep_node_name", n.Name},
		{"wsrep_node_address", fmt.Sprintf("127.0.0.1:%d", n.GaleraPort)},
		{"wsrep_node_incoming_address", fmt.Sprintf("127.0.0.1:%d", n.Port)},
		// Loopback only: group communication and IST listen on 127.0.0.1.
		// A small gcache; a crashed node is evicted after 3 s (not 5 s),
		// so that the others' writes do not stall long.
		{"wsrep_provider_options", fmt.Sprintf("gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=32M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S", n.GaleraPort, n.ISTPort)},
		{"wsrep_sst_method", g.SSTScript},
		{"wsrep_sst_receive_address", fmt.Sprintf("127.0.0.1:%d", n.SSTPort)},
		// GTIDs: cluster transactions share one domain; each node keeps
		// its own gtid_domain_id and server_id for local events.
		{"wsrep_gtid_mode", "ON"},
		{"wsrep_gtid_domain_id", fmt.Sprint(g.DomainID)},
		{"innodb_autoinc_lock_mode", "2"},
		{"binlog_format", "ROW"},
	}
	if g.SST == SSTMariabackup {
		// The donor's mariabackup connects as the sandbox's admin account.
		kv = append(kv, [2]string{"wsrep_sst_auth", d.Admin.User + ":" + d.Admin.Password})
	}
	return kv
}

// deployGalera brings up a Galera sandbox laid out and saved by Deploy:
// node1 (and the replica) get initialized datadirs; node1 bootstraps the
// cluster with --wsrep-new-cluster and gets the accounts; every other Galera
// node starts with an empty datadir and joins by state transfer, one at a
// time, each waited for until Synced; the replica is wired to node1.
func deployGalera(ctx context.Context, srv Server, d *Descriptor, spec Spec) error {
	if d.Galera.SSTScript == rootRsyncMethod {
		if err := writeSSTWrappers(d); err != nil {
			return err
		}
	}
	var first *Node
	var joiners, async []*Node
	for _, n := range d.Nodes {
		switch {
		case !n.IsGalera():
			async = append(async, n)
		case first == nil:
			first = n
		default:
			joiners = append(joiners, n)
		}
	}
	initial := append([]*Node{first}, async...)
	if err := forEachNode(initial, func(n *Node) error { return initNode(ctx, srv, d, n, spec.Options) }); err != nil {
		return err
	}
	if err := forEachNode(joiners, func(n *Node) error { return prepareJoiner(srv, d, n, spec.Options) }); err != nil {
		return err
	}
	opts := galera.Options{Log: spec.Log}
	root := mysql.Credentials{User: "root"}
	if err := forEachNode(initial, func(n *Node) error {
		if n.IsGalera() {
			spec.logf("%s: bootstrapping the cluster (--wsrep-new-cluster)", n.Name)
			gn := &galeraNode{d: d, n: n, po: spec.Process, creds: root}
			if err := gn.Start(ctx, galera.StartOptions{Bootstrap: true}); err != nil {
				return err
			}
			_, err := galera.WaitSynced(ctx, gn, joinTimeout)
			return err
		}
		proc, err := startNode(srv, n, spec.Process)
		if err != nil {
			return err
		}
		return waitReady(ctx, n, proc, root, spec.Process.startTimeout())
	}); err != nil {
		return err
	}
	spec.logf("%s is Primary and Synced; creating accounts (they reach the other nodes by state transfer)", first.Name)
	if err := forEachNode(initial, func(n *Node) error { return createAccounts(ctx, d, n) }); err != nil {
		return err
	}
	for _, n := range joiners {
		spec.logf("%s: joining by %s state transfer", n.Name, d.Galera.SST)
		if err := galera.Join(ctx, &galeraNode{d: d, n: n, po: spec.Process, creds: d.Admin}, opts); err != nil {
			return err
		}
	}
	if len(async) == 0 {
		return nil
	}
	if err := wire(ctx, d); err != nil {
		return err
	}
	return waitReplicating(ctx, d, 30*time.Second)
}

// prepareJoiner writes a joiner's configuration and an empty datadir: the
// state transfer fills it.
func prepareJoiner(srv Server, d *Descriptor, n *Node, options []string) error {
	for _, dir := range []string{filepath.Join(n.Dir, "tmp"), n.Datadir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("sandbox: create %s: %w", dir, err)
		}
	}
	cfg, err := nodeConfig(srv, d, n, options)
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("sandbox: write %s: %w", n.Config, err)
	}
	return nil
}

// GaleraNodes returns the members of a Galera sandbox's cluster as the
// galera package drives them. A sandbox of another topology is an
// EUNSUPPORTED error.
func (d *Descriptor) GaleraNodes(po ProcessOptions) ([]galera.Node, error) {
	if d.Galera == nil {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "sandbox %s is not a Galera sandbox (topology %s); deploy one with --topology galera", d.Name, d.Topology)
	}
	var out []galera.Node
	for _, n := range d.Nodes {
		if n.IsGalera() {
			out = append(out, &galeraNode{d: d, n: n, po: po, creds: d.Admin})
		}
	}
	return out, nil
}

// galeraNode implements galera.Node for a sandbox node.
type galeraNode struct {
	d     *Descriptor
	n     *Node
	po    ProcessOptions
	creds mysql.Credentials
}

func (g *galeraNode) Name() string     { return g.n.Name }
func (g *galeraNode) Grastate() string { return filepath.Join(g.n.Datadir, galera.GrastateFile) }

func (g *galeraNode) Running() (int, bool) {
	if pid, ok := runningPid(g.n); ok {
		return pid, true
	}
	if pids := findNodeProcesses(g.n); len(pids) > 0 {
		return pids[0], true
	}
	return 0, false
}

// env returns the environment of the node's server: the SST wrappers first
// on PATH when root runs rsync SST.
func (g *galeraNode) env() []string {
	if g.d.Galera == nil || g.d.Galera.SSTScript != rootRsyncMethod {
		return nil
	}
	return []string{"PATH=" + binDir(g.d) + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// Recover runs mariadbd --wsrep-recover on the stopped node, logging to
// wsrep-recover.log in the node's directory, and returns that log.
func (g *galeraNode) Recover(ctx context.Context) (string, error) {
	if pid, ok := g.Running(); ok {
		return "", dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: %s is running (pid %d); --wsrep-recover needs it stopped", g.n.Name, pid)
	}
	logPath := filepath.Join(g.n.Dir, "wsrep-recover.log")
	_ = os.Remove(logPath)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, g.d.Server.Mysqld, "--defaults-file="+g.n.Config, "--wsrep-recover", "--log-error="+logPath)
	cmd.Dir = g.n.Dir
	out, err := cmd.CombinedOutput()
	b, _ := os.ReadFile(logPath)
	text := string(b) + string(out)
	if err != nil {
		return text, fmt.Errorf("sandbox: %s --wsrep-recover on %s: %w", filepath.Base(g.d.Server.Mysqld), g.n.Name, err)
	}
	return text, nil
}

// Start starts the node's server and waits until it accepts connections. A
// node that fails (most often a joiner whose state transfer failed) gives an
// error with its state and the error-log lines that explain it.
func (g *galeraNode) Start(ctx context.Context, o galera.StartOptions) error {
	n := g.n
	bootstrap := o.Bootstrap
	offset := fileSize(n.ErrorLog)
	var args []string
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	if o.Position != "" {
		args = append(args, "--wsrep-start-position="+o.Position)
	}
	proc, err := startNodeWith(g.d.Server, n, g.po, args, g.env())
	if err != nil {
		return err
	}
	if err := g.waitStarted(ctx, proc, bootstrap); err != nil {
		if ctx.Err() != nil {
			return err
		}
		proc := "exited"
		if pid, running := g.Running(); running {
			// A node that cannot finish is stopped: left running, a joiner
			// would hang, and count as a live cluster for the next start.
			proc = fmt.Sprintf("was still running (pid %d), now stopped", pid)
			_ = stopNode(n, 10*time.Second)
		}
		return g.explain(err, offset, bootstrap, proc)
	}
	return nil
}

// waitStarted waits until the node accepts connections. A joiner is given up
// when every other Galera node of the sandbox has stopped for a few seconds:
// nobody is left to send it state.
func (g *galeraNode) waitStarted(ctx context.Context, proc *os.Process, bootstrap bool) error {
	deadline := time.Now().Add(max(g.po.startTimeout(), joinTimeout))
	var alone time.Time
	for {
		err := waitReady(ctx, g.n, proc, g.creds, time.Second)
		if err == nil || ctx.Err() != nil || !processAlive(proc.Pid) || dbpilot.ErrorCode(err) == dbpilot.EAUTH {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		if bootstrap {
			continue
		}
		if g.othersRunning() {
			alone = time.Time{}
		} else if alone.IsZero() {
			alone = time.Now()
		} else if time.Since(alone) > 3*time.Second {
			return dbpilot.Errorf(dbpilot.EUNAVAIL, "sandbox: every other node of the cluster stopped while %s was joining: nobody is left to send it state", g.n.Name)
		}
	}
}

// othersRunning reports whether a Galera node other than g runs.
func (g *galeraNode) othersRunning() bool {
	for _, o := range g.d.Nodes {
		if o.IsGalera() && o.Name != g.n.Name {
			if _, ok := runningPid(o); ok || len(findNodeProcesses(o)) > 0 {
				return true
			}
		}
	}
	return false
}

// explain turns a failed start into a report of the node's state and the
// error-log lines since offset that explain it.
func (g *galeraNode) explain(err error, offset int64, bootstrap bool, proc string) error {
	n := g.n
	what := "join the cluster"
	if bootstrap {
		what = "bootstrap the cluster"
	}
	state := "no grastate.dat"
	if gs, gerr := galera.ReadGrastate(g.Grastate()); gerr == nil {
		state = fmt.Sprintf("grastate.dat uuid %s seqno %d safe_to_bootstrap %d", gs.UUID, gs.Seqno, b2i(gs.SafeToBootstrap))
	} else if dbpilot.ErrorCode(gerr) != dbpilot.ENOTFOUND {
		state = "grastate.dat empty or damaged (a state transfer did not finish)"
	}
	lines := galera.ExplainLog(readFrom(n.ErrorLog, offset), 12)
	if len(lines) == 0 {
		// Nothing Galera-specific: fall back on the start error's own log tail.
		return fmt.Errorf("sandbox: %s did not %s (%s; %s): %w", n.Name, what, proc, state, err)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	first, _, _ = strings.Cut(first, "; error log ")
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "sandbox: %s did not %s: %s; %s; %s; error log %s explains:\n  %s",
		n.Name, what, strings.TrimPrefix(first, "sandbox: "), proc, state, n.ErrorLog, strings.Join(lines, "\n  "))
}

func (g *galeraNode) Stop(ctx context.Context) error { return stopNode(g.n, StopTimeout) }

// Status reads the node's wsrep status through its socket.
func (g *galeraNode) Status(ctx context.Context) (galera.Status, error) {
	db, err := mysql.Open(ctx, g.n.Key(), mysql.Options{Credentials: g.creds, Socket: g.n.Socket, ConnectTimeout: 2 * time.Second, QueryTimeout: 5 * time.Second})
	if err != nil {
		return galera.Status{}, err
	}
	defer db.Close()
	return galera.QueryStatus(ctx, db, g.n.Key())
}

// startGalera starts a Galera sandbox's stopped nodes, or one node. A node
// joins a running cluster; a fully stopped cluster is bootstrapped safely:
// the node with the highest committed seqno first (galera.PlanBootstrap),
// never blindly. The replica starts last.
func startGalera(ctx context.Context, d *Descriptor, node string, po ProcessOptions) error {
	gnodes, err := d.GaleraNodes(po)
	if err != nil {
		return err
	}
	opts := galera.Options{Log: po.Log}
	var running []string
	for _, gn := range gnodes {
		if _, ok := gn.Running(); ok {
			running = append(running, gn.Name())
		}
	}
	if node != "" {
		n, err := d.Node(node)
		if err != nil {
			return err
		}
		if !n.IsGalera() {
			return startPlain(ctx, d, []*Node{n}, po)
		}
		gn := &galeraNode{d: d, n: n, po: po, creds: d.Admin}
		if _, ok := gn.Running(); ok {
			return nil
		}
		if len(running) == 0 {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: no node of Galera cluster %s is running, so %s has nothing to join; start the whole sandbox ('dbpilot sandbox start %s'), which bootstraps it safely from the most advanced node (see 'dbpilot galera bootstrap --sandbox %s')", d.Name, n.Name, d.Name, d.Name)
		}
		return galera.Join(ctx, gn, opts)
	}
	if len(running) == 0 {
		states := galera.Gather(ctx, gnodes, nil, opts)
		plan, err := galera.PlanBootstrap(states)
		if err != nil {
			return fmt.Errorf("sandbox: start %s: %w (see 'dbpilot galera bootstrap --sandbox %s' for the evidence)", d.Name, err, d.Name)
		}
		opts.Log = po.Log
		if po.Log != nil {
			po.Log("bootstrapping %s from %s: %s", d.Name, plan.Bootstrap, plan.Reason)
		}
		if err := galera.Bootstrap(ctx, gnodes, plan, opts); err != nil {
			return err
		}
	} else {
		if err := requirePrimary(ctx, gnodes); err != nil {
			return err
		}
		for _, gn := range gnodes {
			if _, ok := gn.Running(); ok {
				continue
			}
			if err := galera.Join(ctx, gn, opts); err != nil {
				return err
			}
		}
	}
	var async []*Node
	for _, n := range d.Nodes {
		if !n.IsGalera() {
			async = append(async, n)
		}
	}
	return startPlain(ctx, d, async, po)
}

// requirePrimary checks that some running node is Synced in a Primary
// component: the cluster the stopped nodes are to join. Running nodes that
// are not (a hung joiner, a partitioned node) are named.
func requirePrimary(ctx context.Context, gnodes []galera.Node) error {
	var states []string
	for _, gn := range gnodes {
		if _, ok := gn.Running(); !ok {
			continue
		}
		st, err := gn.Status(ctx)
		if err == nil && st.Synced() {
			return nil
		}
		if err != nil {
			states = append(states, fmt.Sprintf("%s: %v", gn.Name(), err))
		} else {
			states = append(states, fmt.Sprintf("%s: %s", gn.Name(), st))
		}
	}
	return dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: no running node is Synced in a Primary component, so the stopped nodes have no cluster to join (%s); stop the running nodes ('dbpilot sandbox stop NAME NODE'), then start the sandbox to bootstrap it safely", strings.Join(states, "; "))
}

// stopGalera stops the replica first, then the Galera nodes one at a time in
// reverse order, so that node1 leaves last and is marked safe_to_bootstrap.
func stopGalera(d *Descriptor) error {
	var async, members []*Node
	for _, n := range d.Nodes {
		if n.IsGalera() {
			members = append(members, n)
		} else {
			async = append(async, n)
		}
	}
	if err := forEachNode(async, func(n *Node) error { return stopNode(n, StopTimeout) }); err != nil {
		return err
	}
	for i := len(members) - 1; i >= 0; i-- {
		if err := stopNode(members[i], StopTimeout); err != nil {
			return err
		}
	}
	return nil
}

// galeraNodeStatus is what Status shows of a Galera node.
func galeraNodeStatus(ctx context.Context, n *Node, db *mysql.DB) *GaleraStatus {
	st, err := galera.QueryStatus(ctx, db, n.Key())
	if err != nil {
		return &GaleraStatus{Error: err.Error()}
	}
	return &GaleraStatus{State: st.LocalStateComment, LocalState: st.LocalState, ClusterStatus: st.ClusterStatus, ClusterSize: st.ClusterSize, Ready: st.Ready, RecvQueue: st.RecvQueue}
}

// stoppedGaleraState describes a stopped Galera node's saved state.
func stoppedGaleraState(n *Node) string {
	gs, err := galera.ReadGrastate(filepath.Join(n.Datadir, galera.GrastateFile))
	if err != nil {
		return "no usable grastate.dat"
	}
	return fmt.Sprintf("grastate seqno %d, safe_to_bootstrap %d", gs.Seqno, b2i(gs.SafeToBootstrap))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// readFrom returns a file's content from offset (at most the last 256 KiB).
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if size := fileSize(path); size-offset > 256<<10 {
		offset = size - 256<<10
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
