package pitr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
)

// Channel is the target's temporary replication connection (MariaDB
// multi-source), so that a replication setup of its own is not touched.
const Channel = "dbpilot_pitr"

// Options configures a point-in-time restore.
type Options struct {
	Dump    string // the dbpilot dump directory
	Binlogs string // the binlog archive directory
	Target  Target
	Exclude []gtid.MariaGTID
	// Listen is where the binlog source listens; the target connects to
	// its host. Default 127.0.0.1:0 (a target on the same machine).
	Listen string
	// Restore configures the dump's restore (Dir, SetGTIDPosition and
	// Resume are set by Restore).
	Restore          backup.RestoreOptions
	Progress         io.Writer
	ProgressTTY      bool
	ProgressInterval time.Duration
	// PollInterval is how often the target's position is read; default 200 ms.
	PollInterval time.Duration
	Log          *slog.Logger
	// OnApply is called at every poll while events are applied with the
	// target's position (tests).
	OnApply func(pos gtid.MariaList)
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	if o.Dump == "" || o.Binlogs == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "pitr: name the dump directory and the binlog archive (--binlogs DIR)")
	}
	if o.Target.Time.IsZero() == (len(o.Target.GTIDs) == 0) {
		return dbpilot.Errorf(dbpilot.EINVALID, "pitr: give exactly one of --until-gtid and --until-time")
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 200 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Result sums up a point-in-time restore.
type Result struct {
	Target string `json:"target"`
	// Restore is the dump's restore of this run (nil when an earlier run
	// restored it).
	Restore *backup.RestoreResult `json:"restore,omitempty"`
	// DumpPosition is the dump's GTID position; From is the target's when
	// the apply started (later than the dump's when resumed).
	DumpPosition string        `json:"dump_position"`
	From         string        `json:"from"`
	Until        string        `json:"until"`
	Position     string        `json:"position"` // the target's gtid_slave_pos at the end
	Transactions int           `json:"transactions"`
	Events       int64         `json:"events"`
	Excluded     []string      `json:"excluded,omitempty"`
	Elapsed      time.Duration `json:"apply_elapsed_ns"`
	Warnings     []string      `json:"warnings,omitempty"`
}

// Restore restores the dump into the server at key, then applies the
// archived transactions from the dump's GTID position up to the target.
//
// The events are applied by the target itself, as a replica: dbpilot
// serves the archive over the replication protocol on Listen and the
// target replicates from it through the temporary connection Channel,
// with MASTER_USE_GTID=slave_pos and START SLAVE UNTIL master_gtid_pos.
// Re-running the same command continues: a restored dump (recorded as
// complete in its restore.progress for this target) is not restored again,
// and the target's gtid_slave_pos says which transactions are applied.
func Restore(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	m, err := backup.ReadManifest(opt.Dump)
	if err != nil {
		return nil, err
	}
	if m.Server.Flavor != dbpilot.FlavorMariaDB {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "pitr: the dump is of %s; point-in-time restore needs MariaDB GTIDs", m.Server.Flavor)
	}
	start, err := gtid.ParseMariaList(m.Position.GTID)
	if err != nil || m.Position.GTID == "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: the dump %s recorded no GTID position; it cannot start a point-in-time restore", opt.Dump)
	}
	a, err := OpenArchive(opt.Binlogs)
	if err != nil {
		return nil, err
	}
	scan, err := ScanArchive(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("pitr: scan the archive: %w", err)
	}
	plan, err := NewPlan(scan, start, opt.Target, opt.Exclude)
	if err != nil {
		return nil, err
	}
	res := &Result{Target: key.String(), DumpPosition: start.String(), Until: plan.Until.String(), Warnings: plan.Warnings}
	for _, g := range plan.Exclude {
		res.Excluded = append(res.Excluded, g.String())
	}

	conn.MaxConns = 2
	db, err := mysql.Open(ctx, key, conn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := checkTarget(ctx, db, key, scan); err != nil {
		return nil, err
	}
	if err := dropChannel(ctx, db); err != nil {
		return nil, err
	}
	if res.Restore, err = restoreDump(ctx, db, key, conn, opt, start); err != nil {
		return nil, err
	}
	if res.Restore != nil {
		res.Warnings = append(res.Warnings, res.Restore.Warnings...)
	}
	cur, err := slavePos(ctx, db)
	if err != nil {
		return nil, err
	}
	res.From = cur.String()
	res.Position = cur.String()
	untilSeq := map[uint32]uint64{}
	for _, g := range plan.Until {
		untilSeq[g.Domain] = g.Seq
		if c, ok := cur.DomainSeq(g.Domain); ok && c.Seq > g.Seq {
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "pitr: %s is already past the target in domain %d (gtid_slave_pos %s, target %s); restore into a fresh server", key, g.Domain, cur, plan.Until)
		}
	}
	for _, t := range scan.Txns {
		if wants(t.GTID, cur, untilSeq) {
			res.Transactions++
			res.Events += int64(t.Events)
		}
	}
	if reached(cur, plan.Until) {
		res.Position = cur.String()
		return res, nil
	}
	start2 := time.Now()
	if err := apply(ctx, db, opt, scan, plan, cur, res); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start2)
	return res, nil
}

