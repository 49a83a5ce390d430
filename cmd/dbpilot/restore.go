package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/pitr"
	"github.com/spf13/cobra"
)

func (a *app) restoreCommand() *cobra.Command {
	var tf targetFlags
	var to string
	var opt backup.RestoreOptions
	var asJSON, quiet bool
	var pf pitrFlags
	cmd := &cobra.Command{
		Use:   "restore DIR --to HOST:PORT | --sandbox NAME [--node N] [--binlogs DIR --until-gtid POS | --until-time TIME]",
		Short: "Load a dbpilot dump into a server, in parallel and resumably",
		Long: `Restore the dump in DIR: databases and tables first, then the data chunks in
parallel (LOAD DATA LOCAL, each chunk in one transaction; its file size and
CRC-32C are checked as it streams and a mismatch rolls the chunk back), then
routines, views, triggers and events. Tables that already exist are refused
unless --drop-existing.

Every committed chunk is recorded in DIR/restore.progress. After an
interruption, --resume skips the recorded chunks and reloads the others
(deleting their key range first, in the same transaction), so nothing is lost
or loaded twice.

--set-gtid-position sets the target's replication position to the dump's
(MariaDB gtid_slave_pos, MySQL gtid_purged) so that it can be attached as a
replica at exactly that point; it implies --no-binlog (sql_log_bin=0), which
keeps the restored rows out of the target's binary log and so out of its GTID
history. The server needs local_infile=ON (MariaDB's default).

Point in time (MariaDB): with --binlogs DIR (a 'dbpilot binlog stream'
archive or a copy of the server's binary logs) and --until-gtid POS or
--until-time TIME, the dump is restored with its GTID position, then the
archived transactions after it are applied up to the target: POS included
(as START SLAVE UNTIL master_gtid_pos; only the domains named are applied),
or per domain the last transaction committed at or before TIME. dbpilot
serves the archive on --listen as a binlog source and the target replicates
from it through the temporary connection 'dbpilot_pitr' (removed at the
end), so GTIDs are kept and the server's own applier does the work.
--exclude-gtid leaves transactions out (applied as empty ones, so the
position still passes them). The archive is checked first (sha256 of the
index, event checksums, missing files and GTID gaps): a problem is named
with the file and the GTIDs, and nothing is applied. Running the same
command again after an interruption continues where the target is.` + exitHelp,
		Example: `  dbpilot restore /backups/demo-1 --sandbox lab --node 2
  dbpilot restore /backups/x --to 10.0.0.7:3306 --threads 8 --drop-existing
  dbpilot restore /backups/x --to 10.0.0.7:3306 --resume
  dbpilot restore /backups/x --sandbox lab --binlogs /archive/demo --until-gtid 0-1-4711
  dbpilot restore /backups/x --sandbox lab --binlogs /archive/demo --until-time '2026-03-01 14:59:59' \
      --exclude-gtid 0-1-4712`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var targs []string
			if to != "" {
				targs = []string{to}
			}
			if to == "" && tf.sandbox == "" {
				return dbpilot.Errorf(dbpilot.EINVALID, "name the target with --to HOST:PORT or --sandbox NAME")
			}
			key, conn, err := tf.oneTarget(targs, "restore")
			if err != nil {
				return err
			}
			opt.Dir = args[0]
			opt.Progress, opt.ProgressTTY = a.progressOut(quiet)
			if pf.active(cmd) {
				return a.restorePITR(cmd, key, conn, opt, pf, asJSON)
			}
			res, err := backup.Restore(cmd.Context(), key, conn, opt)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			secs := res.Elapsed.Seconds()
			if secs <= 0 {
				secs = 1e-9
			}
			fmt.Fprintf(a.stdout, "restored %s into %s: tables %d, chunks %d (%d already done), rows %d, %.1f MB in %s (%.1f MB/s, %.0f rows/s)\n",
				opt.Dir, res.Target, res.Tables, res.Chunks, res.Skipped, res.Rows, float64(res.Bytes)/1e6, res.Elapsed.Round(time.Millisecond),
				float64(res.Bytes)/1e6/secs, float64(res.Rows)/secs)
			if res.GTIDSet != "" {
				fmt.Fprintf(a.stdout, "  replication position set to %q\n", res.GTIDSet)
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(a.stdout, "  warning: %s\n", w)
			}
			return nil
		},
	}
	tf.register(cmd)
	// Bulk statements run as long as they need; the context bounds them.
	_ = cmd.Flags().MarkHidden("query-timeout")
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "target server HOST:PORT")
	f.IntVar(&opt.Threads, "threads", 4, "worker connections")
	f.StringSliceVar(&opt.Databases, "databases", nil, "only these databases of the dump (comma-separated)")
	f.BoolVar(&opt.Resume, "resume", false, "continue an interrupted restore recorded in DIR/restore.progress")
	f.BoolVar(&opt.DropExisting, "drop-existing", false, "drop tables, views, routines and events of the dump that exist on the target")
	f.BoolVar(&opt.SetGTIDPosition, "set-gtid-position", false, "set the target's replication position to the dump's (implies --no-binlog)")
	f.BoolVar(&opt.NoBinlog, "no-binlog", false, "do not write the restore to the target's binary log (sql_log_bin=0)")
	f.BoolVar(&opt.DeferIndexes, "defer-indexes", true, "create non-unique secondary indexes after each table's data (a sorted build; --defer-indexes=false keeps them in CREATE TABLE)")
	f.BoolVar(&opt.Users, "users", false, "also restore the dump's accounts and grants")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	pf.register(cmd)
	return cmd
}

