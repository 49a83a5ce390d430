package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Node roles as deployed.
const (
	RolePrimary    = "primary"
	RoleReplica    = "replica"
	RoleRingMember = "ring-member"
	RoleSource     = "source" // a primary feeding a multi-source replica
	RoleSingle     = "single"
	RoleGalera     = "galera" // a member of the Galera cluster
)

// Account names created on every node.
const (
	AdminUser = "dbpilot"
	ReplUser  = "repl"
)

// Spec is what `dbpilot sandbox deploy` asks for.
type Spec struct {
	Name     string
	Topology string // single, replication, ring, multi-source, galera, galera+replica
	Nodes    int    // 0: the topology's default; for galera+replica, the Galera nodes (the replica is one more)
	SemiSync bool   // enable semi-synchronous replication
	Basedir  string // where the server binaries are; "" searches PATH
	PortBase int    // node i listens on PortBase+i (Galera ports follow the nodes'); 0 picks a free range
	// SST is the state transfer method of Galera joiners: rsync (default)
	// or mariabackup.
	SST string
	// GaleraProvider is the path of libgalera_smm.so; "" finds it.
	GaleraProvider string
	Options        []string // extra KEY=VALUE server options
	// TLS generates a CA, server and client certificates in the sandbox's
	// directory and configures the nodes with them; every TCP connection
	// to the nodes then uses TLS (verify-identity), replication too.
	TLS bool
	// RequireSecureTransport (with TLS) sets require_secure_transport=ON:
	// the nodes refuse plain-text TCP connections.
	RequireSecureTransport bool
	Force                  bool // replace an existing sandbox of the same name
	Process                ProcessOptions
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// DefaultNodes returns the default node count of a topology.
func DefaultNodes(topology string) int {
	if topology == TopologySingle {
		return 1
	}
	return 3
}

// Validate checks the spec and fills defaults.
func (s *Spec) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	switch s.Topology {
	case "":
		s.Topology = TopologyReplication
	case TopologySingle, TopologyReplication, TopologyRing, TopologyMultiSource, TopologyGalera, TopologyGaleraReplica:
	default:
		return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: unknown topology %q: use single, replication, ring, multi-source, galera or galera+replica", s.Topology)
	}
	if s.Nodes == 0 {
		s.Nodes = DefaultNodes(s.Topology)
	}
	if IsGalera(s.Topology) {
		switch s.SST {
		case "":
			s.SST = SSTRsync
		case SSTRsync, SSTMariabackup:
		default:
			return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: unknown --sst %q: use rsync or mariabackup", s.SST)
		}
	} else if s.SST != "" || s.GaleraProvider != "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: --sst and --galera-provider apply to the galera topologies only, not %s", s.Topology)
	}
	min := map[string]int{TopologySingle: 1, TopologyReplication: 2, TopologyRing: 2, TopologyMultiSource: 3, TopologyGalera: 2, TopologyGaleraReplica: 2}[s.Topology]
	if s.Topology == TopologySingle && s.Nodes != 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: topology single has exactly 1 node, not %d", s.Nodes)
	}
	if s.Nodes < min || s.Nodes > 9 {
		return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: topology %s needs from %d to 9 nodes, not %d", s.Topology, min, s.Nodes)
	}
	if np := portCount(s.Topology, s.Nodes); s.PortBase != 0 && (s.PortBase < 1024 || s.PortBase+np > 65535) {
		return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: --port-base %d out of range: the sandbox uses ports port-base+1..port-base+%d, which must lie in 1025..65535", s.PortBase, np)
	}
	if _, err := parseOptions(s.Options); err != nil {
		return err
	}
	if s.RequireSecureTransport && !s.TLS {
		return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: --require-secure-transport needs --tls (the nodes would refuse every TCP connection)")
	}
	return nil
}

func (s *Spec) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

