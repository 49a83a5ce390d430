package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

func (a *app) sandboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Deploy and manage real local MariaDB/MySQL topologies",
		Long: `Sandboxes are real local servers for testing and demonstration: each node has
its own datadir, socket and port on 127.0.0.1, binary logging, GTID
(MariaDB gtid_strict_mode; MySQL gtid_mode=ON), small buffers, and an admin
and a replication account with generated passwords.

Files live under $DBPILOT_HOME/sandboxes/NAME (default ~/.dbpilot); the
descriptor sandbox.json (mode 0600) holds the credentials, and every other
command accepts --sandbox NAME [--node N] instead of HOST:PORT.`,
	}
	cmd.AddCommand(a.sandboxDeploy(), a.sandboxList(), a.sandboxStatus(),
		a.sandboxStartStop("start"), a.sandboxStartStop("stop"), a.sandboxStartStop("restart"), a.sandboxKill(),
		a.sandboxDestroy(), a.sandboxSQL(), a.sandboxEnv())
	return cmd
}

func (a *app) sandboxDeploy() *cobra.Command {
	var spec sandbox.Spec
	cmd := &cobra.Command{
		Use:   "deploy NAME",
		Short: "Create and start a sandbox topology",
		Long: `Create and start a sandbox.

Topologies:
  single        one server
  replication   node1 is the primary, the other nodes replicate from it (default 3 nodes)
  ring          circular replication node1→node2→…→node1, each writer in its own GTID domain
  multi-source  nodes 1..N-1 are primaries (own domains) feeding node N through named connections
  galera        a MariaDB Galera cluster of --nodes nodes (default 3): node1 bootstraps it
                with --wsrep-new-cluster, the others join by state transfer (--sst rsync,
                the default, or mariabackup) one at a time
  galera+replica  the same plus one asynchronous GTID replica of node1 (node N+1), a common
                disaster-recovery layout; --nodes counts the Galera nodes

Galera sandboxes need MariaDB 10.4+, the Galera provider (Debian: galera-4;
found in /usr/lib/galera/libgalera_smm.so and similar, or with
--galera-provider) and the SST tools (rsync; or mariabackup and socat).
Everything listens on 127.0.0.1 only: each Galera node has its SQL port and
three more from the sandbox's port block (group communication, IST, SST).
Transactions replicated by the cluster carry GTIDs of one shared domain
(wsrep_gtid_mode, wsrep_gtid_domain_id=0; each node has its own server_id and
gtid_domain_id for local events), with log_slave_updates, binlog_format=ROW and
innodb_autoinc_lock_mode=2. 'sandbox stop' stops the nodes one at a time,
node1 last; 'sandbox start' of a stopped node joins it to the running cluster
(IST), and of a fully stopped cluster bootstraps it safely from its most
advanced node (see 'dbpilot galera bootstrap').

Replication uses GTID (MariaDB MASTER_USE_GTID=slave_pos, MySQL auto-position),
a 1 s connect retry and heartbeat, and slave_net_timeout=4 so a dead source is
noticed within seconds. Accounts are created with binary logging off, so a new
sandbox has no errant transactions.

--tls generates a CA, a server certificate per node (names 127.0.0.1 and
localhost) and a client certificate in the sandbox's directory (tls/, keys
mode 0600), and configures every node with ssl_ca, ssl_cert and ssl_key;
replication between the nodes uses MASTER_SSL=1 with the CA and
MASTER_SSL_VERIFY_SERVER_CERT=1, and every command given --sandbox (and serve
--sandbox) connects with TLS, verify-identity, with the client certificate.
--require-secure-transport (with --tls) adds require_secure_transport=ON: the
nodes refuse plain-text TCP connections (Unix sockets still work).

--option KEY=VALUE adds a server option to every node; one that would make a
node listen beyond loopback (bind_address, admin_address, mysqlx_bind_address,
the wsrep addresses, set to anything but 127.0.0.1, ::1 or localhost) is
refused (exit status 2): a sandbox's accounts are not made for a network.

Server binaries (mariadbd, then mysqld) are looked for under --basedir, or on
PATH and in /usr/sbin, /usr/local/mysql/bin and similar.`,
		Example: `  dbpilot sandbox deploy demo --topology replication --nodes 3 --semi-sync
  dbpilot sandbox deploy g1 --topology galera --nodes 3 --sst mariabackup
  dbpilot sandbox deploy dr --topology galera+replica
  dbpilot sandbox deploy r1 --topology ring --port-base 23000
  dbpilot sandbox deploy secure --tls --require-secure-transport
  dbpilot sandbox deploy ms --topology multi-source --nodes 4 --option innodb_buffer_pool_size=64M`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Name = args[0]
			// spec.Nodes 0 asks for the topology's default: only when the
			// flag is left out, never for an explicit --nodes 0.
			if cmd.Flags().Changed("nodes") && spec.Nodes < 1 {
				return dbpilot.Errorf(dbpilot.EINVALID, "sandbox: --nodes %d: give at least 1 node, or leave --nodes out for the topology's default (1 for single, 3 otherwise)", spec.Nodes)
			}
			spec.Log = func(format string, args ...any) { fmt.Fprintf(a.stderr, format+"\n", args...) }
			d, err := sandbox.Deploy(cmd.Context(), spec)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "sandbox %s deployed: %s, %d nodes, %s %s\n", d.Name, d.Topology, len(d.Nodes), d.Flavor, d.Version)
			return printNodes(a.stdout, d)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Topology, "topology", sandbox.TopologyReplication, "single, replication, ring, multi-source, galera or galera+replica")
	f.StringVar(&spec.SST, "sst", "", "galera: state transfer method of joining nodes, rsync or mariabackup (default rsync)")
	f.StringVar(&spec.GaleraProvider, "galera-provider", "", "galera: path of libgalera_smm.so (default: found in /usr/lib/galera and similar)")
	f.IntVar(&spec.Nodes, "nodes", 0, "number of nodes, 1 or more (default when left out: 1 for single, 3 otherwise)")
	f.BoolVar(&spec.SemiSync, "semi-sync", false, "enable semi-synchronous replication on every node")
	f.StringVar(&spec.Basedir, "basedir", "", "directory holding the server binaries (bin/, sbin/); default: search PATH")
	f.IntVar(&spec.PortBase, "port-base", 0, "node N listens on port-base+N (default: a free block in 20001-29999)")
	f.StringArrayVar(&spec.Options, "option", nil, "extra server option KEY=VALUE for every node (repeatable); addresses (bind_address, ...) must stay on loopback")
	f.BoolVar(&spec.Force, "force", false, "replace an existing sandbox of the same name")
	f.BoolVar(&spec.TLS, "tls", false, "generate a CA, server and client certificates and use TLS (verify-identity) for every TCP connection to the nodes, replication included")
	f.BoolVar(&spec.RequireSecureTransport, "require-secure-transport", false, "with --tls: require_secure_transport=ON, the nodes refuse plain-text TCP connections")
	return cmd
}

