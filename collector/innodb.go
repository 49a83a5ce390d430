package collector

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Statements of the innodb collector.
const (
	innoStatusSQL = "SHOW ENGINE INNODB STATUS"
	// innoGlobalStatusSQL: buffer pool counters; MariaDB's own checkpoint
	// limit; MySQL 8.0.30+'s actual redo capacity; pending I/O for servers
	// whose status text lacks it. Names a server lacks are not returned.
	innoGlobalStatusSQL = "SHOW GLOBAL STATUS WHERE Variable_name IN (" +
		"'Innodb_buffer_pool_pages_dirty', 'Innodb_buffer_pool_pages_total', " +
		"'Innodb_buffer_pool_read_requests', 'Innodb_buffer_pool_reads', 'Innodb_buffer_pool_read_ahead', " +
		"'Innodb_checkpoint_max_age', 'Innodb_redo_log_capacity_resized', " +
		"'Innodb_data_pending_reads', 'Innodb_data_pending_writes', 'Innodb_data_pending_fsyncs')"
	// INNODB_METRICS says which counters are enabled in ENABLED (MariaDB)
	// or STATUS (MySQL).
	innoMetricsMariaSQL = "SELECT NAME, SUBSYSTEM, COUNT, TYPE FROM information_schema.INNODB_METRICS WHERE ENABLED = 1"
	innoMetricsMySQLSQL = "SELECT NAME, SUBSYSTEM, COUNT, TYPE FROM information_schema.INNODB_METRICS WHERE STATUS = 'enabled'"
)