// Deploy creates, starts and wires a sandbox. On any failure, including
// cancellation of ctx (Ctrl-C), it stops what it started and removes what it
// created before returning.
func Deploy(ctx context.Context, spec Spec) (d *Descriptor, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	dir, err := Dir(spec.Name)
	if err != nil {
		return nil, err
	}
	if fileExists(dir) {
		if !spec.Force {
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox %s already exists in %s; use --force to replace it or 'dbpilot sandbox destroy %s'", spec.Name, dir, spec.Name)
		}
		spec.logf("replacing existing sandbox %s", spec.Name)
		if err := Destroy(spec.Name); err != nil && dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
			return nil, err
		}
		if err := removeDir(dir); err != nil {
			return nil, err
		}
	}
	srv, err := FindServer(ctx, spec.Basedir)
	if err != nil {
		return nil, err
	}
	var galeraProvider string
	if IsGalera(spec.Topology) {
		if galeraProvider, err = checkGalera(srv, spec); err != nil {
			return nil, err
		}
	}
	ports, err := choosePorts(spec.Name, spec.PortBase, portCount(spec.Topology, spec.Nodes))
	if err != nil {
		return nil, err
	}
	if len(dir) > 80 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "sandbox: directory %s is too long for Unix socket paths; set DBPILOT_HOME to a shorter path", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: create %s: %w", dir, err)
	}
	d = &Descriptor{
		Name: spec.Name, Topology: spec.Topology, Flavor: srv.Flavor, Version: srv.Version,
		Dir: dir, Server: srv, SemiSync: spec.SemiSync, Options: spec.Options,
		Admin:     mysql.Credentials{User: AdminUser, Password: randomPassword()},
		Repl:      mysql.Credentials{User: ReplUser, Password: randomPassword()},
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	defer func() {
		if err != nil {
			spec.logf("deploy failed; removing sandbox %s", spec.Name)
			cleanup(d)
		}
	}()
	if IsGalera(spec.Topology) {
		d.Galera = &Galera{Provider: galeraProvider, ClusterName: "dbpilot_" + spec.Name, SST: spec.SST, SSTScript: sstScript(spec.SST)}
	}
	layout(d, ports)
	if spec.TLS {
		if d.TLS, err = generateTLS(d, spec.RequireSecureTransport); err != nil {
			return d, err
		}
		if err := d.loadTLS(); err != nil {
			return d, err
		}
		spec.logf("TLS: CA, server and client certificates in %s", d.TLS.Dir)
	}
	// Save early so that a crash mid-deploy leaves something destroy can read.
	if err := d.Save(); err != nil {
		return d, err
	}
	spec.logf("deploying %s: %s, %d nodes, %s %s, ports %d-%d", d.Name, d.Topology, len(d.Nodes), srv.Flavor, srv.Version, ports[0], ports[len(ports)-1])
	if d.Galera != nil {
		if err := deployGalera(ctx, srv, d, spec); err != nil {
			return d, err
		}
		return d, d.Save()
	}
	if err := forEachNode(d.Nodes, func(n *Node) error { return initNode(ctx, srv, d, n, spec.Options) }); err != nil {
		return d, err
	}
	if err := forEachNode(d.Nodes, func(n *Node) error {
		proc, err := startNode(srv, n, spec.Process)
		if err != nil {
			return err
		}
		return waitReady(ctx, n, proc, mysql.Credentials{User: "root"}, spec.Process.startTimeout())
	}); err != nil {
		return d, err
	}
	spec.logf("all %d nodes accept connections; creating accounts", len(d.Nodes))
	if err := forEachNode(d.Nodes, func(n *Node) error { return createAccounts(ctx, d, n) }); err != nil {
		return d, err
	}
	if err := wire(ctx, d); err != nil {
		return d, err
	}
	if err := waitReplicating(ctx, d, 30*time.Second); err != nil {
		return d, err
	}
	if err := forEachNode(layoutWriters(d, d.Nodes), func(n *Node) error { return setWritable(ctx, d, n) }); err != nil {
		return d, err
	}
	if err := d.Save(); err != nil {
		return d, err
	}
	return d, nil
}

