package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/pitr"
)

// Channel is the target's temporary replication connection.
const Channel = "dbpilot_replay"

// Options configures a replay.
type Options struct {
	Binlogs string // the binlog archive
	// Dump, when set, is restored into the target before each setting;
	// its GTID position must be the stretch's start. Without it the
	// target must be at the start already, and replay dumps it once
	// (into WorkDir) to restore before each further setting.
	Dump string
	// From is the stretch's start (default: the archive's start); Until
	// its end, included (default: the archive's last transaction of each
	// domain).
	From, Until gtid.MariaList
	Settings    []Setting
	// MaxQueued sets slave_parallel_max_queued (bytes; 0: left as it is).
	MaxQueued int64
	// Rate replays at Rate times the recorded pace (0: full speed).
	Rate float64
	// Force replays into a target that has a source or replicas.
	Force bool
	// Listen is where the binlog source listens (default 127.0.0.1:0).
	Listen string
	// WorkDir holds the snapshot of a target without Dump (default: a
	// temporary directory, removed at the end).
	WorkDir string
	// RestoreThreads is the restore's connections (default 4).
	RestoreThreads int
	// Repeat runs each setting this many times (default 1), the target
	// reset before each run; a setting's result is its median run.
	Repeat int
	// Poll is how often the target's position is read (default 20 ms);
	// worker states are sampled every 5 polls.
	Poll time.Duration
	// Progress receives a line per setting.
	Progress io.Writer
	Log      *slog.Logger
}

func (o *Options) validate() error {
	if o.Binlogs == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "replay: name the binlog archive (--binlogs DIR)")
	}
	if len(o.Settings) == 0 || o.Settings[0].Threads != 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "replay: the settings must start with the single-threaded run (use Settings)")
	}
	if o.Rate < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "replay: --rate %g: want a positive multiple of the recorded pace", o.Rate)
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.RestoreThreads <= 0 {
		o.RestoreThreads = 4
	}
	if o.Repeat < 0 || o.Repeat > 100 {
		return dbpilot.Errorf(dbpilot.EINVALID, "replay: --repeat %d: want 1..100 runs of each setting", o.Repeat)
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.Poll <= 0 {
		o.Poll = 20 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}

// runner is one replay.
type runner struct {
	opt   Options
	key   dbpilot.InstanceKey
	conn  mysql.Options
	db    *mysql.DB
	scan  *pitr.Scan
	plan  *pitr.Plan
	st    *Stretch
	res   *Result
	snap  string // the dump restored before each setting
	fresh bool   // the target is at the start (no reset before the first setting)
}

// Run replays the stretch into the target at key once per setting and
// compares the results. Every check is made before anything is applied
// (see Check).
func Run(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt Options) (*Result, error) {
	r, err := prepare(ctx, key, conn, opt)
	if err != nil {
		return nil, err
	}
	defer r.db.Close()
	if r.snap == "" {
		// Snapshot of the target at the start, to restore between settings.
		dir := r.opt.WorkDir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "dbpilot-replay-"); err != nil {
				return nil, fmt.Errorf("replay: create the snapshot directory: %w", err)
			}
			defer os.RemoveAll(dir)
		}
		dir = filepath.Join(dir, "snapshot")
		t0 := time.Now()
		runs := len(r.opt.Settings) * r.opt.Repeat
		if runs > 1 {
			if _, err := backup.Dump(ctx, key, r.dumpConn(), backup.DumpOptions{Out: dir, Threads: r.opt.RestoreThreads}); err != nil {
				return nil, fmt.Errorf("replay: snapshot %s at the start, to restore between settings: %w", key, err)
			}
		}
		r.snap = dir
		r.res.PrepareTime = time.Since(t0)
		r.res.Prepare = fmt.Sprintf("%s was at the start; dumped it once (%s) and restored that dump before each further setting", key, r.res.PrepareTime.Round(time.Millisecond))
		if runs == 1 {
			r.res.Prepare = fmt.Sprintf("%s was at the start (one run: nothing restored)", key)
		}
	} else {
		r.res.Prepare = fmt.Sprintf("restored the dump %s before each setting", r.snap)
	}
	// Each setting replays the same GTIDs again: a target that writes
	// what it applies to its own binary log (log_slave_updates) has them
	// there from the previous setting (or an earlier replay, when it is
	// restored from a dump), which gtid_strict_mode refuses. It is off
	// while replay runs, and set back at the end.
	strict, _, err := r.db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_strict_mode")
	if err != nil {
		return nil, fmt.Errorf("replay: read gtid_strict_mode of %s: %w", key, err)
	}
	if strict == "1" && (len(r.opt.Settings)*r.opt.Repeat > 1 || !r.fresh) {
		if err := r.db.Exec(ctx, "SET GLOBAL gtid_strict_mode = 0"); err != nil {
			return nil, fmt.Errorf("replay: turn gtid_strict_mode off on %s for the replays of the same GTIDs: %w", key, err)
		}
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("gtid_strict_mode was off on %s during the replay (each setting applies the same GTIDs again), and set back at the end", key))
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = r.db.Exec(cctx, "SET GLOBAL gtid_strict_mode = 1")
		}()
	}
	if r.res.Source, err = pitr.MeasureServe(ctx, r.scan, r.plan, r.plan.Start, pitr.SourceOptions{}); err != nil {
		return nil, fmt.Errorf("replay: measure the source's rate: %w", err)
	}
	for i, s := range r.opt.Settings {
		var runs []*SettingResult
		for k := 0; k < r.opt.Repeat; k++ {
			sr, err := r.runOnce(ctx, i == 0 && k == 0, s)
			if err != nil {
				return nil, err
			}
			runs = append(runs, sr)
			line := fmt.Sprintf("replay: %s: %d transactions in %s (%.0f tx/s)", s, sr.Transactions, sr.Elapsed.Round(time.Millisecond), sr.TxnsPerSec)
			if sr.Error != "" {
				line = fmt.Sprintf("replay: %s: failed: %s", s, sr.Error)
			}
			if r.opt.Repeat > 1 {
				line += fmt.Sprintf(" [run %d of %d]", k+1, r.opt.Repeat)
			}
			fmt.Fprintln(r.opt.Progress, line)
			if sr.Error != "" {
				break
			}
		}
		r.res.Settings = append(r.res.Settings, *medianRun(runs))
	}
	r.res.compare()
	return r.res, nil
}

