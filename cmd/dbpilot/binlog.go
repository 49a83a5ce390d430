package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/binlog"
	"github.com/spf13/cobra"
)

func (a *app) binlogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "binlog stream|ls|verify",
		Short: "Archive binary logs continuously, list and verify the archive",
		Long: `Keep a server's binary logs in an archive directory, as a replica would
receive them, for point-in-time restore.

  stream   connect as a replica from a GTID position and write the binary logs
           unchanged, one file per server file, each finished file compressed
           (zstd), checksummed and recorded in index.jsonl
  ls       the archive's files with their GTID ranges and times
  verify   checksums of every file and event, and GTID continuity per domain` + exitHelp,
	}
	cmd.AddCommand(a.binlogStreamCommand(), a.binlogLsCommand(), a.binlogVerifyCommand())
	return cmd
}

func (a *app) binlogStreamCommand() *cobra.Command {
	var tf targetFlags
	var opt binlog.Options
	var quiet, asJSON bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "stream HOST:PORT | --sandbox NAME [--node N] --out DIR [--from-gtid POS] [--semi-sync] [--stop-at-end]",
		Short: "Stream binary logs into an archive directory",
		Long: `Connect to the server as a replica (COM_BINLOG_DUMP with a GTID position) and
write its binary logs, unchanged, into DIR: the file being written is
NAME.partial (a valid binary log: mariadb-binlog reads it); when the server
rotates, the finished file is compressed to NAME.zst and a line with its
size, SHA-256 sums, GTID range, first and last transaction times and counts
is appended to DIR/index.jsonl. See "binlog/README.md" for the format.

--from-gtid POS starts a new archive AFTER POS, as a replica's gtid_slave_pos
(MariaDB: domain-server-seq list; MySQL: a GTID set); without it the archive
starts at the server's oldest binary log. An archive that holds files
resumes after its last complete transaction (a partial transaction at the
end of NAME.partial is cut off and received again) and ignores --from-gtid:
every transaction is archived once, in order, across restarts.

The stream runs until interrupted (Ctrl-C writes out and syncs what it has
received), or with --stop-at-end until it has archived every transaction
the server had when it connected (a one-shot backup of the binary logs).
It stops with an error when the connection is lost or the archive's disk
is full; run it again and it resumes where it stopped, also after a kill -9
at any point (a file being finished is finished by the next stream).

--semi-sync acknowledges each transaction as a semi-synchronous replica
does, after it is written and synced to the partial file: a transaction
the primary acknowledged to its client is in the archive. The primary
needs rpl_semi_sync_master_enabled=ON.

A start position the server no longer has (purged binary logs) is refused
with the oldest position it can start after. A second stream on the same
DIR is refused (DIR/LOCK). The account needs REPLICATION SLAVE and
REPLICATION CLIENT (MariaDB: BINLOG MONITOR). --server-id must differ from
every server's and replica's id (default: a random one above 2130706432).` + exitHelp,
		Example: `  dbpilot binlog stream --sandbox demo --out /backups/demo-binlog
  dbpilot binlog stream 10.0.0.5:3306 --user repl --out /backups/shop-binlog --from-gtid 0-1-4711 --semi-sync
  dbpilot binlog stream --sandbox demo --out /backups/demo-binlog --stop-at-end`,
		RunE: func(cmd *cobra.Command, args []string) error {
			key, conn, err := tf.oneTarget(args, "binlog stream")
			if err != nil {
				return err
			}
			opt.Key, opt.Conn, opt.Logger = key, conn, a.log
			out, tty := a.progressOut(quiet)
			if out != nil {
				last := time.Time{}
				opt.OnProgress = func(p binlog.Progress) {
					if time.Since(last) < every && !tty {
						return
					}
					last = time.Now()
					line := fmt.Sprintf("%s %s: %d transactions, %.1f MB, %d files finished, at %s, lag %s",
						p.Source, p.File, p.Transactions, float64(p.Bytes)/1e6, p.FilesFinished, p.Position, p.Lag.Round(time.Second))
					if tty {
						fmt.Fprintf(out, "\r\033[K%s", line)
					} else {
						fmt.Fprintln(out, line)
					}
				}
			}
			s, err := binlog.New(opt)
			if err != nil {
				return err
			}
			err = s.Run(cmd.Context())
			if tty && out != nil {
				fmt.Fprintln(out)
			}
			p := s.Progress()
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, p)
			}
			fmt.Fprintf(a.stdout, "archived %d transactions (%.1f MB, %d files finished) from %s into %s; position %s\n",
				p.Transactions, float64(p.Bytes)/1e6, p.FilesFinished, p.Source, opt.Dir, p.Position)
			return nil
		},
	}
	tf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&opt.Dir, "out", "", "archive directory (created; resumed when it holds an archive)")
	f.StringVar(&opt.From, "from-gtid", "", "start a new archive after this GTID position (\"\": the oldest binary log)")
	f.BoolVar(&opt.SemiSync, "semi-sync", false, "acknowledge transactions as a semi-sync replica once they are in the archive")
	f.BoolVar(&opt.StopAtEnd, "stop-at-end", false, "stop once the transactions the server had at connect are archived")
	f.Uint32Var(&opt.ServerID, "server-id", 0, "replica server id to register with (default: random, above 2130706432)")
	f.Var(durationFlag(&opt.Heartbeat, binlog.DefaultHeartbeat), "heartbeat", "server heartbeat period; the connection is lost after 3 without events")
	f.Var(durationFlag(&every, 10*time.Second), "progress-every", "progress line period when stderr is not a terminal")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	f.BoolVar(&asJSON, "json", false, "print the final progress as JSON")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func (a *app) binlogLsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls DIR [--json]",
		Short: "List an archive's binary log files with GTID ranges and times",
		Long: `List the files of a binary log archive: the finished ones from its
index.jsonl, then the one being written (read from its bytes), each with
its GTID range (the position before its first and after its last
transaction), its first and last transaction times, and its counts.` + exitHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := binlog.List(args[0])
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog ls %s", args[0])
			}
			if asJSON {
				if files == nil {
					files = []binlog.FileInfo{}
				}
				return writeJSON(a.stdout, files)
			}
			printBinlogFiles(a.stdout, files)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the files as JSON")
	return cmd
}

