package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// DefaultAuditLimit is the number of audit events returned when
// AuditFilter.Limit is 0.
const DefaultAuditLimit = 1000

// Audit appends e to the audit log; a zero e.Time means now. e.ID is
// assigned by the store and ignored here.
func (d *DB) Audit(ctx context.Context, e dbpilot.AuditEvent) error {
	const op = "audit"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	if e.Time.IsZero() {
		e.Time = d.Now()
	}
	var detail any
	if e.Detail != nil {
		b, err := json.Marshal(e.Detail)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		detail = string(b)
	}
	var ta timeArgs
	at := ta.arg(e.Time)
	if ta.err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, ta.err)
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO audit (time, cluster, recovery_id, host, port, event, message, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		at, e.Cluster, e.RecoveryID, e.Instance.Host, e.Instance.Port, e.Event, e.Message, detail)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return nil
}

// AuditEvents returns the audit events that match f, oldest first. When more
// than f.Limit (DefaultAuditLimit when 0 or less) match, it returns the latest
// f.Limit of them, as a tail does; a reader that follows the log passes the
// time of the last event it saw as f.Since.
func (d *DB) AuditEvents(ctx context.Context, f dbpilot.AuditFilter) ([]dbpilot.AuditEvent, error) {
	const op = "audit events"
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	var where []string
	var args []any
	if f.Cluster != "" {
		where = append(where, "cluster = ?")
		args = append(args, f.Cluster)
	}
	if f.RecoveryID != 0 {
		where = append(where, "recovery_id = ?")
		args = append(args, f.RecoveryID)
	}
	if !f.Since.IsZero() {
		where = append(where, "time >= ?")
		args = append(args, sinceArg(f.Since))
	}
	inner := `SELECT id, time, cluster, recovery_id, host, port, event, message, detail FROM audit`
	if len(where) > 0 {
		inner += " WHERE " + strings.Join(where, " AND ")
	}
	inner += " ORDER BY time DESC, id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := d.db.QueryContext(ctx, `SELECT * FROM (`+inner+`) ORDER BY time, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	var out []dbpilot.AuditEvent
	for rows.Next() {
		var (
			e      dbpilot.AuditEvent
			at     sql.NullInt64
			detail sql.NullString
		)
		if err := rows.Scan(&e.ID, &at, &e.Cluster, &e.RecoveryID, &e.Instance.Host, &e.Instance.Port,
			&e.Event, &e.Message, &detail); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		e.Time = timeOf(at)
		if detail.Valid {
			if err := json.Unmarshal([]byte(detail.String), &e.Detail); err != nil {
				return nil, fmt.Errorf("sqlite: %s: event %d: decode detail: %w", op, e.ID, err)
			}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return out, nil
}