// pitrFlags are restore's point-in-time flags.
type pitrFlags struct {
	binlogs, untilGTID, untilTime, exclude, listen string
}

func (p *pitrFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.binlogs, "binlogs", "", "point in time: the binlog archive to apply after the dump (MariaDB)")
	f.StringVar(&p.untilGTID, "until-gtid", "", "point in time: apply up to and including these GTIDs (one per domain; only those domains)")
	f.StringVar(&p.untilTime, "until-time", "", "point in time: apply, per domain, every transaction committed at or before TIME (RFC 3339, or 'YYYY-MM-DD HH:MM:SS' local time)")
	f.StringVar(&p.exclude, "exclude-gtid", "", "point in time: leave these transactions out (comma-separated GTIDs; applied as empty transactions)")
	f.StringVar(&p.listen, "listen", "127.0.0.1:0", "point in time: where dbpilot serves the archive; the target connects to this host")
}

func (p *pitrFlags) active(cmd *cobra.Command) bool {
	for _, n := range []string{"binlogs", "until-gtid", "until-time", "exclude-gtid", "listen"} {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// parseUntilTime reads --until-time: RFC 3339, or a local date and time as
// mariadb-binlog --stop-datetime takes it.
func parseUntilTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, dbpilot.Errorf(dbpilot.EINVALID, "--until-time %q: want RFC 3339 (2026-03-01T14:59:59Z) or 'YYYY-MM-DD HH:MM:SS' (local time)", s)
}

// restorePITR is restore with --binlogs: the dump, then the archive up to
// the target.
func (a *app) restorePITR(cmd *cobra.Command, key dbpilot.InstanceKey, conn mysql.Options, ro backup.RestoreOptions, pf pitrFlags, asJSON bool) error {
	f := cmd.Flags()
	if pf.binlogs == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "--until-gtid, --until-time, --exclude-gtid and --listen go with --binlogs DIR")
	}
	for _, n := range []string{"resume", "drop-existing", "set-gtid-position", "no-binlog", "databases"} {
		if f.Changed(n) {
			return dbpilot.Errorf(dbpilot.EINVALID, "--%s does not go with --binlogs: a point-in-time restore sets the GTID position, resumes by itself and needs every database of the dump", n)
		}
	}
	opt := pitr.Options{Dump: ro.Dir, Binlogs: pf.binlogs, Listen: pf.listen, Restore: ro, Progress: ro.Progress, ProgressTTY: ro.ProgressTTY, Log: a.log}
	switch {
	case (pf.untilGTID == "") == (pf.untilTime == ""):
		return dbpilot.Errorf(dbpilot.EINVALID, "with --binlogs, give exactly one of --until-gtid POS and --until-time TIME")
	case pf.untilGTID != "":
		l, err := gtid.ParseMariaList(pf.untilGTID)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINVALID, err, "--until-gtid")
		}
		opt.Target.GTIDs = l
	default:
		t, err := parseUntilTime(pf.untilTime)
		if err != nil {
			return err
		}
		opt.Target.Time = t
	}
	if pf.exclude != "" {
		ex, err := pitr.ParseGTIDs(pf.exclude)
		if err != nil {
			return err
		}
		opt.Exclude = ex
	}
	res, err := pitr.Restore(cmd.Context(), key, conn, opt)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, res)
	}
	if r := res.Restore; r != nil {
		fmt.Fprintf(a.stdout, "restored %s into %s: tables %d, chunks %d (%d already done), rows %d in %s\n",
			ro.Dir, res.Target, r.Tables, r.Chunks, r.Skipped, r.Rows, r.Elapsed.Round(time.Millisecond))
	} else {
		fmt.Fprintf(a.stdout, "dump %s already restored into %s\n", ro.Dir, res.Target)
	}
	secs := max(res.Elapsed.Seconds(), 1e-9)
	fmt.Fprintf(a.stdout, "applied %d transactions (%d events) from %s to %s in %s (%.0f trx/s, %.0f events/s); position %s\n",
		res.Transactions, res.Events, res.From, res.Until, res.Elapsed.Round(time.Millisecond),
		float64(res.Transactions)/secs, float64(res.Events)/secs, res.Position)
	if len(res.Excluded) > 0 {
		fmt.Fprintf(a.stdout, "  excluded (applied empty): %s\n", strings.Join(res.Excluded, ","))
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(a.stdout, "  warning: %s\n", w)
	}
	return nil
}

