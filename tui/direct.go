package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// DefaultInnoDBEvery is how often Direct reads SHOW ENGINE INNODB STATUS,
// which costs the server more than the status counters.
const DefaultInnoDBEvery = 5 * time.Second

// Direct reads the servers itself: one connection to each, and on every
// Poll SHOW GLOBAL STATUS, a few global variables (read_only, the GTID
// position, the redo log size) and the replica status, and every
// InnoDBEvery SHOW ENGINE INNODB STATUS. Rates are the deltas between two
// polls divided by the time between them.
type Direct struct {
	opts mysql.Options
	// InnoDBEvery is how often SHOW ENGINE INNODB STATUS is read
	// (DefaultInnoDBEvery when zero).
	InnoDBEvery time.Duration

	mu    sync.Mutex // one Poll at a time
	conns []*directConn
}

var _ Source = (*Direct)(nil)

// NewDirect returns a source reading the servers at keys with opts.
func NewDirect(keys []dbpilot.InstanceKey, opts mysql.Options) *Direct {
	d := &Direct{opts: opts}
	for _, k := range keys {
		d.conns = append(d.conns, &directConn{key: k})
	}
	return d
}

// Describe implements Source.
func (d *Direct) Describe() string {
	if len(d.conns) == 1 {
		return "direct, 1 instance"
	}
	return fmt.Sprintf("direct, %d instances", len(d.conns))
}

// Poll implements Source: it reads every server concurrently.
func (d *Direct) Poll(ctx context.Context) (*Frame, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	every := d.InnoDBEvery
	if every <= 0 {
		every = DefaultInnoDBEvery
	}
	f := &Frame{Time: time.Now(), Source: d.Describe(), Rows: make([]Row, len(d.conns))}
	var wg sync.WaitGroup
	warm := make([]bool, len(d.conns))
	for i, c := range d.conns {
		wg.Go(func() {
			f.Rows[i], warm[i] = c.poll(ctx, d.opts, every)
		})
	}
	wg.Wait()
	f.Warmup = true
	for _, w := range warm {
		if w {
			f.Warmup = false
		}
	}
	assignRoles(f.Rows)
	return f, nil
}

// Close implements Source.
func (d *Direct) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.close()
	}
	return nil
}

// directConn is the connection to one server and what earlier polls learned.
type directConn struct {
	key     dbpilot.InstanceKey
	db      *mysql.DB
	dialect mysql.Dialect

	prev     *Status      // the previous status read
	innodb   InnoDBStatus // the last INNODB STATUS read
	innodbAt time.Time
}

func (c *directConn) close() {
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
}

// topVariables are the global variables read on every poll.
var topVariables = []string{"version", "version_comment", "read_only",
	"gtid_current_pos", "gtid_executed",
	"innodb_log_file_size", "innodb_log_files_in_group", "innodb_redo_log_capacity"}

var variablesSQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('" + strings.Join(topVariables, "','") + "')"

