// Package sandbox deploys real local MySQL and MariaDB topologies — single
// servers, primary/replica trees, rings and multi-source replicas — for
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
)

// Descriptor is what sandbox.json holds: everything needed to reach, stop
// and remove a sandbox. It contains credentials and is written with mode 0600.
type Descriptor struct {
	Name      string            `json:"name"`
	Topology  string            `json:"topology"`
	Flavor    dbpilot.Flavor    `json:"flavor"`
	Version   string            `json:"version"`
	Dir       string            `json:"dir"`
	Server    Server            `json:"server"`
	SemiSync  bool              `json:"semi_sync"`
	Options   []string          `json:"options,omitempty"`
	Admin     mysql.Credentials `json:"admin"`
	Repl      mysql.Credentials `json:"replication"`
	Nodes     []*Node           `json:"nodes"`
	CreatedAt time.Time         `json:"created_at"`
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

// AdminOptions returns connection options for the admin account.
func (d *Descriptor) AdminOptions() mysql.Options { return mysql.Options{Credentials: d.Admin} }

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