// portCount returns how many ports a sandbox uses: one per node, plus the
// Galera, IST and SST ports of each Galera node.
func portCount(topology string, nodes int) int {
	switch topology {
	case TopologyGalera:
		return nodes * 4
	case TopologyGaleraReplica:
		return nodes*4 + 1
	}
	return nodes
}

// layout assigns ports, ids, roles and paths to nodes. Nodes listen on the
// first ports in order; in Galera topologies the Galera, IST and SST ports of
// each Galera node follow, three per node (see portCount).
func layout(d *Descriptor, ports []int) {
	n, galeraNodes := len(ports), 0
	switch d.Topology {
	case TopologyGalera:
		galeraNodes = len(ports) / 4
		n = galeraNodes
	case TopologyGaleraReplica:
		galeraNodes = (len(ports) - 1) / 4
		n = galeraNodes + 1
	}
	for i, port := range ports[:n] {
		idx := i + 1
		name := fmt.Sprintf("node%d", idx)
		ndir := filepath.Join(d.Dir, name)
		node := &Node{
			Name: name, Index: idx, Port: port, ServerID: uint32(port), Dir: ndir,
			Datadir: filepath.Join(ndir, "data"), Socket: filepath.Join(ndir, "mysqld.sock"),
			Config: filepath.Join(ndir, "my.cnf"), PidFile: filepath.Join(ndir, "mysqld.pid"),
			ErrorLog: filepath.Join(ndir, "error.log"),
		}
		switch d.Topology {
		case TopologySingle:
			node.Role = RoleSingle
		case TopologyReplication:
			if idx == 1 {
				node.Role = RolePrimary
			} else {
				node.Role = RoleReplica
				node.Sources = []Source{{Node: "node1"}}
			}
		case TopologyRing:
			node.Role = RoleRingMember
			node.DomainID = uint32(idx)
			prev := idx - 1
			if prev == 0 {
				prev = n
			}
			node.Sources = []Source{{Node: fmt.Sprintf("node%d", prev)}}
		case TopologyGalera, TopologyGaleraReplica:
			// Each node's own domain for local (not replicated) events; the
			// cluster's transactions use the shared wsrep_gtid_domain_id.
			node.DomainID = uint32(idx)
			if idx <= galeraNodes {
				node.Role = RoleGalera
				g := ports[n+3*(idx-1):]
				node.GaleraPort, node.ISTPort, node.SSTPort = g[0], g[1], g[2]
			} else {
				node.Role = RoleReplica
				node.Sources = []Source{{Node: "node1"}}
			}
		case TopologyMultiSource:
			if idx < n {
				node.Role = RoleSource
				node.DomainID = uint32(idx)
			} else {
				node.Role = RoleReplica
				node.DomainID = uint32(idx)
				for j := 1; j < n; j++ {
					node.Sources = append(node.Sources, Source{Channel: fmt.Sprintf("node%d", j), Node: fmt.Sprintf("node%d", j)})
				}
			}
		}
		d.Nodes = append(d.Nodes, node)
	}
}

// forEachNode runs f on every node concurrently and returns the first error.
func forEachNode(nodes []*Node, f func(*Node) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func(i int, n *Node) {
			defer wg.Done()
			errs[i] = f(n)
		}(i, n)
	}
	wg.Wait()
	return errors.Join(nonNil(errs)...)
}

func nonNil(errs []error) []error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) > 1 {
		return out[:1] // one clear line: the first failure
	}
	return out
}

