package tui

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/mysql"
)

// DefaultInnoDBEvery is how often Direct reads SHOW ENGINE INNODB STATUS,
// which costs the server more than the status counters.
const DefaultInnoDBEvery = 5 * time.Second

// Direct reads the servers itself: one connection to each, and on every
// Poll an inspection (mysql's Inspect: read_only, the GTID position, the
// replication channels) and SHOW GLOBAL STATUS, and every InnoDBEvery SHOW
// ENGINE INNODB STATUS and the redo log variables, read with the collector
// package's parser. Rates are the deltas between two polls divided by the
// time between them.
//
// While the q view is shown (SetView) it also reads the statement digest
// table (mysql's ReadDigests) every QueriesEvery, and shows what ran
// between the last two reads (mysql.DigestDeltas) until the next one. The
// digests read are forgotten when another view is shown.
type Direct struct {
	opts mysql.Options
	// InnoDBEvery is how often SHOW ENGINE INNODB STATUS is read
	// (DefaultInnoDBEvery when zero).
	InnoDBEvery time.Duration
	// QueriesEvery is how often the digest table is read in the q view
	// (DefaultQueriesEvery when zero).
	QueriesEvery time.Duration

	view      atomic.Int32 // the View shown
	queryRows atomic.Int32 // digests the screen has room for (0: unknown)

	mu    sync.Mutex // one Poll at a time
	conns []*directConn
}

var (
	_ Source     = (*Direct)(nil)
	_ ViewSetter = (*Direct)(nil)
)

// SetView implements ViewSetter.
func (d *Direct) SetView(v View, rows int) {
	d.view.Store(int32(v))
	d.queryRows.Store(int32(max(rows, 0)))
}

func (d *Direct) queriesEvery() time.Duration {
	if d.QueriesEvery <= 0 {
		return DefaultQueriesEvery
	}
	return d.QueriesEvery
}

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
	queries := View(d.view.Load()) == ViewQueries
	limit := int(d.queryRows.Load())
	if limit <= 0 {
		limit = DefaultQueryRows
	}
	var wg sync.WaitGroup
	warm := make([]bool, len(d.conns))
	for i, c := range d.conns {
		wg.Go(func() {
			f.Rows[i], warm[i] = c.poll(ctx, d.opts, every)
			if !queries {
				c.digests = nil // back in the q view, read afresh
				return
			}
			if f.Rows[i].Err != "" {
				c.digests = nil
				return
			}
			c.pollDigests(ctx, d.queriesEvery(), limit)
		})
	}
	wg.Wait()
	if queries {
		states := make([]*digestState, len(d.conns))
		for i, c := range d.conns {
			states[i] = c.digests
		}
		f.Queries = mergeDigests("performance_schema, read every "+d.queriesEvery().String(), states, limit)
	}
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
	key dbpilot.InstanceKey
	db  *mysql.DB

	prev     *Status                // the previous status read
	innodb   collector.InnoDBStatus // the last INNODB STATUS read
	redoVars map[string]string      // the redo log variables, read with it
	innodbAt time.Time

	digests *digestState // in the q view: the digest table's reads
}

// pollDigests reads the digest table when there was no read yet or the
// last one is every old, and keeps what ran between the last two reads.
func (c *directConn) pollDigests(ctx context.Context, every time.Duration, limit int) {
	if c.digests == nil {
		c.digests = &digestState{}
	}
	now := time.Now()
	if c.db == nil || !c.digests.due(now, every) {
		return
	}
	snap, err := c.db.ReadDigests(ctx, mysql.DigestOptions{})
	c.digests.update(c.key.String(), snap, err, now, limit)
}

func (c *directConn) close() {
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
}

// poll reads the server once. warm reports whether rates could be computed
// (there was an earlier read).
func (c *directConn) poll(ctx context.Context, opts mysql.Options, innodbEvery time.Duration) (row Row, warm bool) {
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

	inst, err := c.db.Inspect(ctx)
	if err != nil {
		return fail(err)
	}
	row = rowFromInstance(inst)

	r, err := c.db.Query(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return fail(err)
	}
	cur := Status{At: time.Now(), Values: r.NameValues()}
	fillFromStatus(&row, c.prev, cur)
	warm = c.prev != nil
	c.prev = &cur

	if c.innodbAt.IsZero() || time.Since(c.innodbAt) >= innodbEvery {
		r, err := c.db.Query(ctx, "SHOW ENGINE INNODB STATUS")
		switch {
		case err == nil:
			c.innodb = collector.ParseInnoDBStatus(collector.InnoDBStatusText(r))
		case mysql.ServerErrorNumber(err) != 0:
			// No PROCESS privilege: fall back to the status counters.
			c.innodb = collector.InnoDBStatus{}
		default:
			return fail(err)
		}
		if r, err = c.db.Query(ctx, collector.RedoLogVariablesSQL); err != nil {
			return fail(err)
		}
		c.redoVars = r.NameValues()
		c.innodbAt = time.Now()
	}
	in := c.innodb
	if !in.LSN.OK || !in.CheckpointLSN.OK {
		// MariaDB has them as status variables too.
		if v := cur.Num("innodb_lsn_current"); v.Valid {
			in.LSN = collector.InnoDBValue{V: uint64(v.V), OK: true}
		}
		if v := cur.Num("innodb_lsn_last_checkpoint"); v.Valid {
			in.CheckpointLSN = collector.InnoDBValue{V: uint64(v.V), OK: true}
		}
	}
	if age, ok := in.CheckpointAge(); ok {
		row.CheckpointAge = N(float64(age))
		t := collector.Target{Key: c.key, Flavor: inst.Flavor, Version: inst.Version}
		if capacity, ok := collector.RedoLogCapacity(cur.Values, c.redoVars, t); ok {
			row.CheckpointPct = pct(row.CheckpointAge, N(float64(capacity)))
		}
	}
	if in.HistoryLength.OK {
		row.HistoryLength = N(float64(in.HistoryLength.V))
	}
	return row, warm
}
