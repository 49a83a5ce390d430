package main

import (
	"fmt"
	"slices"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/galera"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

func (a *app) galeraCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "galera",
		Short: "Galera cluster operations: safe bootstrap, rolling restart",
		Long: `Operations on MariaDB Galera clusters.

  bootstrap        bring a fully stopped cluster back from its most advanced node
  rolling-restart  restart the nodes one at a time, each Synced before the next

Both work on Galera sandboxes (--sandbox NAME, see 'dbpilot sandbox deploy
--topology galera') and on clusters deployed by other means whose nodes run
on this host (--config FILE): dbpilot must read each node's grastate.dat and
start and stop its server, which a plain HOST:PORT does not say. The file:

  user: dbpilot                 # password from $DBPILOT_PASSWORD (or password_env: VAR)
  connect_timeout: 1s           # optional: TCP connect, greeting and authentication
  nodes:
    - name: db1
      address: 127.0.0.1:3306
      datadir: /var/lib/mysql
      defaults_file: /etc/mysql/my.cnf    # for mariadbd --wsrep-recover
      pid_file: /run/mysqld/mysqld.pid    # optional
      start: systemctl start mariadb
      bootstrap: galera_new_cluster       # optional
      stop: systemctl stop mariadb

Commands run with sh -c; WSREP_NEW_CLUSTER and WSREP_START_POSITION hold
--wsrep-new-cluster and --wsrep-start-position=UUID:SEQNO when they apply,
for commands that start mariadbd themselves.`,
	}
	cmd.AddCommand(a.galeraBootstrap(), a.galeraRollingRestart())
	return cmd
}

// galeraCluster resolves --sandbox or --config: the sandbox (nil for a
// config file), the cluster's name for messages, and its Galera nodes.
func galeraCluster(name, config string, po sandbox.ProcessOptions) (*sandbox.Descriptor, string, []galera.Node, error) {
	switch {
	case name != "" && config != "":
		return nil, "", nil, dbpilot.Errorf(dbpilot.EINVALID, "give --sandbox NAME or --config FILE, not both")
	case config != "":
		_, nodes, err := galera.LoadConfig(config)
		return nil, config, nodes, err
	}
	d, nodes, err := galeraNodes(name, po)
	if err != nil {
		return nil, "", nil, err
	}
	return d, d.Name, nodes, nil
}

// galeraNodes loads a sandbox and returns its Galera nodes.
func galeraNodes(name string, po sandbox.ProcessOptions) (*sandbox.Descriptor, []galera.Node, error) {
	if name == "" {
		return nil, nil, dbpilot.Errorf(dbpilot.EINVALID, "give --sandbox NAME or --config FILE (see --help)")
	}
	d, err := sandbox.Load(name)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := d.GaleraNodes(po)
	if err != nil {
		return nil, nil, err
	}
	return d, nodes, nil
}