// RedoLogVariablesSQL reads the global variables RedoLogCapacity needs.
const RedoLogVariablesSQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN (" +
	"'innodb_log_file_size', 'innodb_log_files_in_group', 'innodb_redo_log_capacity')"

// innoErrBadField is ER_BAD_FIELD_ERROR: unknown column.
const innoErrBadField = 1054

// innodb reads InnoDB's redo, purge, I/O and buffer pool state. It keeps the
// buffer pool counters of the previous run per instance for the hit ratio.
type innodb struct {
	statusShared // global_status's read of innoStatusNames, when fresh
	mu           sync.Mutex
	prev         map[dbpilot.InstanceKey]innoPrev
	redo         map[dbpilot.InstanceKey]innoRedo // RedoLogVariablesSQL's last answer
}

// innoRedo is an instance's redo log size variables, read at at.
type innoRedo struct {
	vars map[string]string
	at   time.Time
}

// innoRedoEvery is how often the redo log size variables are read again:
// they change with a restart (MariaDB, MySQL before 8.0.30) or by hand
// (innodb_redo_log_capacity), as global_variables reads them every 60 s.
const innoRedoEvery = time.Minute

// innoStatusNames are the variables of innoGlobalStatusSQL.
var innoStatusNames = []string{"Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_total",
	"Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_ahead",
	"Innodb_checkpoint_max_age", "Innodb_redo_log_capacity_resized",
	"Innodb_data_pending_reads", "Innodb_data_pending_writes", "Innodb_data_pending_fsyncs"}

type innoPrev struct{ requests, reads, readAhead uint64 }

// NewInnoDB returns the "innodb" collector, run every 5 seconds.
//
// From SHOW ENGINE INNODB STATUS (ParseInnoDBStatus):
//
//	dbpilot_innodb_lsn, _lsn_flushed, _pages_flushed_lsn, _checkpoint_lsn   counters (bytes of redo)
//	dbpilot_innodb_checkpoint_age_bytes       Log sequence number - Last checkpoint at
//	dbpilot_innodb_checkpoint_age_max_bytes   how far the age may grow (below)
//	dbpilot_innodb_checkpoint_age_percent     age / max * 100
//	dbpilot_innodb_history_list_length        undo records not purged yet
//	dbpilot_innodb_pending_reads, _pending_writes, _pending_fsyncs
//
// The maximum checkpoint age is MariaDB's own Innodb_checkpoint_max_age
// status where the server has it (10.x; for 10.5+ about 0.79 ×
// innodb_log_file_size with 16 KiB pages). Elsewhere it is 0.9 × the redo
// capacity, the point where InnoDB's log_calc_max_ages puts its
// max_checkpoint_age before its own smaller safety margins, so a value near
// 100% means InnoDB is in or close to synchronous flushing. Redo capacity:
// see RedoLogCapacity.
// Pending I/O the text lacks comes from Innodb_data_pending_reads/_writes/
// _fsyncs.
//
// From information_schema.INNODB_METRICS, every enabled counter with
// mysqld_exporter's names: mysql_info_schema_innodb_metrics_<subsystem>_<name>,
// with "_total" and the counter type for TYPE counter and status_counter
// (when not negative), a gauge otherwise; buffer_page_io counters become
// ..._buffer_page_read_total / _written_total{type}, buffer pool page counts
// ..._buffer_pool_pages{state} and ..._buffer_pool_dirty_pages. With
// trx_rseg_history_len enabled (the default) that gives
// mysql_info_schema_innodb_metrics_transaction_trx_rseg_history_len.
//
// From global status:
//
//	dbpilot_innodb_buffer_pool_dirty_percent  Innodb_buffer_pool_pages_dirty / _pages_total * 100
//	dbpilot_innodb_buffer_pool_hit_ratio      1 - Δ misses / Δ Innodb_buffer_pool_read_requests
//
// The hit ratio is over the interval since the previous run on the
// instance: absent on the first run, after a counter reset (restart) and in
// an interval without page requests; clamped to [0, 1]. Misses are
// Innodb_buffer_pool_reads on MySQL, where it counts only the reads a page
// request waited for. MariaDB's Innodb_buffer_pool_reads counts every page
// read, linear read-ahead included (on 10.11 it moves with INNODB_METRICS'
// buffer_pages_read; in testdata/innodb/mariadb-10.11/primary-cold-reads a
// table scan reads 4828 pages for 6385 requests, 4416 of them read ahead),
// so there the pages read ahead (Innodb_buffer_pool_read_ahead) are not
// counted as misses.
//
// SHOW ENGINE INNODB STATUS and INNODB_METRICS need the PROCESS privilege;
// a refusal is returned as the run's error along with the other samples.
func NewInnoDB() Collector {
	return &innodb{prev: map[dbpilot.InstanceKey]innoPrev{}, redo: map[dbpilot.InstanceKey]innoRedo{}}
}

func (*innodb) Name() string                   { return "innodb" }
func (*innodb) DefaultInterval() time.Duration { return 5 * time.Second }

// Forget drops what the collector remembers of an instance that left the
// fleet.
func (c *innodb) Forget(key dbpilot.InstanceKey) {
	c.mu.Lock()
	delete(c.prev, key.Normalized())
	delete(c.redo, key.Normalized())
	c.mu.Unlock()
}

func (c *innodb) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	var (
		out     []dbpilot.Sample
		refused []error // statements the server refused
	)
	// run queries one statement; a refusal is kept for the end, a broken
	// connection ends the run.
	run := func(sql string) (*mysql.Rows, error) {
		r, err := q.Query(ctx, sql)
		if err != nil && rhiServerError(err) {
			refused = append(refused, err)
			return nil, nil
		}
		return r, err
	}

	r, err := run(innoStatusSQL)
	if err != nil {
		return nil, err
	}
	var st InnoDBStatus
	if r != nil {
		st = ParseInnoDBStatus(InnoDBStatusText(r))
	}
	r = c.sharedRows(t.Key, innoStatusNames)
	if r == nil {
		if r, err = run(innoGlobalStatusSQL); err != nil {
			return nil, err
		}
	}
	status := r.NameValues()
	c.mu.Lock()
	nk := t.Key.Normalized()
	redo, ok := c.redo[nk]
	c.mu.Unlock()
	if !ok || time.Since(redo.at) >= innoRedoEvery {
		if r, err = run(RedoLogVariablesSQL); err != nil {
			return nil, err
		}
		redo = innoRedo{vars: r.NameValues(), at: time.Now()}
		if r != nil { // refused: asked again next run
			c.mu.Lock()
			c.redo[nk] = redo
			c.mu.Unlock()
		}
	}
	vars := redo.vars

	out = append(out, innoStatusSamples(st, status, vars, t)...)
	out = append(out, c.bufferPoolSamples(t, status)...)

	// MariaDB 10.5+ has ENABLED, MySQL and older MariaDB STATUS: on an
	// unknown column (1054) the other spelling is tried.
	metricsSQL, otherSQL := innoMetricsMySQLSQL, innoMetricsMariaSQL
	if t.Flavor == dbpilot.FlavorMariaDB {
		metricsSQL, otherSQL = otherSQL, metricsSQL
	}
	r, err = q.Query(ctx, metricsSQL)
	if mysql.ServerErrorNumber(err) == innoErrBadField {
		r, err = q.Query(ctx, otherSQL)
	}
	if err != nil {
		if !rhiServerError(err) {
			return out, err
		}
		refused = append(refused, err)
		r = nil
	}
	if r != nil {
		out = append(out, innoMetricsSamples(r)...)
	}
	return out, errors.Join(refused...)
}