// runOnce brings the target to the stretch's start (unless first, on a
// target prepared fresh) and replays the stretch with setting s.
func (r *runner) runOnce(ctx context.Context, first bool, s Setting) (*SettingResult, error) {
	var reset time.Duration
	if !first || !r.fresh {
		t0 := time.Now()
		if err := r.reset(ctx); err != nil {
			return nil, err
		}
		reset = time.Since(t0)
		if first && r.res.PrepareTime == 0 {
			r.res.PrepareTime = reset
			r.res.Prepare += fmt.Sprintf(" (%s)", reset.Round(time.Millisecond))
		}
	}
	sr, err := r.apply(ctx, s)
	if err != nil {
		return nil, err
	}
	sr.Reset = reset
	return sr, nil
}

// Check makes every check of Run without applying anything: the archive
// (gaps, corruption), the stretch, the dump's position, the target's
// position and its place in a replication tree.
func Check(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt Options) (*Result, error) {
	r, err := prepare(ctx, key, conn, opt)
	if err != nil {
		return nil, err
	}
	r.db.Close()
	return r.res, nil
}

func (r *runner) dumpConn() mysql.Options {
	c := r.conn
	c.MaxConns = 0
	return c
}

// CheckArchive makes the checks of Run that need no target: the archive
// (gaps, corruption), the stretch and the dump's position.
func CheckArchive(ctx context.Context, opt Options) error {
	_, err := prepareOffline(ctx, dbpilot.InstanceKey{}, mysql.Options{}, opt)
	return err
}

// prepare reads and checks the archive, the stretch, the dump and the
// target; nothing is changed.
func prepare(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt Options) (*runner, error) {
	r, err := prepareOffline(ctx, key, conn, opt)
	if err != nil {
		return nil, err
	}
	conn.MaxConns = 3
	if r.db, err = mysql.Open(ctx, key, conn); err != nil {
		return nil, err
	}
	if err := r.checkTarget(ctx, r.plan.Start); err != nil {
		r.db.Close()
		return nil, err
	}
	return r, nil
}

