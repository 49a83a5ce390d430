package galera

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Config describes a Galera cluster that dbpilot did not deploy, for the
// operations that must start and stop its servers (bootstrap, rolling
// restart): where each node's data is on this host and the commands that
// start and stop it. A YAML file:
//
//	user: dbpilot                # password from $DBPILOT_PASSWORD (or password_env)
//	connect_timeout: 1s          # optional: connect, greeting and authentication
//	tls: {ca: /etc/mysql/ca.pem} # optional: TLS to the nodes (mode, ca, cert, key, server_name)
//	nodes:
//	  - name: db1
//	    address: 127.0.0.1:3306
//	    datadir: /var/lib/mysql
//	    defaults_file: /etc/mysql/my.cnf
//	    pid_file: /run/mysqld/mysqld.pid   # optional: else "running" = answers on address
//	    start: systemctl start mariadb
//	    bootstrap: galera_new_cluster      # optional: else start with $WSREP_NEW_CLUSTER set
//	    stop: systemctl stop mariadb
//
// Commands run with sh -c. Their environment has WSREP_NEW_CLUSTER
// (--wsrep-new-cluster when this node bootstraps the cluster, else empty)
// and WSREP_START_POSITION (--wsrep-start-position=UUID:SEQNO recovered
// after a crash, else empty), for commands that start mariadbd themselves;
// systemd's units recover the position on their own.
type Config struct {
	User        string       `yaml:"user"`
	PasswordEnv string       `yaml:"password_env"` // default DBPILOT_PASSWORD
	Mysqld      string       `yaml:"mysqld"`       // for --wsrep-recover; default /usr/sbin/mariadbd
	Nodes       []NodeConfig `yaml:"nodes"`
	// StartTimeout bounds the wait for a started server to answer
	// (default 5 minutes: a joiner may need a state transfer first).
	StartTimeout time.Duration `yaml:"start_timeout"`
	// ConnectTimeout bounds each connection to a node: TCP connect,
	// greeting and authentication (default 1s).
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// TLS secures the connections to the nodes (see mysql.TLSSettings).
	TLS mysql.TLSSettings `yaml:"tls"`

	password string
	tls      *mysql.TLS
}

// NodeConfig is one node of a Config.
type NodeConfig struct {
	Name         string `yaml:"name"`
	Address      string `yaml:"address"`
	Datadir      string `yaml:"datadir"`
	DefaultsFile string `yaml:"defaults_file"`
	PidFile      string `yaml:"pid_file"`
	Start        string `yaml:"start"`
	Bootstrap    string `yaml:"bootstrap"`
	Stop         string `yaml:"stop"`
	// Recover, when set, replaces mariadbd --defaults-file=... --wsrep-recover
	// (its output must hold the "WSREP: Recovered position" line).
	Recover string `yaml:"recover"`
}

// LoadConfig reads and checks a cluster file, and returns its nodes.
func LoadConfig(path string) (*Config, []Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.EINVALID, err, "galera: read %s", path)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.EINVALID, err, "galera: %s", path)
	}
	if err := c.validate(); err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.EINVALID, err, "galera: %s", path)
	}
	if c.tls, err = mysql.LoadTLS(c.TLS, "tls"); err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.EINVALID, err, "galera: %s", path)
	}
	env := c.PasswordEnv
	if env == "" {
		env = "DBPILOT_PASSWORD"
	}
	c.password = os.Getenv(env)
	nodes := make([]Node, len(c.Nodes))
	for i := range c.Nodes {
		nodes[i] = &configNode{c: &c, n: c.Nodes[i]}
	}
	return &c, nodes, nil
}

func (c *Config) validate() error {
	if len(c.Nodes) == 0 {
		return fmt.Errorf("no nodes")
	}
	if c.User == "" {
		return fmt.Errorf("no user")
	}
	if c.Mysqld == "" {
		c.Mysqld = "/usr/sbin/mariadbd"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 5 * time.Minute
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = mysql.DefaultConnectTimeout
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		where := fmt.Sprintf("node %d", i+1)
		if n.Name != "" {
			where = "node " + n.Name
		}
		switch {
		case n.Name == "":
			return fmt.Errorf("%s: no name", where)
		case seen[n.Name]:
			return fmt.Errorf("%s: named twice", where)
		case n.Datadir == "":
			return fmt.Errorf("%s: no datadir (grastate.dat is read there)", where)
		case n.Start == "" || n.Stop == "":
			return fmt.Errorf("%s: give both start and stop commands", where)
		case n.DefaultsFile == "" && n.Recover == "":
			return fmt.Errorf("%s: give defaults_file (for mariadbd --wsrep-recover) or a recover command", where)
		}
		if _, err := dbpilot.ParseInstanceKey(n.Address); err != nil {
			return fmt.Errorf("%s: address %q: %w", where, n.Address, err)
		}
		seen[n.Name] = true
	}
	return nil
}

// configNode is a node of a Config: galera.Node through its commands.
type configNode struct {
	c *Config
	n NodeConfig
	// down says why the last Running found no server (its address did
	// not accept a connection), for messages.
	down string
}

