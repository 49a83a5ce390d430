package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/tui"
	"github.com/spf13/cobra"
)

// oneTarget resolves the flags to exactly one server: with --sandbox and no
// --node, the sandbox's first node (the primary of a replication sandbox).
func (t *targetFlags) oneTarget(args []string, what string) (dbpilot.InstanceKey, mysql.Options, error) {
	keys, opts, err := t.resolve(args)
	if err != nil {
		return dbpilot.InstanceKey{}, opts, err
	}
	if len(keys) > 1 && t.sandbox == "" {
		return dbpilot.InstanceKey{}, opts, dbpilot.Errorf(dbpilot.EINVALID, "%s takes one HOST:PORT", what)
	}
	return keys[0], opts, nil
}

// progressOut is where progress goes: stderr, as a rewritten line when it
// is a terminal.
func (a *app) progressOut(quiet bool) (io.Writer, bool) {
	if quiet {
		return nil, false
	}
	f, ok := a.stderr.(*os.File)
	return a.stderr, ok && tui.IsTerminal(f)
}

// The garbage collector settings for a dump (see relaxGC).
const (
	dumpGCPercent   = 400
	dumpMemoryLimit = 160 << 20
)

// relaxGC sets the garbage collector up for a dump, except what the user
// set with GOGC or GOMEMLIMIT: the driver allocates per value read while the
// dump's heap stays small (fixed buffers), so collecting less often saves
// CPU at little cost in memory, and the soft limit keeps the process well
// under 256 MB even with many threads. It returns a function that puts the
// previous settings back.
func relaxGC() (restore func()) {
	var undo []func()
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(dumpGCPercent)
		undo = append(undo, func() { debug.SetGCPercent(old) })
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		old := debug.SetMemoryLimit(dumpMemoryLimit)
		undo = append(undo, func() { debug.SetMemoryLimit(old) })
	}
	return func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}