func prepareOffline(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt Options) (*runner, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	r := &runner{opt: opt, key: key, conn: conn}
	a, err := pitr.OpenArchive(opt.Binlogs)
	if err != nil {
		return nil, err
	}
	if r.scan, err = pitr.ScanArchive(ctx, a); err != nil {
		return nil, fmt.Errorf("replay: scan the archive: %w", err)
	}
	from, until := opt.From, opt.Until
	if from == nil {
		from = r.scan.Start()
	}
	if until == nil {
		until = r.scan.End()
	}
	if len(until) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: archive %s holds no complete transaction", opt.Binlogs)
	}
	if r.plan, err = pitr.NewPlan(r.scan, from, pitr.Target{GTIDs: until}, nil); err != nil {
		return nil, replayErr(err)
	}
	if r.plan.Txns == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: no transaction of %s between %s and %s; give --from-gtid/--until-gtid inside the archive", opt.Binlogs, from, r.plan.Until)
	}
	if r.st, err = readStretch(ctx, r.scan, r.plan); err != nil {
		return nil, err
	}
	r.res = &Result{Archive: opt.Binlogs, Target: key.String(), From: from.String(), Until: r.plan.Until.String(),
		Rate: opt.Rate, Stretch: r.st, RecordedSpanSec: r.st.Span(), Warnings: r.plan.Warnings}
	if opt.Dump != "" {
		m, err := backup.ReadManifest(opt.Dump)
		if err != nil {
			return nil, err
		}
		dp, err := gtid.ParseMariaList(m.Position.GTID)
		if err != nil || m.Position.GTID == "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: the dump %s recorded no MariaDB GTID position; take it with dbpilot dump from the server that wrote the archive", opt.Dump)
		}
		if d := mismatch(dp, from, r.plan.Until); d != "" {
			return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "replay: the dump %s is at %s, the stretch starts at %s (%s); give --from-gtid %s or a dump taken at the start", opt.Dump, dp, from, d, dp)
		}
		r.snap = opt.Dump
	}
	return r, nil
}

// replayErr renames pitr's refusals as replay's.
func replayErr(err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, "pitr: ") {
		return err
	}
	return dbpilot.WrapError(dbpilot.ErrorCode(err), err, "replay")
}

// mismatch names the domains of until in which position a is not at b.
func mismatch(a, b, until gtid.MariaList) string {
	var out []string
	for _, u := range until {
		x, _ := a.DomainSeq(u.Domain)
		y, _ := b.DomainSeq(u.Domain)
		if x.Seq != y.Seq {
			out = append(out, fmt.Sprintf("domain %d: %d, not %d", u.Domain, x.Seq, y.Seq))
		}
	}
	return strings.Join(out, "; ")
}

// checkTarget refuses a target that is not MariaDB, has the archive's
// server_id, belongs to a replication tree (unless Force), or, without a
// dump, is not at the stretch's start.
func (r *runner) checkTarget(ctx context.Context, from gtid.MariaList) error {
	row, err := r.db.Query(ctx, "SELECT @@version, @@server_id, @@GLOBAL.gtid_slave_pos, @@GLOBAL.gtid_current_pos")
	if err != nil || len(row.Values) != 1 {
		return fmt.Errorf("replay: read %s: %v", r.key, err)
	}
	v := row.Values[0]
	version, sid := mysql.Str(v, 0), mysql.Str(v, 1)
	if !strings.Contains(version, "MariaDB") {
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "replay: %s runs %s; replay needs a MariaDB target (multi-source replication, MariaDB GTIDs)", r.key, version)
	}
	for _, id := range r.scan.ServerIDs() {
		if strconv.FormatUint(uint64(id), 10) == sid {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "replay: %s has server_id %s, the server_id of the archive's transactions: as a replica it would skip them; give it another server_id", r.key, sid)
		}
	}
	if !r.opt.Force {
		hosts, err := r.db.Query(ctx, "SHOW SLAVE HOSTS")
		if err != nil {
			return fmt.Errorf("replay: read the replicas of %s: %w", r.key, err)
		}
		if n := len(hosts.Values); n > 0 {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "replay: %s has %d replica(s) (SHOW SLAVE HOSTS): replay would send them the stretch; use a server of its own, or --force", r.key, n)
		}
		st, err := r.db.Query(ctx, "SHOW ALL SLAVES STATUS")
		if err != nil {
			return fmt.Errorf("replay: read the replication of %s: %w", r.key, err)
		}
		for _, m := range st.Maps() {
			if !strings.EqualFold(m["Connection_name"], Channel) {
				name := m["Connection_name"]
				if name == "" {
					name = "(default)"
				}
				return dbpilot.Errorf(dbpilot.ECONFLICT, "replay: %s replicates from %s:%s (connection %s): it belongs to a replication tree; use a server of its own, or --force", r.key, m["Master_Host"], m["Master_Port"], name)
			}
		}
	}
	if r.snap != "" {
		return nil // restored from the dump before each setting
	}
	slave, _ := gtid.ParseMariaList(mysql.Str(v, 2))
	cur, _ := gtid.ParseMariaList(mysql.Str(v, 3))
	ds, dc := mismatch(slave, from, r.plan.Until), mismatch(cur, from, r.plan.Until)
	if ds != "" && dc != "" {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "replay: %s is at gtid_slave_pos %q, gtid_current_pos %q; the stretch starts at %s (%s): bring it there, or give --dump", r.key, mysql.Str(v, 2), mysql.Str(v, 3), from, ds)
	}
	r.fresh = true
	return nil
}

