package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/replay"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

func (a *app) replayCommand() *cobra.Command {
	var tf targetFlags
	var opt replay.Options
	var target, from, until, modes, threads, domainThreads, htmlOut string
	var asJSON, quiet, keep bool
	cmd := &cobra.Command{
		Use:   "replay --binlogs DIR (--dump DIR [--target HOST:PORT | --sandbox NAME] | --target HOST:PORT | --sandbox NAME) [--modes M,...] [--threads N,...]",
		Short: "Replay a binlog archive into a target once per parallel replication setting and recommend one",
		Long:  replayLong + exitHelp,
		Example: `  dbpilot replay --binlogs /archive/prod --dump /backups/prod-0300 --modes conservative,optimistic,aggressive --threads 0,4,8,16
  dbpilot replay --binlogs /archive/prod --sandbox lab --until-gtid 0-1-90000 --threads 0,8 --html replay.html
  dbpilot replay --binlogs /archive/prod --dump /backups/prod-0300 --rate 2 --modes optimistic --threads 8 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var err error
			if opt.From, err = parseList("--from-gtid", from); err != nil {
				return err
			}
			if opt.Until, err = parseList("--until-gtid", until); err != nil {
				return err
			}
			th, err := replay.ParseThreads("--threads", threads)
			if err != nil {
				return err
			}
			dth, err := replay.ParseThreads("--domain-threads", domainThreads)
			if err != nil {
				return err
			}
			if opt.Settings, err = replay.Settings(strings.Split(modes, ","), th, dth); err != nil {
				return err
			}
			if !quiet {
				opt.Progress = a.stderr
			}
			opt.Log = a.log
			var key dbpilot.InstanceKey
			var conn mysql.Options
			switch {
			case target != "" || tf.sandbox != "":
				var targs []string
				if target != "" {
					targs = []string{target}
				}
				if key, conn, err = tf.oneTarget(targs, "replay"); err != nil {
					return err
				}
			case opt.Dump != "":
				// The archive, the stretch and the dump are checked before
				// a sandbox is deployed.
				if err := replay.CheckArchive(ctx, opt); err != nil {
					return err
				}
				d, err := a.replaySandbox(ctx)
				if err != nil {
					return err
				}
				if !keep {
					defer func() {
						if err := sandbox.Destroy(d.Name); err != nil {
							fmt.Fprintf(a.stderr, "replay: destroy the sandbox %s: %v\n", d.Name, err)
						}
					}()
				} else {
					fmt.Fprintf(a.stderr, "replay: the target is sandbox %s (kept)\n", d.Name)
				}
				key, conn = d.Nodes[0].Key(), mysql.Options{Credentials: d.Admin}
			default:
				return dbpilot.Errorf(dbpilot.EINVALID, "replay: name the target: --dump DIR (a fresh sandbox), --target HOST:PORT or --sandbox NAME")
			}
			res, err := replay.Run(ctx, key, conn, opt)
			if err != nil {
				return err
			}
			return a.replayOutput(res, htmlOut, asJSON)
		},
	}
	tf.register(cmd)
	_ = cmd.Flags().MarkHidden("query-timeout")
	f := cmd.Flags()
	f.StringVar(&opt.Binlogs, "binlogs", "", "the binlog archive to replay (a 'dbpilot binlog stream' archive or a copy of a server's binary logs)")
	f.StringVar(&opt.Dump, "dump", "", "a dbpilot dump taken at the stretch's start, restored before each setting (into a fresh sandbox unless --target/--sandbox)")
	f.StringVar(&target, "target", "", "the target server HOST:PORT (a scratch server: its databases are replaced)")
	f.StringVar(&from, "from-gtid", "", "the stretch's start, a GTID position (default: the archive's start)")
	f.StringVar(&until, "until-gtid", "", "the stretch's end, included, one GTID per domain (default: the archive's last transaction of each domain)")
	f.StringVar(&modes, "modes", "conservative,optimistic", "slave_parallel_mode values to try (conservative, optimistic, aggressive, minimal)")
	f.StringVar(&threads, "threads", "0,4,8", "slave_parallel_threads values to try (0, single-threaded, always runs first)")
	f.StringVar(&domainThreads, "domain-threads", "", "slave_domain_parallel_threads values to try with each thread count (0: no limit, the default; archives of several GTID domains)")
	f.Int64Var(&opt.MaxQueued, "max-queued", 0, "set slave_parallel_max_queued (bytes) for every setting (0: leave it)")
	f.Float64Var(&opt.Rate, "rate", 0, "replay at this multiple of the recorded pace (1: as fast as it was written; 0: full speed)")
	f.BoolVar(&opt.Force, "force", false, "replay into a target that has a source or replicas")
	f.StringVar(&opt.Listen, "listen", "127.0.0.1:0", "where dbpilot serves the archive; the target connects to this host")
	f.IntVar(&opt.RestoreThreads, "restore-threads", 4, "connections of each restore")
	f.IntVar(&opt.Repeat, "repeat", 1, "run each setting N times (the target reset before each) and take the median run; the table shows every run's spread")
	f.StringVar(&htmlOut, "html", "", "also write the report as one self-contained HTML page to FILE")
	f.BoolVar(&keep, "keep-sandbox", false, "with --dump and no target: keep the sandbox replay deployed")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines")
	return cmd
}

// replayLong is replay's --help.
const replayLong = `Replay a stretch of a binary log archive (a 'dbpilot binlog stream' archive or a
copy of a server's binary logs) into a target once per parallel replication
setting, to learn how fast a replica applies this workload and with which
settings. The run is MariaDB (target and archive); the MySQL names of the
settings (replica_parallel_type, replica_parallel_workers) are kept in the
code for later.

The stretch runs from --from-gtid (default: the archive's start) to
--until-gtid, included (default: the archive's last transaction of each
domain). The settings are --modes (slave_parallel_mode: conservative,
optimistic, aggressive, minimal) crossed with --threads
(slave_parallel_threads) and, when given, --domain-threads
(slave_domain_parallel_threads: the most threads one GTID domain may hold, so
that a busy domain does not starve the others; 0 is no limit, and a limit not
below a thread count is left out of that count's settings); threads 0,
single-threaded, always runs first: it is the reference of the speed-up and
of the data check.

The target:
  --dump DIR          the dump (dbpilot dump, taken at the stretch's start) is
                      restored before each setting into a fresh sandbox that
                      replay deploys and destroys (--keep-sandbox keeps it), or
                      into --target/--sandbox, whose databases are dropped first
  --target HOST:PORT  (or --sandbox NAME) without --dump: the server must be at
                      the start already (gtid_slave_pos or gtid_current_pos);
                      replay dumps it once and restores that before each
                      further setting
The target is a scratch server: its databases are replaced, and
gtid_strict_mode is off while replay runs (each setting applies the same
GTIDs again). The time of each restore is shown.

Per setting: STOP SLAVE, SET GLOBAL slave_parallel_threads and
slave_domain_parallel_threads (and slave_parallel_max_queued with
--max-queued), the mode on the temporary
connection 'dbpilot_replay', then dbpilot serves the stretch as a binlog
source (the one of point-in-time restore) at full speed, or at --rate times
the recorded pace (the events' timestamps), and the target replicates it with
START SLAVE UNTIL the end. Measured from START SLAVE to the end position:
the time, transactions/s, events/s and rows/s (the stretch's events and the
rows of its row events, over the time), the speed-up over
single-threaded, retries (Slave_retried_transactions) and deadlocks
(Innodb_deadlocks) of the run, the parallel workers' states (sampled from
information_schema.PROCESSLIST; "busy workers" is the mean number not
waiting for work), with --rate the most the target fell behind the recorded
pace and where, and at the end CHECKSUM TABLE of every table the stretch's
row events touched (every table when it has DDL or statements), compared with
the single-threaded run's: identical or not.

With --repeat N each setting runs N times, the target reset before each run;
its figures are the median run's, the table shows the fastest and slowest
runs, and runs of one setting whose data differ make that setting fail. On a
shared or noisy machine one run can stall for seconds: repeat before choosing
between settings within a few tenths of each other.

The recommendation is the fastest setting whose data was identical, with the
reason (and the faster settings left out, and why). The source's own rate
(events/s served to a sink that discards them) is printed beside the fastest
apply: at 3x or more, the source is not what limits the apply.

Refused before anything is applied, in one line naming what does not match:
an archive with a gap or a corrupt file, a stretch not in the archive, a dump
whose GTID position is not the stretch's start, a target (without --dump)
whose position is not the start, a target that is part of a replication tree
(it has a source configured or replicas in SHOW SLAVE HOSTS) unless --force,
a target that is not MariaDB or has the archive's server_id.

Exit status 1 when a setting failed or its data differed.`

// replayOutput writes res: the HTML report to htmlOut (when given), then
// the table or JSON; errProblemsFound when a setting failed or its data
// differed.
func (a *app) replayOutput(res *replay.Result, htmlOut string, asJSON bool) error {
	var err error
	if htmlOut != "" {
		f, err := os.Create(htmlOut)
		if err != nil {
			return fmt.Errorf("replay: write the report: %w", err)
		}
		if err := res.WriteHTML(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("replay: write the report %s: %w", htmlOut, err)
		}
	}
	if asJSON {
		err = writeJSON(a.stdout, res)
	} else {
		err = res.WriteTable(a.stdout)
		if htmlOut != "" {
			fmt.Fprintf(a.stdout, "report: %s\n", htmlOut)
		}
	}
	if err != nil {
		return err
	}
	for _, s := range res.Settings {
		if s.Error != "" || (!s.Identical && s.Threads > 0) {
			return errProblemsFound
		}
	}
	return nil
}

func parseList(flag, s string) (gtid.MariaList, error) {
	if s == "" {
		return nil, nil
	}
	l, err := gtid.ParseMariaList(s)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "%s", flag)
	}
	return l, nil
}

// replaySandbox deploys the fresh single-server sandbox a --dump replay
// restores into.
func (a *app) replaySandbox(ctx context.Context) (*sandbox.Descriptor, error) {
	dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	spec := sandbox.Spec{Name: fmt.Sprintf("replay%d", os.Getpid()), Topology: sandbox.TopologySingle}
	d, err := sandbox.Deploy(dctx, spec)
	if err != nil {
		return nil, fmt.Errorf("replay: deploy a sandbox for the target: %w", err)
	}
	return d, nil
}
