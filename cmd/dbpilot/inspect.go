package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/spf13/cobra"
)

func (a *app) inspectCommand() *cobra.Command {
	var tf targetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect HOST:PORT | --sandbox NAME [--node N]",
		Short: "Show a server's flavor, version, GTID state, replication channels and semi-sync state",
		Long: `Read one server (or every node of a sandbox) and show flavor and version,
server_id/uuid, read_only, binlog settings, GTID state (MariaDB gtid_*_pos and
domain; MySQL gtid_executed/purged), every replication channel (MariaDB
SHOW ALL SLAVES STATUS; MySQL SHOW REPLICA STATUS or SHOW SLAVE STATUS), the
semi-sync state and uptime.

With --json, one server prints an object and several print an array.` + exitHelp,
		Example: `  dbpilot inspect 127.0.0.1:3306 --user monitor
  dbpilot inspect --sandbox demo --node 2 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, opts, err := tf.resolve(args)
			if err != nil {
				return err
			}
			if len(keys) > 1 && tf.sandbox == "" {
				return dbpilot.Errorf(dbpilot.EINVALID, "inspect takes one HOST:PORT")
			}
			in := mysql.NewInspector(opts)
			defer in.Close()
			insts := make([]*dbpilot.Instance, 0, len(keys))
			for _, k := range keys {
				inst, err := in.Inspect(cmd.Context(), k)
				if err != nil {
					return err
				}
				insts = append(insts, inst)
			}
			if asJSON {
				if len(insts) == 1 && tf.node != "" || len(insts) == 1 && tf.sandbox == "" {
					return writeJSON(a.stdout, insts[0])
				}
				return writeJSON(a.stdout, insts)
			}
			for i, inst := range insts {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				if err := printInstance(a.stdout, inst); err != nil {
					return err
				}
			}
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

func printInstance(w io.Writer, i *dbpilot.Instance) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	p := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	p("instance", i.Key.String())
	p("flavor", fmt.Sprintf("%s %s (%s)", i.Flavor, i.Version, strings.TrimSpace(i.VersionComment)))
	p("version", i.Version.Raw)
	p("server_id", fmt.Sprint(i.ServerID))
	p("server_uuid", i.ServerUUID)
	p("uptime", (i.Uptime / time.Second * time.Second).String())
	ro := onOff(i.ReadOnly)
	if i.Flavor.IsMySQLFamily() {
		ro += ", super_read_only " + onOff(i.SuperReadOnly)
	}
	p("read_only", ro)
	p("log_bin", fmt.Sprintf("%s, binlog_format %s, log_slave_updates %s", onOff(i.LogBin), i.BinlogFormat, onOff(i.LogReplicaUpdates)))
	if i.SlaveNetTimeout > 0 {
		p("slave_net_timeout", i.SlaveNetTimeout.String())
	}
	g := i.GTID
	if i.Flavor == dbpilot.FlavorMariaDB {
		p("gtid_domain_id", fmt.Sprint(g.DomainID))
		p("gtid_strict_mode", onOff(g.StrictMode))
		p("gtid_binlog_pos", dash(g.BinlogPos))
		p("gtid_slave_pos", dash(g.SlavePos))
		p("gtid_current_pos", dash(g.CurrentPos))
		p("gtid_binlog_state", dash(g.BinlogState))
	} else {
		p("gtid_mode", g.Mode)
		p("enforce_gtid_consistency", g.EnforceGTIDConsistency)
		p("gtid_executed", dash(g.Executed))
		p("gtid_purged", dash(g.Purged))
	}
	s := i.SemiSync
	semi := fmt.Sprintf("primary side %s (active %s, %d clients, timeout %s), replica side %s (active %s)",
		onOff(s.PrimaryEnabled), onOff(s.PrimaryActive), s.PrimaryClients, s.PrimaryTimeout, onOff(s.ReplicaEnabled), onOff(s.ReplicaActive))
	p("semi_sync", semi)
	if len(i.Replicas) > 0 {
		var r []string
		for _, k := range i.Replicas {
			r = append(r, k.String())
		}
		p("replicas", strings.Join(r, ", "))
	}
	if len(i.Channels) == 0 {
		p("replication", "none (not a replica)")
	}
	for _, c := range i.Channels {
		name := c.Name
		if name == "" {
			name = "(default)"
		}
		lag := "NULL"
		if c.SecondsBehind != nil {
			lag = fmt.Sprintf("%ds", *c.SecondsBehind)
		}
		p("channel "+name, fmt.Sprintf("from %s user %s: IO %s, SQL %s, lag %s", c.Source, c.SourceUser, c.IORunning, yesNo(c.SQLRunning), lag))
		p("  using_gtid", c.UsingGTID)
		p("  gtid_io_pos", c.GTIDIOPos)
		p("  retrieved_gtid_set", c.RetrievedGTIDSet)
		p("  executed_gtid_set", c.ExecutedGTIDSet)
		p("  source_log", fmt.Sprintf("read %s:%d, exec %s:%d", c.SourceLogFile, c.ReadSourceLogPos, c.RelaySourceLogFile, c.ExecSourceLogPos))
		if c.HeartbeatPeriod > 0 {
			p("  heartbeat", c.HeartbeatPeriod.String())
		}
		if c.LastIOError != "" {
			p("  last_io_error", fmt.Sprintf("%d: %s", c.LastIOErrno, c.LastIOError))
		}
		if c.LastSQLError != "" {
			p("  last_sql_error", fmt.Sprintf("%d: %s", c.LastSQLErrno, c.LastSQLError))
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