// userDatabases lists the target's databases but the system ones.
func (r *runner) userDatabases(ctx context.Context) ([]string, error) {
	rows, err := r.db.Query(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql','information_schema','performance_schema','sys')")
	if err != nil {
		return nil, fmt.Errorf("replay: list the databases of %s: %w", r.key, err)
	}
	var out []string
	for _, v := range rows.Values {
		out = append(out, mysql.Str(v, 0))
	}
	return out, nil
}

// reset brings the target back to the start: its databases dropped and
// the snapshot restored (outside its binary log), gtid_slave_pos set to
// the start.
func (r *runner) reset(ctx context.Context) error {
	dbs, err := r.userDatabases(ctx)
	if err != nil {
		return err
	}
	c, err := r.db.SQL().Conn(ctx)
	if err != nil {
		return fmt.Errorf("replay: connect to %s: %w", r.key, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
		return fmt.Errorf("replay: reset %s: %w", r.key, err)
	}
	for _, d := range dbs {
		if _, err := c.ExecContext(ctx, "DROP DATABASE `"+strings.ReplaceAll(d, "`", "``")+"`"); err != nil {
			return fmt.Errorf("replay: reset %s: drop database %s: %w", r.key, d, err)
		}
	}
	// The restore records its progress in the dump's directory; a record
	// of an earlier restore (another target's) is put back afterwards.
	progress := filepath.Join(r.snap, backup.ProgressFile)
	old, oldErr := os.ReadFile(progress)
	_, err = backup.Restore(ctx, r.key, r.dumpConn(), backup.RestoreOptions{Dir: r.snap, Threads: r.opt.RestoreThreads, NoBinlog: true, DeferIndexes: true})
	if oldErr == nil {
		_ = os.WriteFile(progress, old, 0o600)
	} else {
		os.Remove(progress)
	}
	if err != nil {
		return fmt.Errorf("replay: restore %s into %s: %w", r.snap, r.key, err)
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("SET GLOBAL gtid_slave_pos = '%s'", r.plan.Start)); err != nil {
		return fmt.Errorf("replay: set gtid_slave_pos of %s to the start %s: %w", r.key, r.plan.Start, err)
	}
	return nil
}

func (r *runner) channel(ctx context.Context) (map[string]string, error) {
	st, err := r.db.Query(ctx, "SHOW ALL SLAVES STATUS")
	if err != nil {
		return nil, fmt.Errorf("replay: read replication status of %s: %w", r.key, err)
	}
	for _, m := range st.Maps() {
		if strings.EqualFold(m["Connection_name"], Channel) {
			return m, nil
		}
	}
	return nil, nil
}

func (r *runner) dropChannel(ctx context.Context) error {
	row, err := r.channel(ctx)
	if err != nil || row == nil {
		return err
	}
	if err := r.db.Exec(ctx, "STOP SLAVE '"+Channel+"'", "RESET SLAVE '"+Channel+"' ALL"); err != nil {
		return fmt.Errorf("replay: remove the replication connection %s from %s: %w", Channel, r.key, err)
	}
	return nil
}

func (r *runner) status(ctx context.Context, names ...string) (map[string]int64, error) {
	rows, err := r.db.Query(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(names, "','")+"')")
	if err != nil {
		return nil, fmt.Errorf("replay: read the status of %s: %w", r.key, err)
	}
	out := map[string]int64{}
	for _, v := range rows.Values {
		n, _ := strconv.ParseInt(mysql.Str(v, 1), 10, 64)
		out[strings.ToLower(mysql.Str(v, 0))] = n
	}
	return out, nil
}

// applied counts the stretch's transactions the position pos has passed.
func (r *runner) applied(pos gtid.MariaList) int {
	n := 0
	for _, u := range r.plan.Until {
		f, _ := r.plan.Start.DomainSeq(u.Domain)
		c, _ := pos.DomainSeq(u.Domain)
		if s := min(c.Seq, u.Seq); s > f.Seq {
			n += int(s - f.Seq)
		}
	}
	return n
}

func (r *runner) position(ctx context.Context) (gtid.MariaList, error) {
	v, _, err := r.db.QueryValue(ctx, "SELECT @@GLOBAL.gtid_slave_pos")
	if err != nil {
		return nil, fmt.Errorf("replay: read gtid_slave_pos of %s: %w", r.key, err)
	}
	return gtid.ParseMariaList(v)
}

// apply replays the stretch with one setting. A failure of the target's
// applier is the setting's result (Error); a failure to drive the target
// is returned.
func (r *runner) apply(ctx context.Context, s Setting) (res *SettingResult, err error) {
	res = &SettingResult{Setting: s, Workers: map[string]int{}}
	if err := r.dropChannel(ctx); err != nil {
		return nil, err
	}
	src, err := pitr.StartSourceWith(ctx, r.opt.Listen, r.scan, r.plan, r.opt.Log, pitr.SourceOptions{Pace: r.opt.Rate})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	host := src.Addr().IP.String()
	if src.Addr().IP.IsUnspecified() {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: --listen %s: give the address the target reaches dbpilot at, not a wildcard", r.opt.Listen)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if cerr := r.dropChannel(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := r.pointAt(ctx, host, src.Addr().Port, src.Password(), s); err != nil {
		return nil, err
	}
	counters := []string{"Slave_retried_transactions", "Innodb_deadlocks"}
	before, err := r.status(ctx, counters...)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := r.db.Exec(ctx, fmt.Sprintf("START SLAVE '%s' UNTIL master_gtid_pos = '%s'", Channel, r.plan.Until)); err != nil {
		return nil, fmt.Errorf("replay: start replication of %s from the archive: %w", r.key, err)
	}
	t := time.NewTicker(r.opt.Poll)
	defer t.Stop()
	var ioSince time.Time
	for polls := 0; ; polls++ {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("replay: %s interrupted: %w", s, ctx.Err())
		case <-t.C:
		}
		pos, err := r.position(ctx)
		if err != nil {
			return nil, err
		}
		at := time.Since(t0)
		n := r.applied(pos)
		res.Samples = append(res.Samples, Sample{At: at, Txns: n})
		r.lag(res, at, n)
		if n >= r.plan.Txns {
			res.Elapsed = at
			break
		}
		if polls%5 == 0 {
			if err := r.sampleWorkers(ctx, res); err != nil {
				return nil, err
			}
			row, err := r.channel(ctx)
			if err != nil {
				return nil, err
			}
			if row == nil {
				return nil, fmt.Errorf("replay: the replication connection %s disappeared from %s", Channel, r.key)
			}
			running, sqlErr, ioErr, _ := applierState(row)
			if !running {
				if pos, err := r.position(ctx); err == nil && r.applied(pos) >= r.plan.Txns {
					res.Elapsed = time.Since(t0)
					break
				}
				if sqlErr == "" {
					sqlErr = "replication stopped before the end of the stretch"
				}
				res.Error = fmt.Sprintf("at %s: %s", pos, sqlErr)
				res.Elapsed = time.Since(t0)
				break
			}
			if ioErr != "" && row["Slave_IO_Running"] != "Yes" {
				if ioSince.IsZero() {
					ioSince = time.Now()
				} else if time.Since(ioSince) > 30*time.Second {
					if serr := src.Err(); serr != nil {
						ioErr += "; source: " + serr.Error()
					}
					return nil, fmt.Errorf("replay: %s cannot read from the dbpilot source: %s", r.key, ioErr)
				}
			} else {
				ioSince = time.Time{}
			}
		}
	}
	after, err := r.status(ctx, counters...)
	if err != nil {
		return nil, err
	}
	res.Retries = after["slave_retried_transactions"] - before["slave_retried_transactions"]
	res.Deadlocks = after["innodb_deadlocks"] - before["innodb_deadlocks"]
	res.Transactions = r.applied(mustPos(r.position(ctx)))
	res.Samples = thin(res.Samples, 300)
	secs := max(res.Elapsed.Seconds(), 1e-9)
	if res.Error == "" {
		res.TxnsPerSec = float64(res.Transactions) / secs
		res.EventsPerSec = float64(r.st.Events) / secs
		res.RowEventsPerSec = float64(r.st.RowEvents) / secs
		res.RowsPerSec = float64(r.st.Rows) / secs
	}
	if res.Checksums, err = r.checksums(ctx); err != nil {
		return nil, err
	}
	return res, nil
}

// pointAt points the target's replay connection at the dbpilot source on
// host:port and sets the parallel setting s on it.
func (r *runner) pointAt(ctx context.Context, host string, port int, password string, s Setting) error {
	change := fmt.Sprintf("CHANGE MASTER '%s' TO MASTER_HOST='%s', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=1",
		Channel, host, port, pitr.SourceUser, password)
	if err := r.db.Exec(ctx, change); err != nil {
		// The error names the statement by its first words, never the password.
		return fmt.Errorf("replay: point %s of %s at the dbpilot source on %s:%d: %w", Channel, r.key, host, port, err)
	}
	stmts, err := settingSQL(dbpilot.FlavorMariaDB, Channel, s, r.opt.MaxQueued)
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if err := r.db.Exec(ctx, q); err != nil {
			return fmt.Errorf("replay: set %s on %s (%s; its other replication connections must be stopped): %w", s, r.key, q, err)
		}
	}
	return nil
}

