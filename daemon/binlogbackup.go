package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/binlog"
)

// BackupConfig configures serve's backups.
type BackupConfig struct {
	// Binlog streams a cluster's binary logs into an archive continuously
	// (nil: none).
	Binlog *BinlogBackupConfig `yaml:"binlog"`
}

// BinlogBackupConfig is backup.binlog: the binary logs of one cluster's
// current primary, streamed into Dir (the binlog package's archive), and
// after a failover from the new primary, resuming at the last archived
// transaction.
type BinlogBackupConfig struct {
	// Cluster is the configured cluster whose primary is streamed
	// (required).
	Cluster string `yaml:"cluster"`
	// Dir is the archive directory (required).
	Dir string `yaml:"dir"`
	// Retention removes finished archive files whose last transaction is
	// older (default 7 days; the newest file is always kept).
	Retention Duration `yaml:"retention"`
	// SemiSync acknowledges like a semi-sync replica, so that a
	// transaction acknowledged to a client is in the archive (the primary
	// needs rpl_semi_sync_master_enabled).
	SemiSync bool `yaml:"semi_sync"`
	// From is where a new archive starts (after this GTID position); ""
	// is the oldest binary log the primary has.
	From string `yaml:"from"`
}

// DefaultBinlogRetention is backup.binlog.retention's default.
const DefaultBinlogRetention = 7 * 24 * time.Hour

// validateBackup checks backup: and fills its defaults.
func (c *Config) validateBackup(clusters map[string]bool) error {
	b := c.Backup.Binlog
	if b == nil {
		return nil
	}
	if b.Cluster == "" {
		return errors.New("backup.binlog.cluster: required (the cluster whose primary is streamed)")
	}
	if !clusters[b.Cluster] {
		return fmt.Errorf("backup.binlog.cluster: %q is not a configured cluster", b.Cluster)
	}
	if b.Dir == "" {
		return errors.New("backup.binlog.dir: required (the archive directory)")
	}
	b.Dir = expandHome(b.Dir)
	if b.Retention == 0 {
		b.Retention = Duration(DefaultBinlogRetention)
	}
	if b.Retention.D() < time.Hour {
		return fmt.Errorf("backup.binlog.retention: %s is below 1h", b.Retention.D())
	}
	return nil
}

// Binlog backup series (collector "binlog_backup", instance: the
// cluster's first seed, label dir).
const (
	MetricBinlogBackupUp       = "dbpilot_binlog_backup_up"
	MetricBinlogBackupLag      = "dbpilot_binlog_backup_lag_seconds"
	MetricBinlogBackupGap      = "dbpilot_binlog_backup_gap"
	MetricBinlogBackupBytes    = "dbpilot_binlog_backup_bytes_total"
	MetricBinlogBackupTxns     = "dbpilot_binlog_backup_transactions_total"
	MetricBinlogBackupLastTxn  = "dbpilot_binlog_backup_last_transaction_timestamp_seconds"
	MetricBinlogBackupSetAside = "dbpilot_binlog_backup_set_aside_transactions_total"
	binlogBackupCollector      = "binlog_backup"
)

// binlogBackup streams a cluster's primary into the archive, following
// failovers: each Run streams from the primary serve knows; when it ends
// (the primary died, a switchover), the next Run starts from the cluster's
// new primary after the archive's last complete transaction, so the
// archive has no gap and no duplicate. A position the new primary cannot
// serve (purged, or transactions it never had) is a gap: the series
// dbpilot_binlog_backup_gap goes to 1 (alert BinlogBackupGap) and the
// audit log says so; streaming is retried, never silently restarted
// elsewhere.
type binlogBackup struct {
	d   *Daemon
	cfg BinlogBackupConfig
	cs  *clusterState

	mu     sync.Mutex
	up     bool
	gap    string // the gap's description; "" when none
	source dbpilot.InstanceKey
	prog   binlog.Progress
	bytes  int64 // before the current Run
	txns   int64
	// setAsideTxns counts the transactions set aside after failovers.
	setAsideTxns int64
	lastErr      string
}

