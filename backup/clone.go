package backup

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
)

// CloneOptions configures a clone.
type CloneOptions struct {
	// Dir keeps the dump there; "" dumps into a temporary directory that is
	// removed when the clone ends.
	Dir          string
	Threads      int
	ChunkRows    int64
	Filter       Filter
	DropExisting bool
	// Replicate attaches the target as a replica of the source at the
	// dump's GTID position, with the Repl account.
	Replicate bool
	Repl      mysql.Credentials
	// ReplTLS is the target's TLS to the source (MASTER_SSL options, paths
	// on the target's host); nil leaves them as they are.
	ReplTLS *mysql.TLSSettings
	// ReplicaWait bounds the wait for replication to run; default 30 s.
	ReplicaWait time.Duration
	// Replace makes the target a copy of the source and nothing else (a
	// server re-provisioned in place: 'dbpilot rejoin --reclone'): before
	// the restore its databases the dump does not hold are dropped
	// (CloneResult.Dropped) and its binary log is reset (RESET MASTER:
	// its own transactions, errant ones included, are discarded); the
	// restore replaces the tables it has (DropExisting). Not with a
	// Filter.
	Replace     bool
	Progress    io.Writer
	ProgressTTY bool
	Tool        string
}

// CloneResult sums up a clone.
type CloneResult struct {
	Dump        *Manifest      `json:"dump"`
	Restore     *RestoreResult `json:"restore"`
	Dir         string         `json:"dir,omitempty"` // kept dump
	Replicating bool           `json:"replicating"`
	Position    string         `json:"position"`
	// Errant lists transactions the target has that the source lacks
	// (always empty for a good clone).
	Errant string `json:"errant,omitempty"`
	// Dropped are the target's databases Replace dropped.
	Dropped []string `json:"dropped,omitempty"`
}

// Clone copies the source's databases to the target (dump, then restore
// with --no-binlog and, with Replicate, --set-gtid-position) and, with
// Replicate, attaches the target as a replica of the source at the dump's
// GTID position: the way the MariaDB GTID design provisions a new replica
// (restore, SET GLOBAL gtid_slave_pos, CHANGE MASTER ...
// MASTER_USE_GTID=slave_pos).
func Clone(ctx context.Context, from dbpilot.InstanceKey, fromOpts mysql.Options, to dbpilot.InstanceKey, toOpts mysql.Options, opt CloneOptions) (*CloneResult, error) {
	if from == to {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: clone: source and target are both %s", from)
	}
	if opt.Replicate && opt.Repl.User == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: clone --replicate needs a replication account (--repl-user, $DBPILOT_REPL_USER)")
	}
	if opt.ReplicaWait <= 0 {
		opt.ReplicaWait = 30 * time.Second
	}
	if opt.Replace {
		if f := opt.Filter; len(f.Databases) > 0 || len(f.Include) > 0 || len(f.Exclude) > 0 {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: clone: replacing the target (%s) copies every database: give no filter (%s)", to, f)
		}
		opt.DropExisting = true
	}
	dir := opt.Dir
	temp := dir == ""
	if temp {
		d, err := os.MkdirTemp("", "dbpilot-clone-")
		if err != nil {
			return nil, fmt.Errorf("backup: clone: create a temporary directory: %w", err)
		}
		dir = d
		defer os.RemoveAll(d)
	}
	res := &CloneResult{}
	if !temp {
		res.Dir = dir
	}
	// Check the target before spending time on the dump.
	if opt.Replicate {
		if err := checkCloneTarget(ctx, to, toOpts); err != nil {
			return nil, err
		}
	}
	m, err := Dump(ctx, from, fromOpts, DumpOptions{Out: dir, Threads: opt.Threads, ChunkRows: opt.ChunkRows, Filter: opt.Filter,
		Progress: opt.Progress, ProgressTTY: opt.ProgressTTY, Tool: opt.Tool})
	if err != nil {
		return nil, err
	}
	res.Dump = m
	if opt.Replace {
		var readOnlyBack func()
		res.Dropped, readOnlyBack, err = replaceTarget(ctx, to, toOpts, m)
		if readOnlyBack != nil {
			defer readOnlyBack()
		}
		if err != nil {
			return nil, err
		}
	}
	rr, err := Restore(ctx, to, toOpts, RestoreOptions{Dir: dir, Threads: opt.Threads, DropExisting: opt.DropExisting,
		SetGTIDPosition: opt.Replicate, NoBinlog: true, Progress: opt.Progress, ProgressTTY: opt.ProgressTTY})
	if err != nil {
		return nil, err
	}
	res.Restore = rr
	res.Position = m.Position.GTID
	if !opt.Replicate {
		return res, nil
	}
	ctl := mysql.NewController(toOpts, opt.Repl).WithReplicationTLS(opt.ReplTLS)
	defer ctl.Close()
	if err := ctl.ChangeSource(ctx, to, from, dbpilot.ChangeSourceOptions{}); err != nil {
		return nil, err
	}
	if err := ctl.StartReplica(ctx, to); err != nil {
		return nil, err
	}
	inst, err := waitReplicating(ctx, ctl, to, opt.ReplicaWait)
	if err != nil {
		return nil, err
	}
	res.Replicating = true
	in := mysql.NewInspector(fromOpts)
	defer in.Close()
	src, err := in.Inspect(ctx, from)
	if err != nil {
		return nil, err
	}
	if m.Server.Flavor == dbpilot.FlavorMariaDB {
		res.Errant, err = gtid.ErrantMariaDBStrings(inst.GTID.BinlogState, src.GTID.BinlogState)
	} else {
		res.Errant, err = gtid.ErrantMySQLStrings(inst.GTID.Executed, src.GTID.Executed)
	}
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "backup: clone: compare GTIDs of %s and %s", to, from)
	}
	if res.Errant != "" {
		return res, dbpilot.Errorf(dbpilot.ECONFLICT, "backup: clone: %s replicates but has transactions %s lacks: %s", to, from, res.Errant)
	}
	return res, nil
}

