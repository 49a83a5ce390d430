// Package sandbox deploys real local MySQL and MariaDB topologies — single
// servers, primary/replica trees, rings, multi-source replicas and MariaDB
// Galera clusters (with an optional asynchronous replica) — for
// testing and demonstration: it finds the server binaries, renders each
// node's configuration, initializes datadirs, starts and stops the servers,
// creates accounts and wires GTID replication. Every sandbox is described by
// a descriptor file (sandbox.json, mode 0600) that other commands use to reach
// its nodes.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Topology kinds.
const (
	TopologySingle      = "single"
	TopologyReplication = "replication"
	TopologyRing        = "ring"
	TopologyMultiSource = "multi-source"
	// TopologyGalera is a MariaDB Galera cluster: node1 bootstrapped with
	// --wsrep-new-cluster, the others joined by state transfer.
	TopologyGalera = "galera"
	// TopologyGaleraReplica is a Galera cluster plus one asynchronous GTID
	// replica of node1 (a common disaster-recovery layout).
	TopologyGaleraReplica = "galera+replica"
)

// IsGalera reports whether a topology has a Galera cluster.
func IsGalera(topology string) bool {
	return topology == TopologyGalera || topology == TopologyGaleraReplica
}

// Descriptor is what sandbox.json holds: everything needed to reach, stop
// and remove a sandbox. It contains credentials and is written with mode 0600.
type Descriptor struct {
	Name     string            `json:"name"`
	Topology string            `json:"topology"`
	Flavor   dbpilot.Flavor    `json:"flavor"`
	Version  string            `json:"version"`
	Dir      string            `json:"dir"`
	Server   Server            `json:"server"`
	SemiSync bool              `json:"semi_sync"`
	Options  []string          `json:"options,omitempty"`
	Admin    mysql.Credentials `json:"admin"`
	Repl     mysql.Credentials `json:"replication"`
	Nodes    []*Node           `json:"nodes"`
	Galera   *Galera           `json:"galera,omitempty"`
	// TLS: deployed with --tls (nil: plain text).
	TLS       *TLS      `json:"tls,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	tls *mysql.TLS // TLS loaded (Load, Deploy)
}

// Galera is how a Galera sandbox's cluster is set up.
type Galera struct {
	Provider    string `json:"provider"`     // path of libgalera_smm.so
	ClusterName string `json:"cluster_name"` // wsrep_cluster_name
	SST         string `json:"sst"`          // rsync or mariabackup
	// SSTScript is the wsrep_sst_method actually configured: the SST
	// method, or dbpilot_rsync when root runs rsync SST (see rootRsync).
	SSTScript string `json:"sst_script"`
	// DomainID is wsrep_gtid_domain_id, shared by every node: the GTID
	// domain of transactions replicated through the cluster.
	DomainID uint32 `json:"gtid_domain_id"`
}

// Node is one server of a sandbox.
type Node struct {
	Name     string `json:"name"` // node1, node2, ...
	Index    int    `json:"index"`
	Port     int    `json:"port"`
	ServerID uint32 `json:"server_id"`
	DomainID uint32 `json:"gtid_domain_id"`
	Dir      string `json:"dir"`
	Datadir  string `json:"datadir"`
	Socket   string `json:"socket"`
	Config   string `json:"config"`
	PidFile  string `json:"pid_file"`
	ErrorLog string `json:"error_log"`
	// Role as deployed: primary, replica, ring-member, source (multi-source).
	Role string `json:"role"`
	// Sources this node replicates from, as deployed.
	Sources []Source `json:"sources,omitempty"`
	// Galera ports on 127.0.0.1 (0 for nodes outside the Galera cluster):
	// group communication (gmcast.listen_addr, wsrep_node_address),
	// incremental state transfer (ist.recv_addr) and full state transfer
	// (wsrep_sst_receive_address).
	GaleraPort int `json:"galera_port,omitempty"`
	ISTPort    int `json:"ist_port,omitempty"`
	SSTPort    int `json:"sst_port,omitempty"`
}

// IsGalera reports whether the node is a member of the sandbox's Galera cluster.
func (n *Node) IsGalera() bool { return n.GaleraPort != 0 }

// Ports returns every port the node uses.
func (n *Node) Ports() []int {
	out := []int{n.Port}
	for _, p := range []int{n.GaleraPort, n.ISTPort, n.SSTPort} {
		if p != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Source is one replication channel of a node as deployed.
type Source struct {
	Channel string `json:"channel"` // "" for the default connection
	Node    string `json:"node"`
}

// Key returns the node's instance key.
func (n *Node) Key() dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: n.Port} }

// Node returns the node named name ("node2"), or by number ("2").
func (d *Descriptor) Node(name string) (*Node, error) {
	for _, n := range d.Nodes {
		if n.Name == name || fmt.Sprint(n.Index) == name {
			return n, nil
		}
	}
	names := make([]string, len(d.Nodes))
	for i, n := range d.Nodes {
		names[i] = n.Name
	}
	return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "sandbox %s has no node %q (nodes: %v)", d.Name, name, names)
}

// AdminOptions returns connection options for the admin account (with
// the sandbox's TLS, if any).
func (d *Descriptor) AdminOptions() mysql.Options {
	return mysql.Options{Credentials: d.Admin, TLS: d.tls}
}

// Home returns dbpilot's base directory: $DBPILOT_HOME, or ~/.dbpilot.
func Home() (string, error) {
	if h := os.Getenv("DBPILOT_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sandbox: find home directory (set DBPILOT_HOME): %w", err)
	}
	return filepath.Join(u, ".dbpilot"), nil
}

// Dir returns the directory of sandbox name.
func Dir(name string) (string, error) {
	h, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "sandboxes", name), nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,39}$`)

// ValidateName checks a sandbox name.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return dbpilot.Errorf(dbpilot.EINVALID, "invalid sandbox name %q: use a letter then up to 39 letters, digits, '-' or '_'", name)
	}
	return nil
}

const descriptorFile = "sandbox.json"

// Load reads the descriptor of sandbox name.
func Load(name string) (*Descriptor, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	dir, err := Dir(name)
	if err != nil {
		return nil, err
	}
	return loadFile(filepath.Join(dir, descriptorFile), name)
}

func loadFile(path, name string) (*Descriptor, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no sandbox named %q (looked for %s; see 'dbpilot sandbox list')", name, path)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: read descriptor %s: %w", path, err)
	}
	var d Descriptor
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sandbox: descriptor %s is damaged", path)
	}
	if err := d.loadTLS(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Save writes the descriptor atomically with mode 0600.
func (d *Descriptor) Save() error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("sandbox: encode descriptor: %w", err)
	}
	path := filepath.Join(d.Dir, descriptorFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("sandbox: write descriptor %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("sandbox: chmod descriptor %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sandbox: write descriptor %s: %w", path, err)
	}
	return nil
}

// List returns the descriptors of every sandbox, sorted by name. A damaged
// descriptor is skipped and reported in the second return value.
func List() ([]*Descriptor, []error, error) {
	h, err := Home()
	if err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(filepath.Join(h, "sandboxes"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: list %s: %w", filepath.Join(h, "sandboxes"), err)
	}
	var out []*Descriptor
	var bad []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d, err := loadFile(filepath.Join(h, "sandboxes", e.Name(), descriptorFile), e.Name())
		if err != nil {
			if dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
				bad = append(bad, err)
			}
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, bad, nil
}