// binlogBackupRetry bounds the wait between attempts.
var binlogBackupRetry = [2]time.Duration{500 * time.Millisecond, 30 * time.Second}

// run streams until ctx ends.
func (b *binlogBackup) run(ctx context.Context) {
	wait := binlogBackupRetry[0]
	metricsTick := time.NewTicker(time.Second)
	defer metricsTick.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-metricsTick.C:
				b.writeMetrics()
			}
		}
	}()
	pruneTick := time.Now()
	for ctx.Err() == nil {
		if time.Since(pruneTick) > time.Hour {
			b.prune()
			pruneTick = time.Now()
		}
		changed, _ := b.d.ClusterChanged(ctx, b.cfg.Cluster)
		primary, why := b.primary()
		if why != "" {
			b.setDown(why)
			b.sleep(ctx, changed, binlogBackupRetry[1])
			continue
		}
		err := b.stream(ctx, primary)
		if ctx.Err() != nil {
			return
		}
		b.noteEnd(ctx, primary, err)
		// The primary may have changed: try at once when it has, else back
		// off.
		if b.sleep(ctx, changed, wait) {
			wait = binlogBackupRetry[0]
		} else {
			wait = min(2*wait, binlogBackupRetry[1])
		}
	}
}

// sleep waits for d, the cluster's next change or ctx; it reports whether
// the cluster changed.
func (b *binlogBackup) sleep(ctx context.Context, changed <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-changed:
		return true
	case <-t.C:
	}
	return false
}

// primary returns the primary to stream from, or why there is none now:
// the cluster is not ok (a dead primary, a recovery running), or this
// serve does not lead it.
func (b *binlogBackup) primary() (dbpilot.InstanceKey, string) {
	st, err := b.d.ClusterStatus(context.Background(), b.cfg.Cluster)
	if err != nil {
		return dbpilot.InstanceKey{}, err.Error()
	}
	if st.State != dbpilot.ClusterOK || st.Primary.Host == "" {
		return dbpilot.InstanceKey{}, fmt.Sprintf("cluster %s is %s: waiting for a primary", b.cfg.Cluster, st.State)
	}
	if b.d.coord != nil {
		if _, err := b.d.coord.Lead(b.cfg.Cluster); err != nil {
			return dbpilot.InstanceKey{}, "not this serve's cluster to stream (another serve leads it)"
		}
	}
	return st.Primary, ""
}

// stream runs one Streamer on primary, after setting aside the archive's
// last transactions that primary does not have (see setAside).
func (b *binlogBackup) stream(ctx context.Context, primary dbpilot.InstanceKey) error {
	conn := adminOptions(b.d.cfg)
	conn.ConnectTimeout = max(conn.ConnectTimeout, 2*time.Second)
	if err := b.setAside(ctx, primary, func(ctx context.Context) (string, bool, error) {
		return gtidBinlogState(ctx, primary, conn)
	}); err != nil {
		return err
	}
	st, err := binlog.New(binlog.Options{Key: primary, Conn: conn, Dir: b.cfg.Dir, From: b.cfg.From, SemiSync: b.cfg.SemiSync,
		Logger: b.d.log.With("component", "binlog_backup", "cluster", b.cfg.Cluster),
		OnProgress: func(p binlog.Progress) {
			b.mu.Lock()
			if !b.up && (p.Transactions > 0 || p.CaughtUp) {
				b.up, b.gap, b.lastErr = true, "", ""
			}
			b.prog = p
			b.mu.Unlock()
		}})
	if err != nil {
		return err
	}
	b.mu.Lock()
	first := b.source != primary
	b.source, b.prog = primary, binlog.Progress{}
	b.mu.Unlock()
	if first {
		b.d.audit(ctx, dbpilot.AuditEvent{Cluster: b.cfg.Cluster, Instance: primary, Event: dbpilot.AuditBinlogBackup,
			Message: fmt.Sprintf("binlog backup streams from %s into %s", primary, b.cfg.Dir),
			Detail:  map[string]string{"dir": b.cfg.Dir, "state": "streaming"}})
	}
	err = st.Run(ctx)
	p := st.Progress()
	b.mu.Lock()
	b.bytes += p.Bytes
	b.txns += p.Transactions
	b.prog = binlog.Progress{LastEventTime: p.LastEventTime, Position: p.Position}
	b.mu.Unlock()
	return err
}

