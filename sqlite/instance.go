package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
)

// SaveInstances records the latest observation of each instance of cluster.
// An instance's last_seen is its ObservedAt (now when zero); first_seen is
// kept from the first save. Instances are keyed by their normalized key, so
// one server saved as localhost:3306 and as 127.0.0.1:3306 is one row. Nil
// entries are skipped.
func (d *DB) SaveInstances(ctx context.Context, cluster string, instances []*dbpilot.Instance) error {
	const op = "save instances"
	// The rows are made before the write turn is taken: it is held only
	// for the statements.
	type row struct {
		norm, key dbpilot.InstanceKey
		at        any
		obs       string
	}
	rows := make([]row, 0, len(instances))
	now := d.Now()
	for _, inst := range instances {
		if inst == nil {
			continue
		}
		obs, err := json.Marshal(inst)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %s: %w", op, inst.Key, err)
		}
		seen := inst.ObservedAt
		if seen.IsZero() {
			seen = now
		}
		var ta timeArgs
		at := ta.arg(seen)
		if ta.err != nil {
			return fmt.Errorf("sqlite: %s: %s: %w", op, inst.Key, ta.err)
		}
		rows = append(rows, row{inst.Key.Normalized(), inst.Key, at, string(obs)})
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
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `
		INSERT INTO instances (cluster, norm_host, host, port, first_seen, last_seen, observation)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (cluster, norm_host, port) DO UPDATE SET
			host = excluded.host,
			last_seen = excluded.last_seen,
			observation = excluded.observation`)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, cluster, r.norm.Host, r.key.Host, r.key.Port, r.at, r.at, r.obs); err != nil {
			return fmt.Errorf("sqlite: %s: %s: %w", op, r.key, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return nil
}

// KnownInstances returns the last observation of each instance of cluster
// seen at or after since (the zero time: all), ordered by host and port.
func (d *DB) KnownInstances(ctx context.Context, cluster string, since time.Time) ([]*dbpilot.Instance, error) {
	const op = "known instances"
	rows, err := d.db.QueryContext(ctx, `
		SELECT observation FROM instances
		WHERE cluster = ? AND last_seen >= ?
		ORDER BY norm_host, port`, cluster, sinceArg(since))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	var out []*dbpilot.Instance
	for rows.Next() {
		var obs string
		if err := rows.Scan(&obs); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		inst := new(dbpilot.Instance)
		if err := json.Unmarshal([]byte(obs), inst); err != nil {
			return nil, fmt.Errorf("sqlite: %s: decode observation: %w", op, err)
		}
		out = append(out, inst)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return out, nil
}

// ForgetInstance removes an instance from cluster; the key is compared
// normalized. Forgetting an unknown instance is not an error.
func (d *DB) ForgetInstance(ctx context.Context, cluster string, key dbpilot.InstanceKey) error {
	const op = "forget instance"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	norm := key.Normalized()
	if _, err := d.db.ExecContext(ctx, `DELETE FROM instances WHERE cluster = ? AND norm_host = ? AND port = ?`,
		cluster, norm.Host, norm.Port); err != nil {
		return fmt.Errorf("sqlite: %s: %s: %w", op, key, err)
	}
	return nil
}