func printBinlogFiles(w io.Writer, files []binlog.FileInfo) {
	if len(files) == 0 {
		fmt.Fprintln(w, "no files")
		return
	}
	fmt.Fprintf(w, "%-26s %10s %6s  %-20s  %-20s  %s\n", "FILE", "BYTES", "TRX", "FIRST", "LAST", "GTIDS")
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	}
	for _, f := range files {
		fmt.Fprintf(w, "%-26s %10d %6d  %-20s  %-20s  %s .. %s\n", f.File, f.Size, f.Transactions, ts(f.FirstTime), ts(f.LastTime), orDash(f.GTIDStart), orDash(f.GTIDEnd))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) binlogVerifyCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify DIR [--json]",
		Short: "Check an archive's checksums and GTID continuity",
		Long: `Check a binary log archive: every file the index names is there; the
SHA-256 of each .zst and of the binary log in it and its size match the
index; every event's CRC-32 is right; each finished file ends after a
complete transaction; its GTIDs and counts match the index; and GTIDs are
continuous per domain inside each file and from each file to the next,
the file being written included. A missing or damaged file is named with
the GTIDs the archive lacks because of it. A NAME.partial beside its indexed
NAME.zst (a stream killed while finishing the file) is not part of the
archive: a note says so, and the next stream removes it. Exit status 1 when
anything is wrong.` + exitHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := binlog.Verify(args[0])
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog verify")
			}
			if rep.Problems == nil {
				rep.Problems = []binlog.Problem{}
			}
			if asJSON {
				if err := writeJSON(a.stdout, rep); err != nil {
					return err
				}
			} else {
				for _, f := range rep.Files {
					state := "ok"
					if !f.OK {
						state = "BAD"
					}
					fmt.Fprintf(a.stdout, "%-4s %-26s %6d transactions  %s .. %s\n", state, f.File, f.Transactions, orDash(f.GTIDStart), orDash(f.GTIDEnd))
				}
				for _, n := range rep.Notes {
					fmt.Fprintf(a.stdout, "note: %s\n", n)
				}
				for _, p := range rep.Problems {
					fmt.Fprintf(a.stdout, "problem: %s\n", p.Message)
				}
				if rep.OK() {
					fmt.Fprintf(a.stdout, "archive %s is sound: %d files, position %s\n", rep.Dir, len(rep.Files), orDash(rep.Position))
				} else {
					fmt.Fprintf(a.stdout, "archive %s: %d problems\n", rep.Dir, len(rep.Problems))
				}
			}
			if !rep.OK() {
				return errProblemsFound
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
