package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// DefaultRecoveryLimit is the number of recoveries returned when
// RecoveryFilter.Limit is 0.
const DefaultRecoveryLimit = 100

const recoveryColumns = `id, cluster, kind, old_host, old_port, new_host, new_port,
	detected_at, started, ended, success, error, plan, lost_replicas,
	acked, acked_at, acked_by, ack_comment, writes_open`

// recoveryArgs returns the values of every column of recoveryColumns but id
// and the ack columns.
func recoveryArgs(r *dbpilot.Recovery) ([]any, error) {
	var lost any
	if r.LostReplicas != nil {
		b, err := json.Marshal(r.LostReplicas)
		if err != nil {
			return nil, err
		}
		lost = string(b)
	}
	var ta timeArgs
	args := []any{
		r.Cluster, r.Kind, r.OldPrimary.Host, r.OldPrimary.Port, r.NewPrimary.Host, r.NewPrimary.Port,
		ta.arg(r.DetectedAt), ta.arg(r.Started), ta.arg(r.Ended), r.Success, r.Error, r.Plan, lost,
	}
	return args, ta.err
}

// CreateRecovery stores a new recovery and sets r.ID; a recovery that has
// an ID already (assigned by the serves' coordination) keeps it.
func (d *DB) CreateRecovery(ctx context.Context, r *dbpilot.Recovery) error {
	const op = "create recovery"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	if r == nil {
		return dbpilot.Errorf(dbpilot.EINTERNAL, "sqlite: %s: nil recovery", op)
	}
	args, err := recoveryArgs(r)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	var ta timeArgs
	args = append(args, r.Acked, ta.arg(r.AckedAt), r.AckedBy, r.AckComment, ta.arg(r.WritesOpen))
	if ta.err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, ta.err)
	}
	if r.ID != 0 {
		// An ID given by the serves' coordination (shared by every serve).
		_, err := d.db.ExecContext(ctx, `INSERT INTO recoveries (`+recoveryColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, append([]any{r.ID}, args...)...)
		if err != nil {
			return fmt.Errorf("sqlite: %s %d: %w", op, r.ID, err)
		}
		return nil
	}
	res, err := d.db.ExecContext(ctx, `INSERT INTO recoveries (`+strings.TrimPrefix(recoveryColumns, "id, ")+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	r.ID = id
	return nil
}

// UpdateRecovery replaces the stored recovery r.ID with r. It fails with
// ENOTFOUND for an unknown ID.
//
// An acknowledgement is never undone: once the recovery is acknowledged (by
// AckRecoveries, typically while the recovery still runs), its ack fields are
// kept whatever r says, and r's ack fields are refreshed from the store. So a
// recovery that finishes after a person acknowledged it stays acknowledged.
func (d *DB) UpdateRecovery(ctx context.Context, r *dbpilot.Recovery) error {
	const op = "update recovery"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	if r == nil {
		return dbpilot.Errorf(dbpilot.EINTERNAL, "sqlite: %s: nil recovery", op)
	}
	args, err := recoveryArgs(r)
	if err != nil {
		return fmt.Errorf("sqlite: %s %d: %w", op, r.ID, err)
	}
	var ta timeArgs
	args = append(args, ta.arg(r.WritesOpen), ta.arg(r.AckedAt), r.AckedBy, r.AckComment, r.Acked, r.ID)
	if ta.err != nil {
		return fmt.Errorf("sqlite: %s %d: %w", op, r.ID, ta.err)
	}
	// Every expression on the right sees the row as it was before the update.
	row := d.db.QueryRowContext(ctx, `UPDATE recoveries SET
			cluster = ?, kind = ?, old_host = ?, old_port = ?, new_host = ?, new_port = ?,
			detected_at = ?, started = ?, ended = ?, success = ?, error = ?, plan = ?, lost_replicas = ?,
			writes_open = ?,
			acked_at = CASE WHEN acked THEN acked_at ELSE ? END,
			acked_by = CASE WHEN acked THEN acked_by ELSE ? END,
			ack_comment = CASE WHEN acked THEN ack_comment ELSE ? END,
			acked = CASE WHEN acked THEN acked ELSE ? END
		WHERE id = ?
		RETURNING acked, acked_at, acked_by, ack_comment`, args...)
	var ackedAt sql.NullInt64
	var acked bool
	var by, comment string
	if err := row.Scan(&acked, &ackedAt, &by, &comment); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return dbpilot.Errorf(dbpilot.ENOTFOUND, "sqlite: %s: no recovery %d", op, r.ID)
		}
		return fmt.Errorf("sqlite: %s %d: %w", op, r.ID, err)
	}
	r.Acked, r.AckedAt, r.AckedBy, r.AckComment = acked, timeOf(ackedAt), by, comment
	return nil
}

