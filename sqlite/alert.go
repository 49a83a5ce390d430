package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/dbpilot/dbpilot"
)

// DefaultAlertLimit is the number of alerts returned when AlertFilter.Limit
// is 0.
const DefaultAlertLimit = 500

var _ dbpilot.AlertStore = (*DB)(nil)

const alertColumns = `id, rule, severity, state, cluster, labels, summary, value,
	active_at, fired_at, resolved_at, suppressed`

// SaveAlert stores a new alert (ID 0), setting a.ID, or replaces the stored
// alert a.ID. It fails with ENOTFOUND for an unknown ID and with EINVALID for
// an alert without a rule, with an unknown state or with a value that is not
// finite (the API's JSON cannot carry NaN or infinities).
func (d *DB) SaveAlert(ctx context.Context, a *dbpilot.Alert) error {
	const op = "save alert"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	if a == nil {
		return dbpilot.Errorf(dbpilot.EINTERNAL, "sqlite: %s: nil alert", op)
	}
	if a.Rule == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: the alert has no rule", op)
	}
	switch a.State {
	case dbpilot.AlertPending, dbpilot.AlertFiring, dbpilot.AlertResolved:
	default:
		return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: unknown state %q (want pending, firing or resolved)", op, a.State)
	}
	labels := a.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	lb, err := json.Marshal(labels)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if math.IsNaN(a.Value) || math.IsInf(a.Value, 0) {
		return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: value %v is not finite (JSON cannot carry it)", op, a.Value)
	}
	var ta timeArgs
	args := []any{a.Rule, a.Severity, a.State, labels["cluster"], string(lb), a.Summary, a.Value,
		ta.arg(a.ActiveAt), ta.arg(a.FiredAt), ta.arg(a.ResolvedAt), a.Suppressed}
	if ta.err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, ta.err)
	}
	if a.ID == 0 {
		res, err := d.db.ExecContext(ctx, `INSERT INTO alerts (rule, severity, state, cluster, labels, summary, value,
				active_at, fired_at, resolved_at, suppressed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		a.ID = id
		return nil
	}
	res, err := d.db.ExecContext(ctx, `UPDATE alerts SET rule = ?, severity = ?, state = ?, cluster = ?, labels = ?,
			summary = ?, value = ?, active_at = ?, fired_at = ?, resolved_at = ?, suppressed = ?
		WHERE id = ?`, append(args, a.ID)...)
	if err != nil {
		return fmt.Errorf("sqlite: %s %d: %w", op, a.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: %s %d: %w", op, a.ID, err)
	}
	if n == 0 {
		return dbpilot.Errorf(dbpilot.ENOTFOUND, "sqlite: %s: no alert %d", op, a.ID)
	}
	return nil
}

// Alerts returns alerts newest (latest ActiveAt) first: those of f.Cluster
// (the cluster label), in f.State, active at some time since f.Since (still
// unresolved, or resolved at or after it), firing at f.FiringAt (fired at
// or before it, not resolved by then), at most f.Limit (DefaultAlertLimit
// when 0 or less).
func (d *DB) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	const op = "alerts"
	switch f.State {
	case "", dbpilot.AlertPending, dbpilot.AlertFiring, dbpilot.AlertResolved:
	default:
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "unknown alert state %q: want pending, firing or resolved", f.State)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAlertLimit
	}
	q := `SELECT ` + alertColumns + ` FROM alerts WHERE 1 = 1`
	var args []any
	if f.Cluster != "" {
		q += ` AND cluster = ?`
		args = append(args, f.Cluster)
	}
	switch f.State {
	case "":
	case dbpilot.AlertResolved:
		q += ` AND state = ?`
		args = append(args, f.State)
	default:
		// Spelled so that the partial index on unresolved alerts serves it.
		q += ` AND state != 'resolved' AND state = ?`
		args = append(args, f.State)
	}
	if !f.Since.IsZero() {
		q += ` AND (resolved_at IS NULL OR resolved_at >= ?)`
		args = append(args, sinceArg(f.Since))
	}
	if !f.FiringAt.IsZero() {
		at := sinceArg(f.FiringAt)
		q += ` AND fired_at IS NOT NULL AND fired_at <= ? AND (resolved_at IS NULL OR resolved_at > ?)`
		args = append(args, at, at)
	}
	q += ` ORDER BY active_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	out := []*dbpilot.Alert{}
	for rows.Next() {
		a, err := scanAlert(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return out, nil
}

func scanAlert(rows *sql.Rows) (*dbpilot.Alert, error) {
	var (
		a                         dbpilot.Alert
		cluster, labels           string
		active, fired, resolvedAt sql.NullInt64
	)
	err := rows.Scan(&a.ID, &a.Rule, &a.Severity, &a.State, &cluster, &labels, &a.Summary, &a.Value,
		&active, &fired, &resolvedAt, &a.Suppressed)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(labels), &a.Labels); err != nil {
		return nil, fmt.Errorf("alert %d: decode labels: %w", a.ID, err)
	}
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	a.ActiveAt, a.FiredAt, a.ResolvedAt = timeOf(active), timeOf(fired), timeOf(resolvedAt)
	return &a, nil
}
