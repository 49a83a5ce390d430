package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/dbcopy"
	"github.com/spf13/cobra"
)

// parseRenames parses --rename-database OLD:NEW values.
func parseRenames(vals []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range vals {
		from, to, ok := strings.Cut(v, ":")
		if !ok || from == "" || to == "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "--rename-database %q: want OLD:NEW", v)
		}
		if _, dup := out[from]; dup {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "--rename-database given twice for %s", from)
		}
		out[from] = to
	}
	return out, nil
}

func (a *app) copyCommand() *cobra.Command {
	var tf targetFlags
	var from, to, fromSB, toSB string
	var renames []string
	var opt dbcopy.Options
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "copy --from HOST:PORT|--from-sandbox NAME[:NODE] --to HOST:PORT|--to-sandbox NAME[:NODE] [--cutover]",
		Short: "Copy databases to another server and keep them current until cut-over (change data capture)",
		Long: `Copy the selected tables from one consistent snapshot of the source (several
connections opened under the server's shortest consistency lock, as dump
does) straight into the target, with no files, then read the source's
binary log from the snapshot's GTID position and apply every row change to
the target by primary key (or unique key of NOT NULL columns), in
transactions that end on the source's transaction boundaries. The position
reached is kept on the target in dbpilot.copy_position, in the same
transaction as the rows: --resume continues an interrupted copy exactly
where it stopped.

The source must write its binary log in ROW format with full row images
(binlog_format=ROW, binlog_row_image=FULL); any other source is refused
before anything is copied, and so are tables without a key. Schema changes
on copied tables are applied when they are plain ALTER TABLE, CREATE/DROP
INDEX, TRUNCATE, CREATE/DROP/RENAME TABLE within the copied set that the
target accepts; anything else touching copied tables stops the copy with
the statement named (exit 2), never a silent divergence.

Without --cutover the copy runs until Ctrl-C, which stops it cleanly and
prints the GTID position reached. With --cutover, once the target has
caught up, it waits until the source is read_only (or sets it with
--set-read-only), applies the rest up to the source's final GTID position,
and compares CHECKSUM TABLE of every copied table on both (exit 1 when any
differs, naming them).

Lag is the time from a transaction's commit on the source to its commit on
the target: by default from the binary log's timestamps (whole seconds);
--heartbeat 500ms writes NOW(6) into dbpilot.copy_heartbeat on the source
and measures it to the microsecond.` + exitHelp,
		Example: `  dbpilot copy --from-sandbox old --to-sandbox new --databases shop
  dbpilot copy --from 10.0.0.5:3306 --to 10.0.0.9:3306 --rename-database shop:shop_v2 --cutover --set-read-only
  dbpilot copy --from 10.0.0.5:3306 --to 10.0.0.9:3306 --resume --cutover`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromKey, fromOpts, _, err := cloneEnd(&tf, from, fromSB, "from")
			if err != nil {
				return err
			}
			toKey, toOpts, _, err := cloneEnd(&tf, to, toSB, "to")
			if err != nil {
				return err
			}
			if opt.Rename, err = parseRenames(renames); err != nil {
				return err
			}
			opt.Progress, opt.ProgressTTY = a.progressOut(quiet)
			opt.Log = a.log
			res, err := dbcopy.Copy(cmd.Context(), fromKey, fromOpts, toKey, toOpts, opt)
			if res != nil && (asJSON || err == nil || errors.Is(err, dbcopy.ErrChecksumsDiffer)) {
				if res.Stopped == "" && err != nil && !errors.Is(err, dbcopy.ErrChecksumsDiffer) {
					res.Stopped = oneLine(err)
				}
				if asJSON {
					if jerr := writeJSON(a.stdout, res); jerr != nil {
						return jerr
					}
				} else {
					printCopy(a, res)
				}
			}
			if errors.Is(err, dbcopy.ErrChecksumsDiffer) {
				fmt.Fprintln(a.stderr, "dbpilot: "+oneLine(err))
				return errProblemsFound
			}
			return err
		},
	}
	tf.register(cmd)
	_ = cmd.Flags().MarkHidden("query-timeout")
	_ = cmd.Flags().MarkHidden("sandbox")
	_ = cmd.Flags().MarkHidden("node")
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "source server HOST:PORT")
	f.StringVar(&to, "to", "", "target server HOST:PORT")
	f.StringVar(&fromSB, "from-sandbox", "", "source: a sandbox node, NAME[:NODE] (default node1)")
	f.StringVar(&toSB, "to-sandbox", "", "target: a sandbox node, NAME[:NODE] (default node1)")
	f.StringSliceVar(&opt.Filter.Databases, "databases", nil, "only these databases (comma-separated)")
	f.StringArrayVar(&opt.Filter.Include, "include", nil, "only tables matching db.table (* and ?; a pattern without a dot names databases); repeatable")
	f.StringArrayVar(&opt.Filter.Exclude, "exclude", nil, "leave out tables matching db.table (or databases); repeatable")
	f.StringArrayVar(&renames, "rename-database", nil, "copy database OLD into NEW on the target, OLD:NEW; repeatable")
	f.IntVar(&opt.Threads, "threads", 4, "tables copied at once in the bulk phase")
	f.BoolVar(&opt.Resume, "resume", false, "continue from the position recorded on the target (no bulk copy)")
	f.BoolVar(&opt.NoBinlog, "no-binlog", false, "keep the target's writes out of its binary log (sql_log_bin=0)")
	f.BoolVar(&opt.Cutover, "cutover", false, "once caught up, wait until the source is read_only, apply the rest and compare checksums")
	f.BoolVar(&opt.SetReadOnly, "set-read-only", false, "with --cutover: set read_only on the source once caught up")
	f.Var(durationFlag(&opt.CaughtUp, 2*time.Second), "caught-up", "lag under which the target counts as caught up for --cutover")
	f.Var(durationFlag(&opt.Heartbeat, 0), "heartbeat", "write NOW(6) into dbpilot.copy_heartbeat on the source at this interval, for a lag in microseconds")
	f.Uint32Var(&opt.ServerID, "server-id", 0, "server id the binary log is read with (default: random, 1e9..2e9)")
	f.Var(durationFlag(&opt.ProgressInterval, 0), "progress-interval", "progress line interval (default 5s; 1s on a terminal)")
	f.BoolVar(&asJSON, "json", false, "print the final report as JSON")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}

