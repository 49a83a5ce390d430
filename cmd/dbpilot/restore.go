package main

import (
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/spf13/cobra"
)

func (a *app) restoreCommand() *cobra.Command {
	var tf targetFlags
	var to string
	var opt backup.RestoreOptions
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "restore DIR --to HOST:PORT | --sandbox NAME [--node N]",
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
history. The server needs local_infile=ON (MariaDB's default).` + exitHelp,
		Example: `  dbpilot restore /backups/demo-1 --sandbox lab --node 2
  dbpilot restore /backups/x --to 10.0.0.7:3306 --threads 8 --drop-existing
  dbpilot restore /backups/x --to 10.0.0.7:3306 --resume`,
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
	return cmd
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