// setAside compares the archive's end with primary's gtid_binlog_state
// (MariaDB): after a failover the archive may hold transactions of the old
// primary that no replica received. They are moved into DIR/diverged (kept,
// not deleted), the archive is cut back before them, audited and counted,
// so that streaming from primary continues without a duplicate sequence
// number. A divergence before the file being written is a gap (ECONFLICT).
func (b *binlogBackup) setAside(ctx context.Context, primary dbpilot.InstanceKey, binlogState func(context.Context) (string, bool, error)) error {
	if !archiveExists(b.cfg.Dir) {
		return nil // a new archive
	}
	state, ok, err := binlogState(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return nil // MySQL: no such variable; its GTID sets are not set aside
	}
	aside, err := binlog.SetAside(b.cfg.Dir, state)
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.EUNSUPPORTED {
			return nil
		}
		return dbpilot.WrapError(dbpilot.ENOTFOUND, err, "binlog backup: %s does not have the archive's last transactions", primary)
	}
	if aside.File == "" {
		return nil
	}
	b.mu.Lock()
	b.setAsideTxns += int64(len(aside.GTIDs))
	b.mu.Unlock()
	msg := fmt.Sprintf("binlog backup: %d archived transactions of the old primary are not on the new primary %s (%s … %s): set aside in %s, streaming continues from %s",
		len(aside.GTIDs), primary, aside.GTIDs[0], aside.GTIDs[len(aside.GTIDs)-1], aside.File, primary)
	b.d.log.Warn(msg)
	b.d.audit(ctx, dbpilot.AuditEvent{Cluster: b.cfg.Cluster, Instance: primary, Event: dbpilot.AuditBinlogBackup, Message: msg,
		Detail: map[string]string{"dir": b.cfg.Dir, "state": "set_aside", "file": aside.File, "gtids": strings.Join(aside.GTIDs, ",")}})
	return nil
}

// archiveExists reports whether dir holds archived binary logs.
func archiveExists(dir string) bool {
	files, err := binlog.List(dir)
	return err == nil && len(files) > 0
}

// noteEnd records why a Run ended: a gap that cannot be filled, or an
// error to retry.
func (b *binlogBackup) noteEnd(ctx context.Context, primary dbpilot.InstanceKey, err error) {
	if err == nil {
		err = errors.New("the stream ended")
	}
	var purged *binlog.PurgedError
	gap := errors.As(err, &purged) || dbpilot.ErrorCode(err) == dbpilot.ENOTFOUND
	b.mu.Lock()
	b.up = false
	msg := err.Error()
	newGap := gap && b.gap != msg
	repeated := msg == b.lastErr
	if gap {
		b.gap = msg
	}
	b.lastErr = msg
	b.mu.Unlock()
	switch {
	case newGap:
		b.d.log.Error("binlog backup: gap in the archive", "cluster", b.cfg.Cluster, "primary", primary.String(), "err", err)
		b.d.audit(ctx, dbpilot.AuditEvent{Cluster: b.cfg.Cluster, Instance: primary, Event: dbpilot.AuditBinlogBackup,
			Message: fmt.Sprintf("binlog backup cannot continue from %s without a gap: %v", primary, err),
			Detail:  map[string]string{"dir": b.cfg.Dir, "state": "gap", "error": msg}})
	case !repeated:
		b.d.log.Warn("binlog backup: stream stopped; retrying", "cluster", b.cfg.Cluster, "primary", primary.String(), "err", err)
	}
}