// InnoDBStatusText returns the Status column of a SHOW ENGINE INNODB STATUS
// result, "" when it has none.
func InnoDBStatusText(r *mysql.Rows) string {
	for i, c := range r.Columns {
		if strings.EqualFold(c, "Status") && len(r.Values) > 0 && r.Values[0][i] != nil {
			return *r.Values[0][i]
		}
	}
	return ""
}

func innoUint(m map[string]string, name string) (uint64, bool) {
	v, ok := m[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// innoCheckpointMax returns the largest checkpoint age (see NewInnoDB).
func innoCheckpointMax(status, vars map[string]string, t Target) (uint64, bool) {
	if n, ok := innoUint(status, "innodb_checkpoint_max_age"); ok && n > 0 {
		return n, true
	}
	capacity, _ := RedoLogCapacity(status, vars, t)
	if maxAge := capacity / 10 * 9; maxAge > 0 {
		return maxAge, true
	}
	return 0, false
}

// RedoLogCapacity returns the size in bytes of the server's redo log, from
// its global status and variables (lower-cased names, as Rows.NameValues
// returns them; RedoLogVariablesSQL reads the variables):
// Innodb_redo_log_capacity_resized (MySQL 8.0.30+, the capacity in effect),
// else innodb_redo_log_capacity (MySQL 8.0.30+), else innodb_log_file_size ×
// innodb_log_files_in_group (MySQL before 8.0.30, MariaDB before 10.5; 1
// file when the variable is absent), and innodb_log_file_size alone on
// MariaDB 10.5+ (one redo file). ok is false when none of them is known.
func RedoLogCapacity(status, vars map[string]string, t Target) (capacity uint64, ok bool) {
	if n, ok := innoUint(status, "innodb_redo_log_capacity_resized"); ok && n > 0 {
		return n, true
	}
	if n, ok := innoUint(vars, "innodb_redo_log_capacity"); ok && n > 0 {
		return n, true
	}
	size, ok := innoUint(vars, "innodb_log_file_size")
	if !ok || size == 0 {
		return 0, false
	}
	files, ok := innoUint(vars, "innodb_log_files_in_group")
	if !ok || files == 0 || (t.Flavor == dbpilot.FlavorMariaDB && t.Version.AtLeast(10, 5, 0)) {
		files = 1
	}
	return size * files, true
}

func innoStatusSamples(st InnoDBStatus, status, vars map[string]string, t Target) []dbpilot.Sample {
	var out []dbpilot.Sample
	add := func(name string, typ dbpilot.MetricType, v InnoDBValue) {
		if v.OK {
			out = append(out, rhiSample(name, typ, float64(v.V)))
		}
	}
	add("dbpilot_innodb_lsn", dbpilot.Counter, st.LSN)
	add("dbpilot_innodb_lsn_flushed", dbpilot.Counter, st.LSNFlushed)
	add("dbpilot_innodb_pages_flushed_lsn", dbpilot.Counter, st.PagesFlushedLSN)
	add("dbpilot_innodb_checkpoint_lsn", dbpilot.Counter, st.CheckpointLSN)
	if age, ok := st.CheckpointAge(); ok {
		out = append(out, rhiSample("dbpilot_innodb_checkpoint_age_bytes", dbpilot.Gauge, float64(age)))
		if maxAge, ok := innoCheckpointMax(status, vars, t); ok {
			out = append(out,
				rhiSample("dbpilot_innodb_checkpoint_age_max_bytes", dbpilot.Gauge, float64(maxAge)),
				rhiSample("dbpilot_innodb_checkpoint_age_percent", dbpilot.Gauge, float64(age)/float64(maxAge)*100),
			)
		}
	}
	add("dbpilot_innodb_history_list_length", dbpilot.Gauge, st.HistoryLength)
	fallback := func(v InnoDBValue, name string) InnoDBValue {
		if !v.OK {
			if n, ok := innoUint(status, name); ok {
				return innoSet(n)
			}
		}
		return v
	}
	add("dbpilot_innodb_pending_reads", dbpilot.Gauge, fallback(st.PendingReads, "innodb_data_pending_reads"))
	add("dbpilot_innodb_pending_writes", dbpilot.Gauge, fallback(st.PendingWrites, "innodb_data_pending_writes"))
	add("dbpilot_innodb_pending_fsyncs", dbpilot.Gauge, fallback(st.PendingFsyncs, "innodb_data_pending_fsyncs"))
	return out
}

// bufferPoolSamples returns the dirty percentage and, from the previous
// run's counters, the hit ratio.
func (c *innodb) bufferPoolSamples(t Target, status map[string]string) []dbpilot.Sample {
	var out []dbpilot.Sample
	dirty, ok1 := innoUint(status, "innodb_buffer_pool_pages_dirty")
	total, ok2 := innoUint(status, "innodb_buffer_pool_pages_total")
	if ok1 && ok2 && total > 0 {
		out = append(out, rhiSample("dbpilot_innodb_buffer_pool_dirty_percent", dbpilot.Gauge, float64(dirty)/float64(total)*100))
	}
	requests, ok1 := innoUint(status, "innodb_buffer_pool_read_requests")
	reads, ok2 := innoUint(status, "innodb_buffer_pool_reads")
	if !ok1 || !ok2 {
		return out
	}
	readAhead, _ := innoUint(status, "innodb_buffer_pool_read_ahead")
	k := t.Key.Normalized()
	c.mu.Lock()
	prev, had := c.prev[k]
	c.prev[k] = innoPrev{requests: requests, reads: reads, readAhead: readAhead}
	c.mu.Unlock()
	if !had || requests < prev.requests || reads < prev.reads || readAhead < prev.readAhead || requests == prev.requests {
		return out
	}
	dReq, misses := requests-prev.requests, reads-prev.reads
	if t.Flavor == dbpilot.FlavorMariaDB {
		misses -= min(misses, readAhead-prev.readAhead)
	}
	ratio := 1 - float64(misses)/float64(dReq)
	ratio = min(max(ratio, 0), 1)
	return append(out, rhiSample("dbpilot_innodb_buffer_pool_hit_ratio", dbpilot.Gauge, ratio))
}

// Regular expressions of mysqld_exporter's info_schema_innodb_metrics.go.
var (
	innoBufferRE     = regexp.MustCompile(`^buffer_(pool_pages)_(.*)$`)
	innoBufferPageRE = regexp.MustCompile(`^buffer_page_(read|written)_(.*)$`)
)

const innoMetricsPrefix = "mysql_info_schema_innodb_metrics_"

// innoMetricsSamples names INNODB_METRICS rows (NAME, SUBSYSTEM, COUNT,
// TYPE) as mysqld_exporter does.
func innoMetricsSamples(r *mysql.Rows) []dbpilot.Sample {
	iName, iSub, iType, iCount := r.Index("NAME"), r.Index("SUBSYSTEM"), r.Index("TYPE"), r.Index("COUNT")
	out := make([]dbpilot.Sample, 0, len(r.Values)+runnerExtraSamples)
	for _, row := range r.Values {
		name := mysql.Str(row, iName)
		value, err := strconv.ParseFloat(strings.TrimSpace(mysql.Str(row, iCount)), 64)
		if err != nil || name == "" {
			continue
		}
		d := innoMetricDescFor(mysql.Str(row, iSub), name, mysql.Str(row, iType))
		switch {
		case d.skip:
		case d.counter != "" && (value >= 0 || d.gauge == ""):
			out = append(out, dbpilot.Sample{Name: d.counter, Type: dbpilot.Counter, Value: value, Labels: d.labels})
		default:
			out = append(out, dbpilot.Sample{Name: d.gauge, Type: dbpilot.Gauge, Value: value, Labels: d.labels})
		}
	}
	return out
}

// innoMetricDesc is how one INNODB_METRICS row is written.
type innoMetricDesc struct {
	skip    bool
	counter string // the name when the row is a counter reading >= 0
	gauge   string // the name otherwise ("": a counter whatever its sign)
	labels  []dbpilot.Label
}

// innoMetricDescs caches innoMetricDescFor by subsystem, name and type: the
// same few hundred rows are read on every instance every few seconds.
var innoMetricDescs sync.Map

func innoMetricDescFor(subsystem, name, typ string) *innoMetricDesc {
	key := subsystem + "\x00" + name + "\x00" + typ
	if d, ok := innoMetricDescs.Load(key); ok {
		return d.(*innoMetricDesc)
	}
	d := newInnoMetricDesc(subsystem, name, strings.ToLower(typ))
	v, _ := innoMetricDescs.LoadOrStore(key, d)
	return v.(*innoMetricDesc)
}

func newInnoMetricDesc(subsystem, name, typ string) *innoMetricDesc {
	if subsystem == "buffer_page_io" {
		m := innoBufferPageRE.FindStringSubmatch(name)
		if m == nil {
			return &innoMetricDesc{skip: true}
		}
		// Always a counter (no gauge twin), as mysqld_exporter writes it.
		n := innoMetricsPrefix + "buffer_page_" + m[1] + "_total"
		return &innoMetricDesc{counter: n, labels: []dbpilot.Label{{Name: "type", Value: m[2]}}}
	}
	if subsystem == "buffer" {
		if m := innoBufferRE.FindStringSubmatch(name); m != nil {
			switch m[2] {
			case "total":
				return &innoMetricDesc{skip: true} // the sum of the others
			case "dirty":
				return &innoMetricDesc{gauge: innoMetricsPrefix + "buffer_pool_dirty_pages"}
			default:
				return &innoMetricDesc{gauge: innoMetricsPrefix + "buffer_pool_pages", labels: []dbpilot.Label{{Name: "state", Value: m[2]}}}
			}
		}
	}
	metric := innoMetricsPrefix + innoMetricName(subsystem+"_"+name)
	d := &innoMetricDesc{gauge: metric}
	// Counters may read negative (https://bugs.mysql.com/75966): gauges then.
	if typ == "counter" || typ == "status_counter" {
		d.counter = metric + "_total"
	}
	return d
}

// innoMetricName replaces characters a metric name cannot hold.
func innoMetricName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
