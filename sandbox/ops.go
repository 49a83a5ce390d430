package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// StopTimeout is how long a clean shutdown may take before SIGKILL.
const StopTimeout = 60 * time.Second

// selectNodes returns all nodes, or the one named.
func (d *Descriptor) selectNodes(node string) ([]*Node, error) {
	if node == "" {
		return d.Nodes, nil
	}
	n, err := d.Node(node)
	if err != nil {
		return nil, err
	}
	return []*Node{n}, nil
}

// Start starts the sandbox's stopped nodes (or one) and waits until they
// accept connections. In a Galera sandbox a node joins the running cluster
// and is waited for until Synced; a fully stopped cluster is bootstrapped
// safely from its most advanced node (see startGalera).
func Start(ctx context.Context, d *Descriptor, node string, po ProcessOptions) error {
	if d.Galera != nil {
		return startGalera(ctx, d, node, po)
	}
	nodes, err := d.selectNodes(node)
	if err != nil {
		return err
	}
	var started []*Node
	for _, n := range nodes {
		if _, ok := runningPid(n); !ok {
			started = append(started, n)
		}
	}
	if err := startPlain(ctx, d, nodes, po); err != nil {
		return err
	}
	return openWriters(ctx, d, started, po.Log)
}

// startPlain starts nodes concurrently and waits until they accept connections.
func startPlain(ctx context.Context, d *Descriptor, nodes []*Node, po ProcessOptions) error {
	return forEachNode(nodes, func(n *Node) error {
		if _, ok := runningPid(n); ok {
			return nil
		}
		proc, err := startNode(d.Server, n, po)
		if err != nil {
			return err
		}
		return waitReady(ctx, n, proc, d.Admin, po.startTimeout())
	})
}

// Stop shuts down the sandbox's nodes (or one) cleanly. A whole Galera
// sandbox stops one node at a time, node1 last (see stopGalera).
func Stop(d *Descriptor, node string) error {
	if d.Galera != nil && node == "" {
		return stopGalera(d)
	}
	nodes, err := d.selectNodes(node)
	if err != nil {
		return err
	}
	return forEachNode(nodes, func(n *Node) error { return stopNode(n, StopTimeout) })
}

// Kill kills the node's server with SIGKILL, as a crash would.
func Kill(d *Descriptor, node string) error {
	n, err := d.Node(node)
	if err != nil {
		return err
	}
	return killNode(n)
}

// Restart stops then starts nodes.
func Restart(ctx context.Context, d *Descriptor, node string, po ProcessOptions) error {
	if err := Stop(d, node); err != nil {
		return err
	}
	return Start(ctx, d, node, po)
}

// Destroy stops every process of the sandbox and removes all its files.
func Destroy(name string) error {
	d, err := Load(name)
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.EINVALID && strings.Contains(err.Error(), "damaged") {
			// Remove what is there; processes cannot be found without the descriptor
			// beyond a /proc scan for the directory's configs.
			dir, _ := Dir(name)
			killUnder(dir)
			return removeDir(dir)
		}
		return err
	}
	var stopErr error
	if err := forEachNode(d.Nodes, func(n *Node) error { return stopNode(n, 30*time.Second) }); err != nil {
		stopErr = err
	}
	killUnder(d.Dir)
	if stopErr != nil {
		return fmt.Errorf("sandbox: destroy %s: %w", name, stopErr)
	}
	return removeDir(d.Dir)
}

// killUnder kills any server whose --defaults-file lies under dir.
func killUnder(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n := &Node{Name: e.Name(), Config: dir + "/" + e.Name() + "/my.cnf"}
		_ = killNode(n)
	}
}

// NodeStatus is what `sandbox status` shows of one node.
type NodeStatus struct {
	Node     string          `json:"node"`
	Port     int             `json:"port"`
	Role     string          `json:"role"`
	Pid      int             `json:"pid,omitempty"`
	Running  bool            `json:"running"`
	Error    string          `json:"error,omitempty"`
	ReadOnly bool            `json:"read_only"`
	GTID     string          `json:"gtid,omitempty"`
	Channels []ChannelStatus `json:"channels,omitempty"`
	// Galera is the wsrep state of a Galera node that runs.
	Galera *GaleraStatus `json:"galera,omitempty"`
}