func printCopy(a *app, res *dbcopy.Result) {
	w := a.stdout
	fmt.Fprintf(w, "copy %s → %s: %d tables\n", res.Source, res.Target, len(res.Tables))
	if b := res.Bulk; b != nil {
		fmt.Fprintf(w, "  bulk: %d rows (%.1f MB) in %s; %s held %s\n", b.Rows, float64(b.Bytes)/1e6, b.Elapsed.Round(time.Millisecond), b.Lock, b.LockHeld.Round(time.Microsecond))
	}
	ap := res.Apply
	fmt.Fprintf(w, "  changes: from GTID %q to %q: %d transactions, %d rows in %s (%.0f rows/s, %.0f tx/s)\n",
		res.StartGTID, res.GTID, ap.Transactions, ap.Rows, ap.Elapsed.Round(time.Millisecond), ap.RowsPerSec, ap.TxPerSec)
	if ap.LagSamples > 0 {
		fmt.Fprintf(w, "  lag (%s): p50 %s, p99 %s, max %s over %d samples\n", ap.LagSource,
			ap.LagP50.Round(time.Millisecond), ap.LagP99.Round(time.Millisecond), ap.LagMax.Round(time.Millisecond), ap.LagSamples)
	}
	for _, d := range res.DDL {
		fmt.Fprintf(w, "  applied: %s\n", d)
	}
	if c := res.Cutover; c != nil {
		fmt.Fprintf(w, "  cut-over: final GTID %q\n", c.FinalGTID)
		for _, ck := range c.Checksums {
			mark := "equal"
			if !ck.Equal {
				mark = "DIFFERS"
			}
			fmt.Fprintf(w, "    %-40s %s  %s / %s\n", ck.Table, mark, ck.Source, ck.Copy)
		}
	}
	fmt.Fprintf(w, "  stopped: %s\n", res.Stopped)
}