// setDown notes that there is nothing to stream from now.
func (b *binlogBackup) setDown(why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.up || b.lastErr != why {
		b.d.log.Info("binlog backup: waiting", "cluster", b.cfg.Cluster, "reason", why)
	}
	b.up, b.lastErr = false, why
}

// writeMetrics writes the backup's series.
func (b *binlogBackup) writeMetrics() {
	if b.d.metrics == nil || !b.d.running.Load() || len(b.cs.cfg.seeds) == 0 {
		return
	}
	b.mu.Lock()
	up, gap, p := b.up, b.gap != "", b.prog
	bytes, txns, aside := b.bytes+p.Bytes, b.txns+p.Transactions, b.setAsideTxns
	b.mu.Unlock()
	flag := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	dir := []dbpilot.Label{{Name: "dir", Value: b.cfg.Dir}}
	samples := []dbpilot.Sample{
		{Name: MetricBinlogBackupUp, Type: dbpilot.Gauge, Value: flag(up), Labels: dir,
			Help: "1 while serve's binlog backup streams from the cluster's primary."},
		{Name: MetricBinlogBackupGap, Type: dbpilot.Gauge, Value: flag(gap), Labels: dir,
			Help: "1 when the binlog archive cannot continue without a gap (purged or missing transactions on the primary)."},
		{Name: MetricBinlogBackupBytes, Type: dbpilot.Counter, Value: float64(bytes), Labels: dir,
			Help: "Bytes of binary log archived since serve started."},
		{Name: MetricBinlogBackupTxns, Type: dbpilot.Counter, Value: float64(txns), Labels: dir,
			Help: "Transactions archived since serve started."},
		{Name: MetricBinlogBackupSetAside, Type: dbpilot.Counter, Value: float64(aside), Labels: dir,
			Help: "Archived transactions set aside (into DIR/diverged) because the new primary after a failover does not have them."},
	}
	if up {
		samples = append(samples, dbpilot.Sample{Name: MetricBinlogBackupLag, Type: dbpilot.Gauge, Value: p.Lag.Seconds(), Labels: dir,
			Help: "How far the archive is behind its primary: the age of the last archived transaction when written (0 when caught up)."})
	}
	if !p.LastEventTime.IsZero() {
		samples = append(samples, dbpilot.Sample{Name: MetricBinlogBackupLastTxn, Type: dbpilot.Gauge, Value: float64(p.LastEventTime.Unix()), Labels: dir,
			Help: "Time of the last archived transaction (Unix seconds)."})
	}
	_ = b.d.metrics.Write(context.Background(), dbpilot.Batch{Instance: b.cs.cfg.seeds[0], Cluster: b.cfg.Cluster,
		Collector: binlogBackupCollector, Time: time.Now(), Samples: samples})
}

// prune removes finished files older than the retention, never the
// newest finished one nor the file being written, oldest first so the
// archive stays continuous.
func (b *binlogBackup) prune() {
	n, err := binlog.Prune(b.cfg.Dir, time.Now().Add(-b.cfg.Retention.D()))
	switch {
	case err != nil:
		b.d.log.Warn("binlog backup: prune the archive", "dir", b.cfg.Dir, "err", err)
	case n > 0:
		b.d.log.Info("binlog backup: archive pruned", "dir", b.cfg.Dir, "files", strconv.Itoa(n), "retention", b.cfg.Retention.D().String())
	}
}

// BinlogBackupStatus is the state of serve's binlog backup (for tests and
// the API).
type BinlogBackupStatus struct {
	Dir      string
	Up       bool
	Gap      string
	Source   dbpilot.InstanceKey
	Position string
	LastErr  string
}

// BinlogBackup returns the binlog backup's state (false when none is
// configured).
func (d *Daemon) BinlogBackup() (BinlogBackupStatus, bool) {
	b := d.binlogBackup
	if b == nil {
		return BinlogBackupStatus{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return BinlogBackupStatus{Dir: filepath.Clean(b.cfg.Dir), Up: b.up, Gap: b.gap, Source: b.source, Position: b.prog.Position, LastErr: b.lastErr}, true
}