// Recoveries returns recoveries newest (latest Started) first: those of
// f.Cluster (and with id f.ID when set), or of every cluster, at most f.Limit (DefaultRecoveryLimit when
// 0 or less).
func (d *DB) Recoveries(ctx context.Context, f dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error) {
	const op = "recoveries"
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultRecoveryLimit
	}
	q := `SELECT ` + recoveryColumns + ` FROM recoveries`
	var args []any
	var where []string
	if f.Cluster != "" {
		where = append(where, `cluster = ?`)
		args = append(args, f.Cluster)
	}
	if f.ID > 0 {
		where = append(where, `id = ?`)
		args = append(args, f.ID)
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY started DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	var out []*dbpilot.Recovery
	for rows.Next() {
		r, err := scanRecovery(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return out, nil
}

func scanRecovery(rows *sql.Rows) (*dbpilot.Recovery, error) {
	var (
		r                                       dbpilot.Recovery
		detected, started, ended, ackedAt, open sql.NullInt64
		lost                                    sql.NullString
	)
	err := rows.Scan(&r.ID, &r.Cluster, &r.Kind, &r.OldPrimary.Host, &r.OldPrimary.Port, &r.NewPrimary.Host, &r.NewPrimary.Port,
		&detected, &started, &ended, &r.Success, &r.Error, &r.Plan, &lost,
		&r.Acked, &ackedAt, &r.AckedBy, &r.AckComment, &open)
	if err != nil {
		return nil, err
	}
	r.DetectedAt, r.Started, r.Ended, r.AckedAt, r.WritesOpen = timeOf(detected), timeOf(started), timeOf(ended), timeOf(ackedAt), timeOf(open)
	if lost.Valid {
		if err := json.Unmarshal([]byte(lost.String), &r.LostReplicas); err != nil {
			return nil, fmt.Errorf("recovery %d: decode lost replicas: %w", r.ID, err)
		}
	}
	return &r, nil
}

// AckRecoveries acknowledges every unacknowledged recovery of cluster, now,
// and returns how many it acknowledged.
func (d *DB) AckRecoveries(ctx context.Context, cluster, by, comment string) (int, error) {
	const op = "ack recoveries"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return 0, werr
	}
	defer release()
	if cluster == "" {
		return 0, dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: cluster name is empty", op)
	}
	var ta timeArgs
	now := ta.arg(d.Now())
	if ta.err != nil {
		return 0, fmt.Errorf("sqlite: %s: %w", op, ta.err)
	}
	res, err := d.db.ExecContext(ctx, `UPDATE recoveries SET acked = 1, acked_at = ?, acked_by = ?, ack_comment = ?
		WHERE cluster = ? AND acked = 0`, now, by, comment, cluster)
	if err != nil {
		return 0, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return int(n), nil
}

// Prune deletes audit events, recoveries, resolved alerts and topology
// changes older than before, in one transaction; the newest recovery of
// each cluster stays, and so do the topology changes that make up each
// cluster at before (pruneChanges) (dbpilot.Pruner).
func (d *DB) Prune(ctx context.Context, before time.Time) (dbpilot.Pruned, error) {
	const op = "prune"
	var p dbpilot.Pruned
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return p, werr
	}
	defer release()
	if before.IsZero() {
		return p, errors.New("sqlite: prune: no time given")
	}
	t := sinceArg(before)
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return p, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer tx.Rollback()
	for _, s := range []struct {
		n    *int
		stmt string
	}{
		{&p.Audit, `DELETE FROM audit WHERE time < ?`},
		{&p.Recoveries, `DELETE FROM recoveries WHERE started < ?
			AND id NOT IN (SELECT MAX(id) FROM recoveries GROUP BY cluster)`},
		{&p.Alerts, `DELETE FROM alerts WHERE state = 'resolved' AND resolved_at < ?`},
	} {
		res, err := tx.ExecContext(ctx, s.stmt, t)
		if err != nil {
			return p, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return p, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		*s.n = int(n)
	}
	if p.Changes, err = pruneChanges(ctx, tx, t); err != nil {
		return p, fmt.Errorf("sqlite: %s: topology changes: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return p, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return p, nil
}