func (a *app) galeraBootstrap() *cobra.Command {
	var (
		name    string
		config  string
		execute bool
		asJSON  bool
		exclude []string
	)
	cmd := &cobra.Command{
		Use:   "bootstrap --sandbox NAME | --config FILE [--execute]",
		Short: "Plan (and with --execute, run) the safe bootstrap of a stopped Galera cluster",
		Long: `Plan the bootstrap of a fully stopped Galera cluster and print the evidence;
with --execute, carry it out.

The plan reads every node's grastate.dat (cluster UUID, seqno,
safe_to_bootstrap). Where seqno is -1 (the node crashed or was killed), it
runs 'mariadbd --wsrep-recover' with the node's configuration to recover the
last committed position; this runs InnoDB crash recovery on that datadir but
starts no cluster. It then picks the node with the highest seqno (ties go to
the node marked safe_to_bootstrap: 1, which left the cluster last).

It refuses, and changes nothing, when:
  - a node is running (it names it): a live cluster is joined, not bootstrapped;
    start the stopped nodes with 'dbpilot sandbox start NAME NODE';
  - nodes disagree on the cluster UUID: they are not one cluster;
  - a node that belonged to the cluster has an unknown position (recovery
    failed): it might be the most advanced. Fix it, or leave it out with
    --exclude NODE (it is not started; start it later and it rejoins by SST).
Nodes holding no cluster state (never joined, or an unfinished state
transfer) have nothing to lose and simply join.

--execute sets safe_to_bootstrap: 1 on the chosen node if needed, starts it
with --wsrep-new-cluster, waits until it is Primary and Synced, then starts
the others one at a time, each waited for until Synced. 'dbpilot sandbox
start NAME' on a fully stopped Galera sandbox does the same.

Exit status: 0 planned (or done), 1 refused, 2 usage or connection error.`,
		Example: `  dbpilot galera bootstrap --sandbox g1
  dbpilot galera bootstrap --sandbox g1 --execute
  dbpilot galera bootstrap --sandbox g1 --exclude node3 --execute`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logf := func(format string, args ...any) { fmt.Fprintf(a.stderr, format+"\n", args...) }
			d, cluster, nodes, err := galeraCluster(name, config, sandbox.ProcessOptions{Log: logf})
			if err != nil {
				return err
			}
			for _, x := range exclude {
				if !slices.ContainsFunc(nodes, func(n galera.Node) bool { return n.Name() == x }) {
					return dbpilot.Errorf(dbpilot.EINVALID, "--exclude %s: no such Galera node in %s", x, cluster)
				}
			}
			opts := galera.Options{Log: logf}
			states := galera.Gather(cmd.Context(), nodes, exclude, opts)
			plan, planErr := galera.PlanBootstrap(states)
			if asJSON {
				if err := writeJSON(a.stdout, plan); err != nil {
					return err
				}
			} else if err := plan.Write(a.stdout); err != nil {
				return err
			}
			if planErr != nil {
				if asJSON {
					fmt.Fprintf(a.stderr, "dbpilot: %v\n", planErr)
				}
				return errProblemsFound
			}
			if !execute {
				if !asJSON {
					fmt.Fprintf(a.stdout, "dry run: nothing started; run again with --execute to bootstrap %s\n", plan.Bootstrap)
				}
				return nil
			}
			if err := galera.Bootstrap(cmd.Context(), nodes, plan, opts); err != nil {
				return err
			}
			// The replica of a galera+replica sandbox follows.
			if d != nil {
				if err := sandbox.Start(cmd.Context(), d, "", sandbox.ProcessOptions{Log: logf}); err != nil {
					return err
				}
			}
			if !asJSON {
				fmt.Fprintf(a.stdout, "cluster %s bootstrapped from %s; every node is Synced\n", cluster, plan.Bootstrap)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "sandbox", "", "the Galera sandbox")
	f.StringVar(&config, "config", "", "a cluster file for a Galera cluster on this host that dbpilot did not deploy (see 'dbpilot galera --help')")
	f.BoolVar(&execute, "execute", false, "carry out the plan (default: print it only)")
	f.StringArrayVar(&exclude, "exclude", nil, "leave this node out of the plan and do not start it (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the plan and its evidence as JSON")
	return cmd
}

func (a *app) galeraRollingRestart() *cobra.Command {
	var name, config string
	cmd := &cobra.Command{
		Use:   "rolling-restart --sandbox NAME | --config FILE",
		Short: "Restart a Galera cluster's nodes one at a time",
		Long: `Restart the Galera nodes of a sandbox (or of a --config cluster file) one at a time: each is shut down
cleanly, started again (it rejoins by IST), and waited for until it is Synced
(wsrep_local_state=4) and its receive queue (wsrep_local_recv_queue) has
drained, before the next one. The cluster keeps a Primary component
throughout.

It refuses to begin unless every node runs and is Synced in one Primary
component, and stops at the first node that does not come back (the nodes
after it are not touched). An asynchronous replica of a galera+replica sandbox
is not restarted.`,
		Example: "  dbpilot galera rolling-restart --sandbox g1",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logf := func(format string, args ...any) { fmt.Fprintf(a.stderr, format+"\n", args...) }
			_, cluster, nodes, err := galeraCluster(name, config, sandbox.ProcessOptions{})
			if err != nil {
				return err
			}
			if err := galera.RollingRestart(cmd.Context(), nodes, galera.Options{Log: logf}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "rolling restart of %s done: %d nodes restarted, every node Synced\n", cluster, len(nodes))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "sandbox", "", "the Galera sandbox")
	cmd.Flags().StringVar(&config, "config", "", "a cluster file for a Galera cluster on this host that dbpilot did not deploy")
	return cmd
}