// checkTarget refuses a target that is not MariaDB or would ignore the
// archive's events as its own (same server_id).
func checkTarget(ctx context.Context, db *mysql.DB, key dbpilot.InstanceKey, scan *Scan) error {
	r, err := db.Query(ctx, "SELECT @@version, @@server_id")
	if err != nil {
		return fmt.Errorf("pitr: read %s: %w", key, err)
	}
	if len(r.Values) != 1 {
		return fmt.Errorf("pitr: read %s: no row", key)
	}
	version, sid := mysql.Str(r.Values[0], 0), mysql.Str(r.Values[0], 1)
	if !strings.Contains(version, "MariaDB") {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "pitr: %s runs %s; point-in-time restore needs MariaDB (multi-source replication, MariaDB GTIDs)", key, version)
	}
	for _, id := range scan.ServerIDs() {
		if fmt.Sprint(id) == sid {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "pitr: %s has server_id %s, the server_id of the archive's transactions: as a replica it would skip them as its own; give it another server_id", key, sid)
		}
	}
	for _, f := range scan.Files {
		if f.ServerID != 0 && fmt.Sprint(f.ServerID) == sid {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "pitr: %s has server_id %s, the server_id of the server that wrote the archive's %s: as a replica it would skip its events as its own; give it another server_id", key, sid, f.File)
		}
	}
	return nil
}

// channelExists reports whether the target has the temporary connection.
func channelExists(ctx context.Context, db *mysql.DB) (map[string]string, error) {
	r, err := db.Query(ctx, "SHOW ALL SLAVES STATUS")
	if err != nil {
		return nil, fmt.Errorf("pitr: read replication status: %w", err)
	}
	for _, row := range r.Maps() {
		if strings.EqualFold(row["Connection_name"], Channel) {
			return row, nil
		}
	}
	return nil, nil
}

// dropChannel removes the temporary connection (left by a killed run).
func dropChannel(ctx context.Context, db *mysql.DB) error {
	row, err := channelExists(ctx, db)
	if err != nil || row == nil {
		return err
	}
	if err := db.Exec(ctx, "STOP SLAVE '"+Channel+"'", "RESET SLAVE '"+Channel+"' ALL"); err != nil {
		return fmt.Errorf("pitr: remove the replication connection %s: %w", Channel, err)
	}
	return nil
}

// restoreDump restores the dump unless this target has it already: a
// complete restore recorded in the dump's restore.progress. An interrupted
// one is resumed.
func restoreDump(ctx context.Context, db *mysql.DB, key dbpilot.InstanceKey, conn mysql.Options, opt Options, start gtid.MariaList) (*backup.RestoreResult, error) {
	ro := opt.Restore
	ro.Dir = opt.Dump
	ro.SetGTIDPosition = true
	ro.Progress, ro.ProgressTTY, ro.ProgressInterval = opt.Progress, opt.ProgressTTY, opt.ProgressInterval
	mine, complete, err := restoreState(opt.Dump, key)
	if err != nil {
		return nil, err
	}
	if complete {
		// Restored by an earlier run; its last step sets the position.
		cur, err := slavePos(ctx, db)
		if err != nil {
			return nil, err
		}
		if !covers(cur, start) {
			if err := db.Exec(ctx, fmt.Sprintf("SET GLOBAL gtid_slave_pos = '%s'", start)); err != nil {
				return nil, fmt.Errorf("pitr: set gtid_slave_pos: %w", err)
			}
		}
		return nil, nil
	}
	ro.Resume = mine
	ro.DropExisting = false
	cconn := conn
	cconn.MaxConns = 0
	return backup.Restore(ctx, key, cconn, ro)
}

