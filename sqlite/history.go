package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

var _ dbpilot.TopologyHistory = (*DB)(nil)

// clusterState is the JSON of a cluster record's primary and problems.
type clusterState struct {
	Primary  dbpilot.InstanceKey `json:"primary"`
	Problems []dbpilot.Problem   `json:"problems,omitempty"`
}

const changeColumns = `id, time, cluster, kind, host, port, state, cluster_state, summary`

// RecordChanges stores changes in one transaction and sets their IDs; a
// zero Time means now. An instance's State is stored as its Shape. It
// fails with EINVALID for a change without a cluster, of an unknown kind,
// of an instance without a key, or an instance change without a state.
func (d *DB) RecordChanges(ctx context.Context, changes []dbpilot.TopologyChange) error {
	const op = "record topology changes"
	// The rows are made before the write turn is taken.
	type row struct {
		at           int64
		norm         dbpilot.InstanceKey
		state, cstat any
	}
	rows := make([]row, len(changes))
	now := d.Now()
	for i := range changes {
		c := &changes[i]
		r := &rows[i]
		if c.Cluster == "" {
			return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: a change without a cluster", op)
		}
		switch c.Kind {
		case dbpilot.ChangeInstance, dbpilot.ChangeLeft:
			if c.Instance.IsZero() {
				return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: cluster %s: a %s change without an instance", op, c.Cluster, c.Kind)
			}
			r.norm = c.Instance.Normalized()
			if c.Kind == dbpilot.ChangeLeft {
				break
			}
			if c.State == nil {
				return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: cluster %s: change of %s without its state", op, c.Cluster, c.Instance)
			}
			b, err := compactJSON(c.State.Shape())
			if err != nil {
				return fmt.Errorf("sqlite: %s: %s: %w", op, c.Instance, err)
			}
			r.state = string(b)
		case dbpilot.ChangeCluster:
			b, err := json.Marshal(clusterState{Primary: c.Primary, Problems: c.Problems})
			if err != nil {
				return fmt.Errorf("sqlite: %s: cluster %s: %w", op, c.Cluster, err)
			}
			r.cstat = string(b)
		default:
			return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: unknown kind %q (want instance, left or cluster)", op, c.Kind)
		}
		at := c.Time
		if at.IsZero() {
			at = now
		}
		var ta timeArgs
		v := ta.arg(at)
		if ta.err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, ta.err)
		}
		r.at = v.(int64)
	}
	if len(changes) == 0 {
		return nil
	}
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO topology_changes (time, cluster, kind, norm_host, host, port, state, cluster_state, summary)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer stmt.Close()
	ids := make([]int64, len(changes))
	for i, c := range changes {
		r := rows[i]
		res, err := stmt.ExecContext(ctx, r.at, c.Cluster, c.Kind, r.norm.Host, c.Instance.Host, c.Instance.Port, r.state, r.cstat, c.Summary)
		if err != nil {
			return fmt.Errorf("sqlite: %s: cluster %s: %w", op, c.Cluster, err)
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	for i := range changes {
		changes[i].ID = ids[i]
	}
	return nil
}

// TopologyChanges returns the changes f selects, oldest first: the oldest
// f.Limit (DefaultChangeLimit when 0 or less) of them, or the newest with
// f.Newest. An empty f.Cluster selects every cluster's.
func (d *DB) TopologyChanges(ctx context.Context, f dbpilot.ChangeFilter) ([]dbpilot.TopologyChange, error) {
	const op = "topology changes"
	limit := f.Limit
	if limit <= 0 {
		limit = dbpilot.DefaultChangeLimit
	}
	var where []string
	var args []any
	if f.Cluster != "" {
		where, args = append(where, "cluster = ?"), append(args, f.Cluster)
	}
	if !f.From.IsZero() {
		where, args = append(where, "time >= ?"), append(args, sinceArg(f.From))
	}
	if !f.To.IsZero() {
		where, args = append(where, "time <= ?"), append(args, sinceArg(f.To))
	}
	q := `SELECT ` + changeColumns + ` FROM topology_changes`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Newest {
		q = `SELECT * FROM (` + q + ` ORDER BY time DESC, id DESC LIMIT ?) ORDER BY time, id`
	} else {
		q += ` ORDER BY time, id LIMIT ?`
	}
	return d.changes(ctx, op, q, append(args, limit)...)
}

// ChangesAt returns what makes up cluster at t, oldest first: the newest
// change at or before t of each instance (instance or left) and the
// newest cluster change. It is empty when t is before the cluster's
// history (HistoryStart).
func (d *DB) ChangesAt(ctx context.Context, cluster string, t time.Time) ([]dbpilot.TopologyChange, error) {
	const op = "topology at"
	start, err := d.HistoryStart(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if start.IsZero() || t.Before(start) {
		return []dbpilot.TopologyChange{}, nil
	}
	// For each instance of the cluster's history (and the cluster's own
	// records: '', 0), one seek of topology_changes_instance_time.
	return d.changes(ctx, op, `SELECT `+changeColumns+` FROM topology_changes WHERE id IN (
			SELECT (SELECT c.id FROM topology_changes c
				WHERE c.cluster = k.cluster AND c.norm_host = k.norm_host AND c.port = k.port AND c.time <= ?
				ORDER BY c.time DESC, c.id DESC LIMIT 1)
			FROM (SELECT DISTINCT cluster, norm_host, port FROM topology_changes WHERE cluster = ?) k)
		ORDER BY time, id`, sinceArg(t), cluster)
}

// HistoryStart returns the time from which cluster's history is kept
// whole: its oldest record, or after a prune the instant from which the
// records kept rebuild it. Zero: no history.
func (d *DB) HistoryStart(ctx context.Context, cluster string) (time.Time, error) {
	const op = "topology history start"
	var oldest, since sql.NullInt64
	err := d.db.QueryRowContext(ctx, `SELECT (SELECT MIN(time) FROM topology_changes WHERE cluster = ?1),
		(SELECT since FROM topology_history_start WHERE cluster = ?1)`, cluster).Scan(&oldest, &since)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if !oldest.Valid {
		return time.Time{}, nil
	}
	if since.Valid && since.Int64 > oldest.Int64 {
		return timeOf(since), nil
	}
	return timeOf(oldest), nil
}

// changes runs a query of changeColumns.
func (d *DB) changes(ctx context.Context, op, q string, args ...any) ([]dbpilot.TopologyChange, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	out := []dbpilot.TopologyChange{}
	for rows.Next() {
		var (
			c            dbpilot.TopologyChange
			at           sql.NullInt64
			state, cstat sql.NullString
		)
		if err := rows.Scan(&c.ID, &at, &c.Cluster, &c.Kind, &c.Instance.Host, &c.Instance.Port, &state, &cstat, &c.Summary); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		c.Time = timeOf(at)
		if state.Valid {
			c.State = new(dbpilot.Instance)
			if err := json.Unmarshal([]byte(state.String), c.State); err != nil {
				return nil, fmt.Errorf("sqlite: %s: change %d: decode state: %w", op, c.ID, err)
			}
		}
		if cstat.Valid {
			var cs clusterState
			if err := json.Unmarshal([]byte(cstat.String), &cs); err != nil {
				return nil, fmt.Errorf("sqlite: %s: change %d: decode cluster state: %w", op, c.ID, err)
			}
			c.Primary, c.Problems = cs.Primary, cs.Problems
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return out, nil
}

// pruneChanges deletes, within tx, the topology changes older than before
// but the newest of each instance and of each cluster's own records, so
// that the cluster at before can be rebuilt; an instance whose newest
// record then says it left is deleted whole (it was not in the cluster).
// A cluster that lost records gets a history start: the newest of those
// kept (and of the left ones deleted), from which the records kept rebuild
// it exactly. It returns how many changes it deleted.
func pruneChanges(ctx context.Context, tx *sql.Tx, before int64) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT k.cluster,
			(SELECT c.time FROM topology_changes c WHERE c.cluster = k.cluster AND c.norm_host = k.norm_host AND c.port = k.port AND c.time < ?1
				ORDER BY c.time DESC, c.id DESC LIMIT 1),
			(SELECT c.kind FROM topology_changes c WHERE c.cluster = k.cluster AND c.norm_host = k.norm_host AND c.port = k.port AND c.time < ?1
				ORDER BY c.time DESC, c.id DESC LIMIT 1),
			k.n
		FROM (SELECT cluster, norm_host, port, count(*) AS n FROM topology_changes WHERE time < ?1 GROUP BY cluster, norm_host, port) k`, before)
	if err != nil {
		return 0, err
	}
	since := map[string]int64{}
	for rows.Next() {
		var (
			cluster, kind string
			at            int64
			n             int
		)
		if err := rows.Scan(&cluster, &at, &kind, &n); err != nil {
			rows.Close()
			return 0, err
		}
		if n > 1 || kind == dbpilot.ChangeLeft { // this instance loses records
			since[cluster] = max(since[cluster], at)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for cluster, at := range since {
		if _, err := tx.ExecContext(ctx, `INSERT INTO topology_history_start (cluster, since) VALUES (?, ?)
			ON CONFLICT (cluster) DO UPDATE SET since = max(since, excluded.since)`, cluster, at); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, `WITH kept AS (
			SELECT (SELECT c.id FROM topology_changes c
				WHERE c.cluster = k.cluster AND c.norm_host = k.norm_host AND c.port = k.port AND c.time < ?1
				ORDER BY c.time DESC, c.id DESC LIMIT 1) AS id
			FROM (SELECT DISTINCT cluster, norm_host, port FROM topology_changes WHERE time < ?1) k)
		DELETE FROM topology_changes WHERE time < ?1 AND (kind = 'left' OR id NOT IN (SELECT id FROM kept))`, before)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// zeroTime is how encoding/json writes the zero time.
const zeroTime = "0001-01-01T00:00:00Z"

// compactJSON marshals v without its members of zero value (false, 0, "",
// the zero time): what decodes back to the same value, at about half the
// size of an Instance's JSON, whose members mostly have no omitempty.
// Objects and arrays are kept, empty or not (a non-nil pointer to a zero
// struct stays non-nil).
func compactJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(dropZeros(tree))
}

func dropZeros(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			switch y := m.(type) {
			case bool:
				if !y {
					delete(x, k)
				}
			case string:
				if y == "" || y == zeroTime {
					delete(x, k)
				}
			case json.Number:
				if f, err := y.Float64(); err == nil && f == 0 {
					delete(x, k)
				}
			case nil:
				delete(x, k)
			default:
				dropZeros(y)
			}
		}
	case []any:
		for _, e := range x {
			dropZeros(e)
		}
	}
	return v
}
