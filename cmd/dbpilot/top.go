package main

import (
	"os"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/tui"
	"github.com/spf13/cobra"
)

func (a *app) topCommand() *cobra.Command {
	var (
		tf       targetFlags
		server   string
		token    string
		serverCA string
		interval time.Duration
		count    int
		view     string
	)
	cmd := &cobra.Command{
		Use:   "top HOST:PORT ... | --sandbox NAME [--node N] | --server URL",
		Short: "Live view of servers: queries/s, threads, lag, InnoDB, replication, Galera, top digests",
		Long: `A live view refreshed every second, one row per instance, in the spirit of
myq_status and innotop.

Views, switched by a key (Ctrl-C or Ctrl-D quits):
  o  overview     role, queries/s, selects/inserts/updates/deletes per second,
                  threads running/connected, lag, dirty pages %, checkpoint
                  age %, InnoDB rows read/written per second, firing alerts
  i  innodb       dirty %, checkpoint age (LSN - last checkpoint, % of the redo
                  log), history list length, rows/s, pending I/O
  r  replication  per channel: IO/SQL threads, lag, relay log space, GTID position
  w  wsrep        wsrep_local_state_comment, cluster size, queues, flow control paused,
                  flow-control messages sent/received per second, cert deps distance
  q  queries      top digests now: per statement digest, calls/s, load (total
                  latency ms per second), avg and max ms, rows examined/s,
                  errors, no-index uses, schema and text; the digest table's
                  capacity and lost digests, TABLE FULL when it is full

Without --server, top connects to each server itself (one connection each)
and reads it as 'dbpilot inspect' does (read_only, GTID position, replica
status), SHOW GLOBAL STATUS and, every 5 seconds, SHOW ENGINE INNODB STATUS;
rates are deltas between two reads. MariaDB 10.6+ has no Innodb_rows_*: the
Handler_* counters stand in. With --server it asks a running 'dbpilot serve'
(clusters, PromQL metrics, firing alerts); HOST:PORT arguments or --sandbox
then only select which instances to show, and lag is serve's heartbeat lag.

The queries view costs the servers more, so it reads only while shown and
every 5 seconds: directly, performance_schema's statement digest table, and
shows what ran between the last two reads (a server with performance_schema
off is a note); with --server, serve's query statistics of the last minute
(GET /api/queries).

When stdout is not a terminal, top prints one line per instance per refresh
(time, then key=value pairs; "-" for unknown) and stops after --count
refreshes, or when interrupted. With --view queries it prints, at every read
of the digests, a line per instance's digest table and one per digest.` + exitHelp,
		Example: `  dbpilot top --sandbox demo
  dbpilot top 10.0.0.1:3306 10.0.0.2:3306 --user monitor
  dbpilot top --server http://127.0.0.1:7070
  dbpilot top --sandbox demo --count 10 > top.log
  dbpilot top --sandbox demo --node 1 --view queries --count 3 > digests.log`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval < 100*time.Millisecond {
				return dbpilot.Errorf(dbpilot.EINVALID, "--interval %s is too short: want 100ms or more", interval)
			}
			if count < 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "--count %d: want 0 (until interrupted) or more", count)
			}
			v, err := tui.ParseView(view)
			if err != nil {
				return err
			}
			var src tui.Source
			if server != "" {
				var only []dbpilot.InstanceKey
				if tf.sandbox != "" || len(args) > 0 {
					if only, _, err = tf.resolve(args); err != nil {
						return err
					}
				}
				if token == "" {
					token = os.Getenv("DBPILOT_TOKEN")
				}
				api := serveClient(server, token, serverCA)
				api.ReadTimeout = 5 * time.Second // a refresh waits no longer
				src = tui.NewServer(api, only)
			} else {
				keys, opts, err := tf.resolve(args)
				if err != nil {
					return err
				}
				src = tui.NewDirect(keys, opts)
			}
			defer src.Close()

			o := tui.Options{Interval: interval, Count: count, View: v}
			if out, ok := a.stdout.(*os.File); ok && tui.IsTerminal(out) {
				return tui.RunTerminal(cmd.Context(), src, os.Stdin, out, o)
			}
			o.Out = a.stdout
			return tui.Run(cmd.Context(), src, o)
		},
	}
	tf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "read through a running 'dbpilot serve' at this URL, e.g. http://127.0.0.1:7070")
	f.StringVar(&token, "token", "", "API token for --server (default $DBPILOT_TOKEN)")
	serverCAFlag(f, &serverCA)
	f.Var(durationFlag(&interval, tui.DefaultInterval), "interval", "refresh interval")
	f.IntVar(&count, "count", 0, "stop after N refreshes (0: until Ctrl-C or interrupted)")
	f.StringVar(&view, "view", "overview", "first view: overview, innodb, replication, wsrep or queries")
	return cmd
}