// restoreState reads the dump's restore.progress: whether it records a
// restore into key, and whether that one finished.
func restoreState(dir string, key dbpilot.InstanceKey) (mine, complete bool, err error) {
	f, err := os.Open(filepath.Join(dir, backup.ProgressFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read restore progress")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		l := sc.Text()
		if first {
			if l != "target "+key.String() {
				return false, false, nil
			}
			mine, first = true, false
			continue
		}
		if l == "objects" {
			complete = true
		}
	}
	return mine, complete, sc.Err()
}

func slavePos(ctx context.Context, db *mysql.DB) (gtid.MariaList, error) {
	v, _, err := db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_slave_pos")
	if err != nil {
		return nil, fmt.Errorf("pitr: read gtid_slave_pos: %w", err)
	}
	l, err := gtid.ParseMariaList(v)
	if err != nil {
		return nil, fmt.Errorf("pitr: gtid_slave_pos %q: %w", v, err)
	}
	return l, nil
}

// covers reports whether position a is at or past b in every domain of b.
func covers(a, b gtid.MariaList) bool {
	for _, g := range b {
		if h, _ := b.DomainSeq(g.Domain); h != g {
			continue
		}
		c, ok := a.DomainSeq(g.Domain)
		if !ok || c.Seq < g.Seq {
			return false
		}
	}
	return true
}

// reached reports whether the target's position has every domain of until.
func reached(cur, until gtid.MariaList) bool { return covers(cur, until) }

// apply serves the archive to the target and waits until it has applied
// everything up to the plan's until position; the temporary connection is
// removed in every case.
func apply(ctx context.Context, db *mysql.DB, opt Options, scan *Scan, plan *Plan, cur gtid.MariaList, res *Result) (err error) {
	src, err := StartSource(ctx, opt.Listen, scan, plan, opt.Log)
	if err != nil {
		return err
	}
	defer src.Close()
	host := src.Addr().IP.String()
	if src.Addr().IP.IsUnspecified() {
		return dbpilot.Errorf(dbpilot.EINVALID, "pitr: --listen %s: give the address the target reaches dbpilot at, not a wildcard", opt.Listen)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if cerr := dropChannel(cctx, db); cerr != nil && err == nil {
			err = cerr
		}
	}()
	change := fmt.Sprintf("CHANGE MASTER '%s' TO MASTER_HOST='%s', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1",
		Channel, host, src.Addr().Port, SourceUser, src.Password())
	if err := db.Exec(ctx, change); err != nil {
		// The error names the statement by its first words only, never
		// the one-time password.
		return fmt.Errorf("pitr: point %s at the dbpilot source on %s:%d: %w", Channel, host, src.Addr().Port, err)
	}
	// Conservative parallel replication on this connection: transactions
	// that group-committed together on the primary apply in parallel, no
	// speculation. Optimistic mode (the server's default) once stopped the
	// applier with a row not found under heavy load on 2 cores; PITR's
	// result must not depend on a retry.
	if err := db.Exec(ctx, fmt.Sprintf("SET GLOBAL `%s`.slave_parallel_mode = 'conservative'", Channel)); err != nil {
		return fmt.Errorf("pitr: set conservative parallel replication on %s: %w", Channel, err)
	}
	startSQL := fmt.Sprintf("START SLAVE '%s' UNTIL master_gtid_pos = '%s'", Channel, plan.Until)
	if err := db.Exec(ctx, startSQL); err != nil {
		return fmt.Errorf("pitr: start replication from the archive: %w", err)
	}
	prog := newApplyProgress(opt, cur, plan.Until)
	defer prog.finish()
	t := time.NewTicker(opt.PollInterval)
	defer t.Stop()
	var ioSince time.Time
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("pitr: interrupted at %s (run the same command again to continue): %w", res.Position, ctx.Err())
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		pos, err := slavePos(ctx, db)
		if err != nil {
			return err
		}
		res.Position = pos.String()
		prog.update(pos, src.SentEvents.Load())
		if opt.OnApply != nil {
			opt.OnApply(pos)
		}
		if reached(pos, plan.Until) {
			return nil
		}
		row, err := channelExists(ctx, db)
		if err != nil {
			return err
		}
		if row == nil {
			return fmt.Errorf("pitr: the replication connection %s disappeared from %s", Channel, res.Target)
		}
		if row["Slave_SQL_Running"] != "Yes" {
			// The position may have moved since it was read.
			if pos, err := slavePos(ctx, db); err == nil && reached(pos, plan.Until) {
				res.Position = pos.String()
				return nil
			}
			if e := row["Last_SQL_Error"]; e != "" {
				return fmt.Errorf("pitr: applying the archive on %s failed at %s: %s", res.Target, pos, e)
			}
			return fmt.Errorf("pitr: replication on %s stopped at %s before the target %s", res.Target, pos, plan.Until)
		}
		if e := row["Last_IO_Error"]; e != "" && row["Slave_IO_Running"] != "Yes" {
			if ioSince.IsZero() {
				ioSince = time.Now()
			} else if time.Since(ioSince) > 30*time.Second {
				if serr := src.Err(); serr != nil {
					e += "; source: " + serr.Error()
				}
				return fmt.Errorf("pitr: %s cannot read from the dbpilot source: %s", res.Target, e)
			}
		} else {
			ioSince = time.Time{}
		}
	}
}