func (a *app) verifyCommand() *cobra.Command {
	var tf targetFlags
	var against string
	var opt backup.VerifyOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify DIR --against HOST:PORT | --sandbox NAME [--node N]",
		Short: "Compare a dump's row counts and chunk checksums with a live server",
		Long: `Compute, on the server, each chunk's row count and checksum (CRC32 of every
row, XORed and summed, as pt-table-checksum does) with the same expressions
the dump used, and compare them with the manifest. Use it on a restored copy,
or on a replica stopped at the dump's GTID position: a server that took
writes since the dump differs.

Exit status 1 when anything differs.` + exitHelp,
		Example: `  dbpilot verify /backups/demo-1 --sandbox lab --node 2
  dbpilot verify /backups/x --against 10.0.0.7:3306 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var targs []string
			if against != "" {
				targs = []string{against}
			}
			if against == "" && tf.sandbox == "" {
				return dbpilot.Errorf(dbpilot.EINVALID, "name the server with --against HOST:PORT or --sandbox NAME")
			}
			key, conn, err := tf.oneTarget(targs, "verify")
			if err != nil {
				return err
			}
			opt.Dir = args[0]
			rep, err := backup.Verify(cmd.Context(), key, conn, opt)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(a.stdout, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(a.stdout, rep.String())
				for _, m := range rep.Missing {
					fmt.Fprintf(a.stdout, "  missing: %s\n", m)
				}
				for _, d := range rep.Details {
					fmt.Fprintf(a.stdout, "  %s %s: dump %d rows (crc %08x/%d), server %d rows (crc %08x/%d)\n",
						d.Table, d.Chunk, d.Rows, d.Checksum.Xor, d.Checksum.Sum, d.ServerRows, d.ServerSum.Xor, d.ServerSum.Sum)
				}
			}
			if !rep.OK() {
				return errProblemsFound
			}
			return nil
		},
	}
	tf.register(cmd)
	// Bulk statements run as long as they need; the context bounds them.
	_ = cmd.Flags().MarkHidden("query-timeout")
	f := cmd.Flags()
	f.StringVar(&against, "against", "", "server to compare with, HOST:PORT")
	f.IntVar(&opt.Threads, "threads", 4, "worker connections")
	f.StringSliceVar(&opt.Databases, "databases", nil, "only these databases of the dump")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