func mustPos(l gtid.MariaList, err error) gtid.MariaList {
	if err != nil {
		return nil
	}
	return l
}

// lag notes, with --rate, how far behind the recorded pace the target is:
// at wall time at it has applied n transactions; the (n+1)th was due at
// its recorded offset from the first divided by the rate.
func (r *runner) lag(res *SettingResult, at time.Duration, n int) {
	if r.opt.Rate <= 0 || n >= len(r.st.Times) {
		return
	}
	due := float64(r.st.Times[n]-r.st.Times[0]) / r.opt.Rate
	if l := at.Seconds() - due; l > res.MaxLagSec {
		res.MaxLagSec = l
		res.BehindAtSec = float64(r.st.Times[n] - r.st.Times[0])
	}
}

// sampleWorkers counts the parallel workers by state.
func (r *runner) sampleWorkers(ctx context.Context, res *SettingResult) error {
	if res.Threads == 0 {
		return nil
	}
	rows, err := r.db.Query(ctx, "SELECT STATE, COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Slave_worker' GROUP BY STATE")
	if err != nil {
		return fmt.Errorf("replay: sample the workers of %s: %w", r.key, err)
	}
	res.WorkerSamples++
	for _, v := range rows.Values {
		n, _ := strconv.Atoi(mysql.Str(v, 1))
		res.Workers[mysql.Str(v, 0)] += n
	}
	return nil
}