func initNode(ctx context.Context, srv Server, d *Descriptor, n *Node, options []string) error {
	if err := os.MkdirAll(filepath.Join(n.Dir, "tmp"), 0o700); err != nil {
		return fmt.Errorf("sandbox: create %s: %w", n.Dir, err)
	}
	cfg, err := nodeConfig(srv, d, n, options)
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.Config, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("sandbox: write %s: %w", n.Config, err)
	}
	prog, args := InitCommand(srv, n.Config)
	ictx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ictx, prog, args...)
	cmd.Dir = n.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("sandbox: initialize %s: %w", n.Name, ctx.Err())
		}
		tail := strings.TrimSpace(string(out))
		if len(tail) > 1500 {
			tail = tail[len(tail)-1500:]
		}
		return fmt.Errorf("sandbox: initialize %s with %s: %w\n%s\n%s", n.Name, filepath.Base(prog), err, tail, logTail(n.ErrorLog, 8))
	}
	return nil
}

// createAccounts creates the admin and replication accounts and protects
// root, with binary logging off for the session so that no node gets a
// local GTID: a fresh sandbox has no errant transactions.
func createAccounts(ctx context.Context, d *Descriptor, n *Node) error {
	db, err := mysql.Open(ctx, n.Key(), mysql.Options{Credentials: mysql.Credentials{User: "root"}, Socket: n.Socket, QueryTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	// One connection, so that SET sql_log_bin applies to every statement.
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		return mysql.Classify(err, n.Key(), "root", "connect")
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT Host FROM mysql.user WHERE User='root'")
	if err != nil {
		return mysql.Classify(err, n.Key(), "root", "list root accounts")
	}
	var rootHosts []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return mysql.Classify(err, n.Key(), "root", "list root accounts")
		}
		rootHosts = append(rootHosts, h)
	}
	rows.Close()
	stmts := []string{"SET SESSION sql_log_bin=0"}
	for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER %s@%s IDENTIFIED BY %s", mysql.Quote(d.Admin.User), mysql.Quote(host), mysql.Quote(d.Admin.Password)),
			fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO %s@%s WITH GRANT OPTION", mysql.Quote(d.Admin.User), mysql.Quote(host)),
			fmt.Sprintf("CREATE USER %s@%s IDENTIFIED BY %s", mysql.Quote(d.Repl.User), mysql.Quote(host), mysql.Quote(d.Repl.Password)),
			fmt.Sprintf("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO %s@%s", mysql.Quote(d.Repl.User), mysql.Quote(host)),
		)
	}
	// root gets the admin password, so no account is left without one; root
	// accounts named by host name are useless with skip_name_resolve and go.
	var otherRoots []string
	for _, h := range rootHosts {
		switch h {
		case "localhost", "127.0.0.1", "::1":
			stmts = append(stmts, fmt.Sprintf("ALTER USER 'root'@%s IDENTIFIED BY %s", mysql.Quote(h), mysql.Quote(d.Admin.Password)))
		default:
			otherRoots = append(otherRoots, h)
		}
	}
	if len(otherRoots) > 0 && d.Flavor == dbpilot.FlavorMariaDB {
		var q []string
		for _, h := range otherRoots {
			q = append(q, mysql.Quote(h))
		}
		stmts = append(stmts,
			"DELETE FROM mysql.global_priv WHERE User='root' AND Host IN ("+strings.Join(q, ",")+")",
			"FLUSH PRIVILEGES")
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return mysql.Classify(err, n.Key(), "root", "create accounts: "+strings.Fields(s)[0]+" "+strings.Fields(s)[1])
		}
	}
	return nil
}

// wire points every node at its sources and starts replication.
func wire(ctx context.Context, d *Descriptor) error {
	dialect := mysql.Dialect{Flavor: d.Flavor, Version: d.Server.ParsedVersion()}
	return forEachNode(d.Nodes, func(n *Node) error {
		if len(n.Sources) == 0 {
			return nil
		}
		db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
		if err != nil {
			return err
		}
		defer db.Close()
		for _, s := range n.Sources {
			src, err := d.Node(s.Node)
			if err != nil {
				return err
			}
			cs := mysql.ChangeSource{Channel: s.Channel, Source: src.Key(), User: d.Repl.User, Password: d.Repl.Password,
				ConnectRetry: time.Second, HeartbeatPeriod: heartbeatSeconds * time.Second, TLS: d.ReplicationTLS()}
			if err := db.Exec(ctx, dialect.ChangeSourceSQL(cs), dialect.StartReplicaSQL(s.Channel)); err != nil {
				return fmt.Errorf("sandbox: wire %s to %s: %w", n.Name, src.Name, err)
			}
		}
		return nil
	})
}