func (a *app) dumpCommand() *cobra.Command {
	var tf targetFlags
	var opt backup.DumpOptions
	var where []string
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "dump HOST:PORT | --sandbox NAME [--node N] --out DIR",
		Short: "Parallel, consistent logical dump with the GTID position",
		Long: `Dump databases into DIR with several threads, all reading one consistent
snapshot. The snapshots are opened while the server's shortest consistency
lock is held — MariaDB 10.4+: BACKUP STAGE BLOCK_COMMIT (commits wait a few
milliseconds; reads, writes and DDL go on), older MariaDB and MySQL:
FLUSH TABLES WITH READ LOCK — together with reading the GTID and binary log
position; the lock is released before any data is read and the time it was
held is printed. The account needs SELECT, SHOW VIEW, TRIGGER, EVENT, RELOAD
and (for the binary log position) REPLICATION CLIENT or BINLOG MONITOR.

Tables are cut into chunks of about --chunk-rows rows along the primary key
(or a unique key): integer keys by value ranges, other keys by one ordered
pass over the key's index; never OFFSET. A table without a unique key is
dumped by one thread. Each worker has a fixed buffer: memory stays bounded
whatever the table size. The garbage collector runs less often than Go's
default (GOGC=400) under a soft memory limit of 160 MiB; set GOGC or
GOMEMLIMIT to choose otherwise.

DIR gets a manifest.json (written last), schema files and one data file per
chunk (LOAD DATA format, zstd-compressed by default) with row counts and
checksums. While the dump runs, and after it fails, DIR holds
dump.incomplete and no manifest: restore and verify refuse it.

Filters: --databases a,b; --include/--exclude db.table patterns with * and ?
(a pattern without a dot names databases; repeatable); --where
'db.table:condition' (repeatable): the condition must be one SQL expression
(balanced parentheses outside strings and quoted identifiers, no ';' and no
comment), or it is refused with exit status 2. Patterns that leave no table
nor view are refused (exit status 2), not dumped as empty databases. System databases (mysql, sys,
information_schema, performance_schema) are dumped only when named in
--databases. --users adds accounts and grants.

--desync (Galera nodes): a node held by the consistency lock cannot apply
writesets, and its growing receive queue would make it send flow control and
stall the writes of the whole cluster. With --desync the node is desynced
(SET GLOBAL wsrep_desync=ON) from just before the lock until all snapshots
are open, then put back (OFF) while the data is copied, also when the dump
fails or is interrupted (Ctrl-C); if dbpilot is killed, run SET GLOBAL
wsrep_desync=OFF on the node yourself. The node's wsrep status is sampled
every 100 ms from before the desync until it has caught up (receive queue
back to its level before, or the node Synced again; the dump waits up to
--desync-wait for it), and the summary reports the highest receive queue,
the flow control messages the node sent, the time the cluster was paused by
flow control, and the time the catch-up took. The account needs SUPER (or
SYSTEM_VARIABLES_ADMIN). A server that is not a Galera node, or one already
desynced by someone else, is refused.` + exitHelp,
		Example: `  dbpilot dump --sandbox demo --out /backups/demo-1
  dbpilot dump 10.0.0.5:3306 --user backup --out /backups/x --threads 8 --databases shop \
      --exclude 'shop.audit_*' --where 'shop.orders:created >= "2026-01-01"'
  dbpilot dump --sandbox g --node 2 --desync --out /backups/g-1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			defer relaxGC()()
			key, conn, err := tf.oneTarget(args, "dump")
			if err != nil {
				return err
			}
			if opt.Where, err = backup.ParseWhere(where); err != nil {
				return err
			}
			opt.Tool = "dbpilot " + version
			opt.Progress, opt.ProgressTTY = a.progressOut(quiet)
			var desync *backup.DesyncReport
			opt.OnDesync = func(r backup.DesyncReport) { desync = &r }
			m, err := backup.Dump(cmd.Context(), key, conn, opt)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, dumpJSON{Manifest: m, Desync: desync})
			}
			printDumpSummary(a.stdout, m, opt.Out)
			if desync != nil {
				fmt.Fprintf(a.stdout, "  %s\n", desync)
			}
			return nil
		},
	}
	tf.register(cmd)
	// Bulk statements run as long as they need; the context bounds them.
	_ = cmd.Flags().MarkHidden("query-timeout")
	f := cmd.Flags()
	f.StringVar(&opt.Out, "out", "", "output directory (created; must be new or empty)")
	f.IntVar(&opt.Threads, "threads", 4, "worker connections")
	f.Int64Var(&opt.ChunkRows, "chunk-rows", 100000, "target rows per chunk")
	f.StringVar(&opt.Compress, "compress", "zstd", "data file compression: zstd or none")
	f.StringSliceVar(&opt.Filter.Databases, "databases", nil, "only these databases (comma-separated)")
	f.StringArrayVar(&opt.Filter.Include, "include", nil, "only tables matching db.table pattern (* and ?; repeatable)")
	f.StringArrayVar(&opt.Filter.Exclude, "exclude", nil, "skip tables matching db.table pattern (repeatable)")
	f.StringArrayVar(&where, "where", nil, "dump only rows of db.table matching a condition, one SQL expression: 'db.table:condition' (repeatable)")
	f.BoolVar(&opt.NoData, "no-data", false, "schema only")
	f.BoolVar(&opt.Users, "users", false, "also dump accounts and grants (not the server's system accounts or root)")
	f.Var(durationFlag(&opt.LockWaitTimeout, 60*time.Second), "lock-wait-timeout", "give up when the consistency lock cannot be taken in this time")
	f.BoolVar(&opt.Desync, "desync", false, "Galera: desync the node (wsrep_desync) while the snapshots are taken, and report its catch-up")
	f.Var(durationFlag(&opt.DesyncWait, time.Minute), "desync-wait", "with --desync: after the dump, wait up to this long for the node to catch up (for the report)")
	f.BoolVar(&asJSON, "json", false, "print the manifest as JSON (with --desync, the report under \"desync\")")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}

// dumpJSON is dump's --json output: the manifest's fields, and the desync
// report under "desync" after a dump --desync.
type dumpJSON struct {
	*backup.Manifest
	Desync *backup.DesyncReport `json:"desync,omitempty"`
}

func printDumpSummary(w io.Writer, m *backup.Manifest, dir string) {
	el := m.Finished.Sub(m.Started)
	secs := el.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	fmt.Fprintf(w, "dumped %s (%s %s) into %s\n", m.Server.Address, m.Server.Flavor, m.Server.Version.Raw, dir)
	fmt.Fprintf(w, "  tables %d, chunks %d, rows %d, data %.1f MB, files %.1f MB (%s)\n",
		m.Totals.Tables, m.Totals.Chunks, m.Totals.Rows, float64(m.Totals.Bytes)/1e6, float64(m.Totals.Files)/1e6, m.Compression)
	fmt.Fprintf(w, "  took %s: %.1f MB/s, %.0f rows/s\n", el.Round(time.Millisecond), float64(m.Totals.Bytes)/1e6/secs, float64(m.Totals.Rows)/secs)
	fmt.Fprintf(w, "  lock %s held %s\n", m.Lock.Kind, m.Lock.Held.Round(time.Microsecond))
	fmt.Fprintf(w, "  GTID position %q", m.Position.GTID)
	if m.Position.BinlogFile != "" {
		fmt.Fprintf(w, ", binary log %s:%d", m.Position.BinlogFile, m.Position.BinlogPos)
	}
	fmt.Fprintln(w)
	for _, warn := range m.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}