// GaleraStatus is the wsrep state of a Galera node.
type GaleraStatus struct {
	State         string `json:"state"`       // wsrep_local_state_comment: Synced, Donor/Desynced, Joining, ...
	LocalState    int    `json:"local_state"` // wsrep_local_state: 4 = Synced
	ClusterStatus string `json:"cluster_status"`
	ClusterSize   int    `json:"cluster_size"`
	Ready         bool   `json:"ready"`
	RecvQueue     int64  `json:"local_recv_queue"`
	Error         string `json:"error,omitempty"`
}

// Synced reports whether the node is Synced in a Primary component.
func (g *GaleraStatus) Synced() bool {
	return g != nil && g.Error == "" && g.LocalState == 4 && g.ClusterStatus == "Primary" && g.Ready
}

// ChannelStatus is the state of one replication channel.
type ChannelStatus struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	IO     string `json:"io_running"`
	SQL    bool   `json:"sql_running"`
	Lag    *int64 `json:"seconds_behind,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Status inspects every node.
func Status(ctx context.Context, d *Descriptor) []NodeStatus {
	out := make([]NodeStatus, len(d.Nodes))
	_ = forEachNode(d.Nodes, func(n *Node) error {
		st := NodeStatus{Node: n.Name, Port: n.Port, Role: n.Role}
		defer func() { out[n.Index-1] = st }()
		pid, ok := runningPid(n)
		st.Pid = pid
		if !ok {
			st.Error = "not running"
			if n.IsGalera() {
				st.Error += " (" + stoppedGaleraState(n) + ")"
			}
			return nil
		}
		db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
		if err != nil {
			st.Error = err.Error()
			return nil
		}
		defer db.Close()
		inst, err := db.Inspect(ctx)
		if err != nil {
			st.Error = err.Error()
			return nil
		}
		st.Running = true
		st.ReadOnly = inst.ReadOnly
		if n.IsGalera() {
			st.Galera = galeraNodeStatus(ctx, n, db)
		}
		if d.Flavor == dbpilot.FlavorMariaDB {
			st.GTID = inst.GTID.CurrentPos
		} else {
			st.GTID = inst.GTID.Executed
		}
		for _, c := range inst.Channels {
			cs := ChannelStatus{Name: c.Name, Source: c.Source.String(), IO: string(c.IORunning), SQL: c.SQLRunning, Lag: c.SecondsBehind}
			if c.LastIOError != "" {
				cs.Error = c.LastIOError
			}
			if c.LastSQLError != "" {
				cs.Error = c.LastSQLError
			}
			st.Channels = append(st.Channels, cs)
		}
		return nil
	})
	return out
}

// Env returns shell export lines for the sandbox: each node's port and socket,
// the admin credentials and a DSN per node.
func Env(d *Descriptor) []string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	lines := []string{
		"export DBPILOT_SANDBOX=" + q(d.Name),
		"export DBPILOT_USER=" + q(d.Admin.User),
		"export DBPILOT_PASSWORD=" + q(d.Admin.Password),
		"export DBPILOT_REPL_USER=" + q(d.Repl.User),
		"export DBPILOT_REPL_PASSWORD=" + q(d.Repl.Password),
	}
	for _, n := range d.Nodes {
		up := strings.ToUpper(n.Name)
		lines = append(lines,
			fmt.Sprintf("export %s_PORT=%d", up, n.Port),
			fmt.Sprintf("export %s_SOCKET=%s", up, q(n.Socket)),
			fmt.Sprintf("export %s_DSN=%s", up, q(fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/", d.Admin.User, d.Admin.Password, n.Port))),
		)
	}
	return lines
}

// Exec runs one SQL statement on a node as the admin user and returns its rows
// (nil Rows for statements without a result set).
func Exec(ctx context.Context, d *Descriptor, node, query string) (*mysql.Rows, error) {
	n, err := d.Node(node)
	if err != nil {
		return nil, err
	}
	db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Query(ctx, query)
}