// waitReplicating waits until every channel of every node runs both threads
// and, with semi-sync, the primaries see their semi-sync replicas.
func waitReplicating(ctx context.Context, d *Descriptor, timeout time.Duration) error {
	dialect := mysql.Dialect{Flavor: d.Flavor, Version: d.Server.ParsedVersion()}
	deadline := time.Now().Add(timeout)
	return forEachNode(d.Nodes, func(n *Node) error {
		if len(n.Sources) == 0 {
			return nil
		}
		db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
		if err != nil {
			return err
		}
		defer db.Close()
		for {
			rows, err := db.Query(ctx, dialect.ShowReplicaStatusSQL())
			if err != nil {
				return err
			}
			ok := len(rows.Values) == len(n.Sources)
			var problem string
			for _, r := range rows.Maps() {
				io, sqlRun := firstOf(r, "Slave_IO_Running", "Replica_IO_Running"), firstOf(r, "Slave_SQL_Running", "Replica_SQL_Running")
				if io != "Yes" || sqlRun != "Yes" {
					ok = false
					problem = fmt.Sprintf("IO %s, SQL %s %s %s", io, sqlRun, firstOf(r, "Last_IO_Error"), firstOf(r, "Last_SQL_Error"))
				}
			}
			if ok {
				return nil
			}
			if time.Now().After(deadline) {
				return dbpilot.Errorf(dbpilot.EUNAVAIL, "sandbox: replication on %s did not start within %s: %s", n.Name, timeout, strings.TrimSpace(problem))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("sandbox: wait for replication on %s: %w", n.Name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return ""
}

// cleanup stops every process of a failed deploy and removes its directory.
func cleanup(d *Descriptor) {
	for _, n := range d.Nodes {
		_ = stopNode(n, 5*time.Second)
	}
	_ = removeDir(d.Dir)
}

func removeDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("sandbox: remove %s: %w", dir, err)
	}
	return nil
}

func randomPassword() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "dbp-" + hex.EncodeToString(b)
}

// choosePorts returns the ports of n nodes: base+1..base+n for an explicit
// base (each must be free), or a free block chosen from the name's hash, away
// from ports any other sandbox uses.
func choosePorts(name string, base, n int) ([]int, error) {
	taken := map[int]string{}
	if all, _, err := List(); err == nil {
		for _, d := range all {
			if d.Name == name {
				continue
			}
			for _, node := range d.Nodes {
				for _, p := range node.Ports() {
					taken[p] = d.Name
				}
			}
		}
	}
	try := func(b int) ([]int, error) {
		ports := make([]int, n)
		for i := range ports {
			p := b + i + 1
			if other, ok := taken[p]; ok {
				return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: port %d is reserved by sandbox %s; choose another --port-base", p, other)
			}
			if err := checkPortFree(p); err != nil {
				return nil, err
			}
			ports[i] = p
		}
		return ports, nil
	}
	if base != 0 {
		return try(base)
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	// Blocks of 10 ports in 20000..29990 (a Galera sandbox's ports run
	// over into the next blocks, which other sandboxes then avoid).
	start := int(h.Sum32()%1000) * 10
	for i := 0; i < 1000; i++ {
		b := 20000 + (start+i*10)%10000
		if b+n > 29999 {
			continue
		}
		if ports, err := try(b); err == nil {
			return ports, nil
		}
	}
	return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: no free block of %d ports in 20001..29999; pass --port-base", n)
}