// poll reads the server once. warm reports whether rates could be computed
// (there was an earlier read).
func (c *directConn) poll(ctx context.Context, opts mysql.Options, innodbEvery time.Duration) (row Row, warm bool) {
	row = Row{Instance: c.key.String()}
	fail := func(err error) (Row, bool) {
		// A broken connection is opened again on the next poll.
		if dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL {
			c.close()
		}
		return Row{Instance: c.key.String(), Err: err.Error()}, false
	}
	if c.db == nil {
		db, err := mysql.Open(ctx, c.key, opts)
		if err != nil {
			return fail(err)
		}
		// One connection: top is a guest on the server.
		db.SQL().SetMaxOpenConns(1)
		db.SQL().SetMaxIdleConns(1)
		c.db = db
	}

	r, err := c.db.Query(ctx, variablesSQL)
	if err != nil {
		return fail(err)
	}
	vars := nameValues(r)
	flavor := mysql.DetectFlavor(vars["version"], vars["version_comment"])
	version, err := dbpilot.ParseVersion(vars["version"])
	if err != nil {
		return fail(dbpilot.WrapError(dbpilot.EUNSUPPORTED, err, "top: read version on %s", c.key))
	}
	c.dialect = mysql.Dialect{Flavor: flavor, Version: version}
	row.ReadOnly = isOn(vars["read_only"])
	if flavor == dbpilot.FlavorMariaDB {
		row.GTID = vars["gtid_current_pos"]
	} else {
		row.GTID = strings.ReplaceAll(vars["gtid_executed"], "\n", "")
	}

	r, err = c.db.Query(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return fail(err)
	}
	cur := Status{At: time.Now(), Values: nameValues(r)}
	fillFromStatus(&row, c.prev, cur)
	warm = c.prev != nil
	c.prev = &cur

	r, err = c.db.Query(ctx, c.dialect.ShowReplicaStatusSQL())
	switch {
	case err == nil:
		row.Channels = parseChannels(r.Maps())
	case mysql.ServerErrorNumber(err) != 0:
		// No REPLICATION CLIENT privilege: no channels shown.
	default:
		return fail(err)
	}
	for _, ch := range row.Channels {
		if ch.Lag.Valid && (!row.Lag.Valid || ch.Lag.V > row.Lag.V) {
			row.Lag = ch.Lag
		}
		if !ch.Lag.Valid {
			row.LagNull = true
		}
	}
	if row.LagNull {
		row.Lag = Num{}
	}

	if c.innodbAt.IsZero() || time.Since(c.innodbAt) >= innodbEvery {
		r, err := c.db.Query(ctx, "SHOW ENGINE INNODB STATUS")
		switch {
		case err == nil:
			text := ""
			for _, m := range r.Maps() {
				for k, v := range m {
					if strings.EqualFold(k, "Status") {
						text = v
					}
				}
			}
			c.innodb = ParseInnoDBStatus(text)
			c.innodbAt = time.Now()
		case mysql.ServerErrorNumber(err) != 0:
			// No PROCESS privilege: fall back to the status counters.
			c.innodb = InnoDBStatus{}
			c.innodbAt = time.Now()
		default:
			return fail(err)
		}
	}
	in := c.innodb
	if !in.HasLSN || !in.HasCheckpoint {
		// MariaDB has them as status variables too.
		if v := cur.Num("innodb_lsn_current"); v.Valid {
			in.LSN, in.HasLSN = uint64(v.V), true
		}
		if v := cur.Num("innodb_lsn_last_checkpoint"); v.Valid {
			in.Checkpoint, in.HasCheckpoint = uint64(v.V), true
		}
	}
	row.CheckpointAge = in.CheckpointAge()
	row.CheckpointPct = pct(row.CheckpointAge, redoCapacity(vars))
	if in.HasHistory {
		row.HistoryLength = N(float64(in.HistoryLength))
	}
	return row, warm
}

// nameValues turns Variable_name/Value rows into a map with lower-cased names.
func nameValues(r *mysql.Rows) map[string]string {
	m := make(map[string]string, len(r.Values))
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil {
			continue
		}
		v := ""
		if row[1] != nil {
			v = *row[1]
		}
		m[strings.ToLower(*row[0])] = v
	}
	return m
}

func isOn(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "ON", "1", "YES", "TRUE":
		return true
	}
	return false
}

// parseChannels reads SHOW ALL SLAVES STATUS / SHOW REPLICA STATUS / SHOW
// SLAVE STATUS rows, under either vocabulary.
func parseChannels(rows []map[string]string) []Channel {
	var out []Channel
	for _, raw := range rows {
		row := make(map[string]string, len(raw))
		for k, v := range raw {
			row[strings.ToLower(k)] = v
		}
		get := func(names ...string) (string, bool) {
			for _, n := range names {
				if v, ok := row[n]; ok {
					return v, true
				}
			}
			return "", false
		}
		host, _ := get("master_host", "source_host")
		port, _ := get("master_port", "source_port")
		if host == "" {
			continue // configured and reset: no source
		}
		ch := Channel{Source: host}
		if p, err := strconv.Atoi(port); err == nil {
			ch.Source = dbpilot.InstanceKey{Host: host, Port: p}.String()
		}
		ch.Name, _ = get("connection_name", "channel_name")
		ch.IORunning, _ = get("slave_io_running", "replica_io_running")
		ch.SQLRunning, _ = get("slave_sql_running", "replica_sql_running")
		if v, ok := get("seconds_behind_master", "seconds_behind_source"); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				ch.Lag = N(f)
			}
		}
		if v, ok := get("relay_log_space"); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				ch.RelayLogSpace = N(f)
			}
		}
		out = append(out, ch)
	}
	return out
}