// checksums runs CHECKSUM TABLE on the tables the stretch touched (every
// table of the target's databases when it has statements).
func (r *runner) checksums(ctx context.Context) (map[string]string, error) {
	tables := slices.Clone(r.st.Tables)
	if r.st.Statements || len(tables) == 0 {
		rows, err := r.db.Query(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql','information_schema','performance_schema','sys')")
		if err != nil {
			return nil, fmt.Errorf("replay: list the tables of %s: %w", r.key, err)
		}
		for _, v := range rows.Values {
			t := fmt.Sprintf("`%s`.`%s`", mysql.Str(v, 0), mysql.Str(v, 1))
			if !slices.Contains(tables, t) {
				tables = append(tables, t)
			}
		}
		slices.Sort(tables)
	}
	out := map[string]string{}
	for _, t := range tables {
		rows, err := r.db.Query(ctx, "CHECKSUM TABLE "+t+" EXTENDED")
		if err != nil {
			return nil, fmt.Errorf("replay: checksum %s on %s: %w", t, r.key, err)
		}
		sum := "missing"
		if len(rows.Values) == 1 && rows.Values[0][1] != nil {
			sum = *rows.Values[0][1]
		}
		out[strings.ReplaceAll(t, "`", "")] = sum
	}
	return out, nil
}