func printNodes(w io.Writer, d *sandbox.Descriptor) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tROLE\tSERVER_ID\tDOMAIN\tSOURCES")
	for _, n := range d.Nodes {
		var src []string
		for _, s := range n.Sources {
			if s.Channel != "" {
				src = append(src, s.Channel+"←"+s.Node)
			} else {
				src = append(src, s.Node)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", n.Name, n.Key(), n.Role, n.ServerID, n.DomainID, strings.Join(src, ","))
	}
	return tw.Flush()
}

func (a *app) sandboxList() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sandboxes",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, bad, err := sandbox.List()
			if err != nil {
				return err
			}
			for _, e := range bad {
				fmt.Fprintln(a.stderr, "dbpilot: warning: "+e.Error())
			}
			if asJSON {
				type item struct {
					Name     string `json:"name"`
					Topology string `json:"topology"`
					Flavor   string `json:"flavor"`
					Version  string `json:"version"`
					Nodes    int    `json:"nodes"`
					Ports    []int  `json:"ports"`
					Dir      string `json:"dir"`
				}
				items := []item{}
				for _, d := range all {
					it := item{Name: d.Name, Topology: d.Topology, Flavor: string(d.Flavor), Version: d.Version, Nodes: len(d.Nodes), Dir: d.Dir}
					for _, n := range d.Nodes {
						it.Ports = append(it.Ports, n.Port)
					}
					items = append(items, it)
				}
				return writeJSON(a.stdout, items)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTOPOLOGY\tSERVER\tNODES\tPORTS\tDIR")
			for _, d := range all {
				ports := ""
				if len(d.Nodes) > 0 {
					ports = fmt.Sprintf("%d-%d", d.Nodes[0].Port, d.Nodes[len(d.Nodes)-1].Port)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s %s\t%d\t%s\t%s\n", d.Name, d.Topology, d.Flavor, d.Version, len(d.Nodes), ports, d.Dir)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) sandboxStatus() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show each node: running, port, role, replication state",
		Long:  "Show each node of a sandbox: whether it runs, its port and role, and the state of its replication channels.\nExits 1 when a node is down or a channel is broken.",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := sandbox.Load(args[0])
			if err != nil {
				return err
			}
			st := sandbox.Status(cmd.Context(), d)
			bad := false
			for _, s := range st {
				if !s.Running || s.Galera != nil && !s.Galera.Synced() {
					bad = true
				}
				for _, c := range s.Channels {
					if c.IO != "Yes" || !c.SQL {
						bad = true
					}
				}
			}
			if asJSON {
				if err := writeJSON(a.stdout, st); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "NODE\tPORT\tROLE\tSTATE\tRO\tREPLICATION\tGTID")
				for _, s := range st {
					state := "running"
					if !s.Running {
						state = "down: " + s.Error
					}
					var repl []string
					for _, c := range s.Channels {
						r := fmt.Sprintf("%s io=%s sql=%s", c.Source, c.IO, yesNo(c.SQL))
						if c.Name != "" {
							r = c.Name + ":" + r
						}
						if c.Lag != nil {
							r += fmt.Sprintf(" lag=%ds", *c.Lag)
						}
						if c.Error != "" {
							r += " error=" + c.Error
						}
						repl = append(repl, r)
					}
					if g := s.Galera; g != nil {
						r := fmt.Sprintf("galera %s %s size=%d", g.State, g.ClusterStatus, g.ClusterSize)
						if g.Error != "" {
							r = "galera error=" + g.Error
						}
						repl = append(repl, r)
					}
					if len(repl) == 0 {
						repl = []string{"-"}
					}
					ro := "-"
					if s.Running {
						ro = yesNo(s.ReadOnly)
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Node, s.Port, s.Role, state, ro, strings.Join(repl, "; "), s.GTID)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if bad {
				return errProblemsFound
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func (a *app) sandboxStartStop(verb string) *cobra.Command {
	short := map[string]string{
		"start":   "Start a sandbox's nodes (or one node)",
		"stop":    "Stop a sandbox's nodes (or one node) with a clean shutdown",
		"restart": "Restart a sandbox's nodes (or one node)",
	}[verb]
	long := short + "."
	if verb != "stop" {
		long += `

In a Galera sandbox, a node joins the running cluster (by IST, or SST when
it lacks too much) and is waited for until Synced. Starting one node while no
node of the cluster runs is refused (it has nothing to join); starting the
whole sandbox then bootstraps it safely: the node with the highest committed
seqno first, never blindly (see 'dbpilot galera bootstrap').`
	} else {
		long += "\n\nA Galera sandbox stops one node at a time, node1 last, so node1 is marked safe_to_bootstrap."
	}
	return &cobra.Command{
		Use:   verb + " NAME [NODE]",
		Short: short,
		Long:  long,
		Args:  rangeArgs(1, 2, "NAME [NODE]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			logf := func(format string, args ...any) { fmt.Fprintf(a.stderr, format+"\n", args...) }
			d, err := sandbox.Load(args[0])
			if err != nil {
				return err
			}
			node := ""
			if len(args) == 2 {
				node = args[1]
			}
			switch verb {
			case "start":
				err = sandbox.Start(cmd.Context(), d, node, sandbox.ProcessOptions{Log: logf})
			case "stop":
				err = sandbox.Stop(d, node)
			case "restart":
				err = sandbox.Restart(cmd.Context(), d, node, sandbox.ProcessOptions{Log: logf})
			}
			if err != nil {
				return err
			}
			what := "sandbox " + d.Name
			if node != "" {
				what += " node " + node
			}
			past := map[string]string{"start": "started", "stop": "stopped", "restart": "restarted"}[verb]
			fmt.Fprintf(a.stdout, "%s %s\n", what, past)
			return nil
		},
	}
}

func (a *app) sandboxKill() *cobra.Command {
	return &cobra.Command{
		Use:   "kill NAME NODE",
		Short: "Kill a node with SIGKILL, as a crash would (for failure tests)",
		Args:  exactArgs(2, "NAME NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := sandbox.Load(args[0])
			if err != nil {
				return err
			}
			if err := sandbox.Kill(d, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "sandbox %s node %s killed\n", d.Name, args[1])
			return nil
		},
	}
}

func (a *app) sandboxDestroy() *cobra.Command {
	return &cobra.Command{
		Use:   "destroy NAME",
		Short: "Stop every process of a sandbox and remove all its files",
		Args:  exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sandbox.Destroy(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "sandbox %s destroyed\n", args[0])
			return nil
		},
	}
}

func (a *app) sandboxEnv() *cobra.Command {
	return &cobra.Command{
		Use:     "env NAME",
		Short:   "Print shell exports for a sandbox (ports, sockets, credentials, DSNs)",
		Long:    "Print shell exports for a sandbox. The output contains passwords: eval it, do not paste it into tickets.",
		Example: "  eval \"$(dbpilot sandbox env demo)\"\n  mariadb -h127.0.0.1 -P$NODE1_PORT -u$DBPILOT_USER -p$DBPILOT_PASSWORD",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := sandbox.Load(args[0])
			if err != nil {
				return err
			}
			for _, l := range sandbox.Env(d) {
				fmt.Fprintln(a.stdout, l)
			}
			return nil
		},
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			if n == 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "%s takes no arguments (see --help)", cmd.CommandPath())
			}
			return dbpilot.Errorf(dbpilot.EINVALID, "%s needs %s (see --help)", cmd.CommandPath(), names)
		}
		return nil
	}
}

func rangeArgs(min, max int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return dbpilot.Errorf(dbpilot.EINVALID, "%s needs %s (see --help)", cmd.CommandPath(), names)
		}
		return nil
	}
}
