package loadgen

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
)

// LedgerCreateSQL creates the ledger table (a failover run creates it on
// the primary before the load starts; it replicates like the workload).
const LedgerCreateSQL = "CREATE TABLE IF NOT EXISTS " + LedgerTable + " (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB"

// Next returns a new id for a write transaction, 0 for a nil ledger (no
// ledger row is written then).
func (l *Ledger) Next() uint64 {
	if l == nil {
		return 0
	}
	return l.next.Add(1)
}

// InsertSQL is the statement a write transaction runs, inside the
// transaction, to record id ("" for id 0).
func InsertSQL(id uint64) string {
	if id == 0 {
		return ""
	}
	return "INSERT INTO " + LedgerTable + " (id) VALUES (" + strconv.FormatUint(id, 10) + ")"
}

// Ack records that the transaction carrying id committed without error:
// the client was told its write is durable.
func (l *Ledger) Ack(id uint64) {
	if l == nil || id == 0 {
		return
	}
	l.mu.Lock()
	l.acked = append(l.acked, id)
	l.mu.Unlock()
}

// Acked returns how many writes were acknowledged.
func (l *Ledger) Acked() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.acked))
}

// Lost reads the ids db holds (the new primary, after the event) and
// returns how many acknowledged writes it lacks and up to 10 of their ids.
func (l *Ledger) Lost(ctx context.Context, db *sql.DB) (lost int64, sample []uint64, err error) {
	if l == nil {
		return 0, nil, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT id FROM "+LedgerTable)
	if err != nil {
		return 0, nil, fmt.Errorf("bench: read %s: %w", LedgerTable, err)
	}
	defer rows.Close()
	have := map[uint64]struct{}{}
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			return 0, nil, fmt.Errorf("bench: read %s: %w", LedgerTable, err)
		}
		have[id] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("bench: read %s: %w", LedgerTable, err)
	}
	l.mu.Lock()
	acked := slices.Clone(l.acked)
	l.mu.Unlock()
	slices.Sort(acked)
	for _, id := range acked {
		if _, ok := have[id]; !ok {
			lost++
			if len(sample) < 10 {
				sample = append(sample, id)
			}
		}
	}
	return lost, sample, nil
}