func (g *configNode) Name() string     { return g.n.Name }
func (g *configNode) Grastate() string { return filepath.Join(g.n.Datadir, GrastateFile) }

func (g *configNode) key() dbpilot.InstanceKey {
	k, _ := dbpilot.ParseInstanceKey(g.n.Address)
	return k
}

// Running reports the pid in pid_file when that process lives, else
// whether the server answers on its address.
func (g *configNode) Running() (int, bool) {
	if g.n.PidFile != "" {
		b, err := os.ReadFile(g.n.PidFile)
		if err != nil {
			return 0, false
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return 0, false
		}
		if syscall.Kill(pid, 0) != nil {
			return 0, false
		}
		return pid, true
	}
	c, err := net.DialTimeout("tcp", g.n.Address, g.c.ConnectTimeout)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			g.down = fmt.Sprintf("connect to %s timed out after %s", g.n.Address, g.c.ConnectTimeout)
		} else {
			g.down = fmt.Sprintf("nothing answers on %s", g.n.Address)
		}
		return 0, false
	}
	_ = c.Close()
	g.down = ""
	return 0, true
}

// WhyNotRunning says why the last Running found no server ("" if it did
// or the node has a pid file).
func (g *configNode) WhyNotRunning() string { return g.down }

// run runs a node command with sh -c and the WSREP_* variables.
func (g *configNode) run(ctx context.Context, what, command string, env ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A command that leaves a server in the background must not hold our
	// output open: the server inherits no pipe.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("galera: %s %s (%s): %w: %s", what, g.n.Name, command, err, strings.TrimSpace(lastLines(out.String(), 5)))
	}
	return out.String(), nil
}

// Recover runs the recover command, or mariadbd --wsrep-recover with the
// node's defaults file, and returns its output and error log.
func (g *configNode) Recover(ctx context.Context) (string, error) {
	if _, ok := g.Running(); ok {
		return "", dbpilot.Errorf(dbpilot.ECONFLICT, "galera: %s is running; --wsrep-recover needs it stopped", g.n.Name)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if g.n.Recover != "" {
		return g.run(rctx, "recover", g.n.Recover)
	}
	logFile, err := os.CreateTemp("", "dbpilot-wsrep-recover-*.log")
	if err != nil {
		return "", err
	}
	logPath := logFile.Name()
	logFile.Close()
	defer os.Remove(logPath)
	cmd := exec.CommandContext(rctx, g.c.Mysqld, "--defaults-file="+g.n.DefaultsFile, "--wsrep-recover", "--log-error="+logPath)
	out, err := cmd.CombinedOutput()
	b, _ := os.ReadFile(logPath)
	text := string(b) + string(out)
	if err != nil {
		return text, fmt.Errorf("galera: %s --wsrep-recover on %s: %w", filepath.Base(g.c.Mysqld), g.n.Name, err)
	}
	return text, nil
}

// Start runs the start (or bootstrap) command and waits until the server
// answers queries.
func (g *configNode) Start(ctx context.Context, o StartOptions) error {
	command := g.n.Start
	var env []string
	if o.Bootstrap {
		env = append(env, "WSREP_NEW_CLUSTER=--wsrep-new-cluster")
		if g.n.Bootstrap != "" {
			command = g.n.Bootstrap
		}
	} else {
		env = append(env, "WSREP_NEW_CLUSTER=")
	}
	if o.Position != "" {
		env = append(env, "WSREP_START_POSITION=--wsrep-start-position="+o.Position)
	} else {
		env = append(env, "WSREP_START_POSITION=")
	}
	if _, err := g.run(ctx, "start", command, env...); err != nil {
		return err
	}
	deadline := time.Now().Add(g.c.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		if _, err := g.Status(ctx); err == nil {
			return nil
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "galera: %s started (%s) but does not answer on %s after %s: %v", g.n.Name, command, g.n.Address, g.c.StartTimeout, last)
}

// Stop runs the stop command and waits until the server is gone.
func (g *configNode) Stop(ctx context.Context) error {
	if _, err := g.run(ctx, "stop", g.n.Stop); err != nil {
		return err
	}
	deadline := time.Now().Add(g.c.StartTimeout)
	for time.Now().Before(deadline) {
		if _, ok := g.Running(); !ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "galera: %s still runs %s after its stop command (%s)", g.n.Name, g.c.StartTimeout, g.n.Stop)
}

// Status connects with the file's credentials and reads the wsrep status.
func (g *configNode) Status(ctx context.Context) (Status, error) {
	opts := mysql.Options{Credentials: mysql.Credentials{User: g.c.User, Password: g.c.password},
		ConnectTimeout: g.c.ConnectTimeout, QueryTimeout: 5 * time.Second, TLS: g.c.tls}
	db, err := mysql.Open(ctx, g.key(), opts)
	if err != nil {
		return Status{}, err
	}
	defer db.Close()
	return QueryStatus(ctx, db, g.key())
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