// replaceTarget drops the target's databases that the dump m does not
// hold (system ones excepted) and resets its binary log and GTID state
// (RESET MASTER), without writing its binary log. It returns the databases
// dropped and, on a MySQL server left super_read_only (a fenced old
// primary: read_only stays on, but the restore's SUPER sessions must
// write), the function that turns super_read_only back on.
func replaceTarget(ctx context.Context, key dbpilot.InstanceKey, opts mysql.Options, m *Manifest) (dropped []string, readOnlyBack func(), err error) {
	db, err := mysql.Open(ctx, key, opts)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	db.SQL().SetMaxOpenConns(1) // one session: sql_log_bin=0 holds for the drops
	d := mysql.Dialect{Flavor: m.Server.Flavor, Version: m.Server.Version}
	if r, err := db.Query(ctx, "SELECT @@version, @@version_comment"); err == nil && len(r.Values) == 1 {
		if v, err := dbpilot.ParseVersion(mysql.Str(r.Values[0], 0)); err == nil {
			d = mysql.Dialect{Flavor: mysql.DetectFlavor(mysql.Str(r.Values[0], 0), mysql.Str(r.Values[0], 1)), Version: v}
		}
	}
	if !d.MariaDB() {
		if v, ok, err := db.QueryValue(ctx, "SELECT @@GLOBAL.super_read_only"); err == nil && ok && v == "1" {
			if err := db.Exec(ctx, "SET GLOBAL super_read_only = OFF"); err != nil {
				return nil, nil, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "backup: clone: replace %s: super_read_only", key)
			}
			readOnlyBack = func() {
				bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer cancel()
				if b, err := mysql.Open(bctx, key, opts); err == nil {
					_ = b.Exec(bctx, "SET GLOBAL super_read_only = ON")
					b.Close()
				}
			}
		}
	}
	if err := db.Exec(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
		return nil, readOnlyBack, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "backup: clone: replace %s", key)
	}
	rows, err := db.Query(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return nil, readOnlyBack, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "backup: clone: replace %s: list databases", key)
	}
	keep := map[string]bool{}
	for _, d := range m.Databases {
		keep[d.Name] = true
	}
	for _, row := range rows.Values {
		name := mysql.Str(row, 0)
		if name == "" || keep[name] || systemDatabases[strings.ToLower(name)] {
			continue
		}
		if err := db.Exec(ctx, "DROP DATABASE "+QuoteIdent(name)); err != nil {
			return dropped, readOnlyBack, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "backup: clone: replace %s: drop database %s", key, name)
		}
		dropped = append(dropped, name)
	}
	if err := db.Exec(ctx, d.ResetBinaryLogSQL()); err != nil {
		return dropped, readOnlyBack, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "backup: clone: replace %s: reset its binary log", key)
	}
	return dropped, readOnlyBack, nil
}

// checkCloneTarget refuses a target that already replicates.
func checkCloneTarget(ctx context.Context, key dbpilot.InstanceKey, opts mysql.Options) error {
	in := mysql.NewInspector(opts)
	defer in.Close()
	inst, err := in.Inspect(ctx, key)
	if err != nil {
		return err
	}
	if len(inst.Channels) > 0 {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "backup: clone --replicate: %s already has replication configured (source %s); reset it first", key, inst.Channels[0].Source)
	}
	return nil
}

// waitReplicating waits until both replication threads of key run, and
// fails at once on a replication error.
func waitReplicating(ctx context.Context, ctl *mysql.Controller, key dbpilot.InstanceKey, wait time.Duration) (*dbpilot.Instance, error) {
	deadline := time.Now().Add(wait)
	for {
		inst, err := ctl.Inspect(ctx, key)
		if err != nil {
			return nil, err
		}
		if len(inst.Channels) > 0 {
			ch := inst.Channels[0]
			if ch.LastSQLErrno != 0 {
				return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "backup: clone: replication on %s stopped with error %d: %s", key, ch.LastSQLErrno, ch.LastSQLError)
			}
			if ch.IORunning == dbpilot.IORunning && ch.SQLRunning {
				return inst, nil
			}
			if time.Now().After(deadline) {
				msg := ch.LastIOError
				if msg == "" {
					msg = "IO thread " + string(ch.IORunning)
				}
				return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "backup: clone: replication on %s did not start within %s: %s", key, wait, msg)
			}
		} else if time.Now().After(deadline) {
			return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "backup: clone: %s shows no replication channel", key)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
