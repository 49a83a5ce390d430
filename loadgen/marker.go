package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The marker table lists every table a prepare created, with the workload
// that created it, so that cleanup drops those tables and nothing else:
// not a table of the same name created by someone else, nor one left by
// sysbench or LinkBench. It lives in the current database of the
// connection, next to the workload's tables.
//
// When prepare creates the marker table itself it records that too (a row
// for MarkerTable under markerSelf), so that cleanup can drop the marker
// table once no workload's tables are left in it.

// markerSelf is the workload of the marker table's own row.
const markerSelf = "dbpilot"

// markerCreateSQL creates the marker table.
const markerCreateSQL = "CREATE TABLE IF NOT EXISTS " + MarkerTable + " (" +
	"workload VARCHAR(64) NOT NULL, " +
	"table_name VARCHAR(64) NOT NULL, " +
	"created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), " +
	"PRIMARY KEY (table_name)) ENGINE=InnoDB"

// ddlTimeout bounds one DDL or bookkeeping statement of prepare and
// cleanup; loadTimeout bounds one bulk INSERT or index build.
const (
	ddlTimeout  = 30 * time.Second
	loadTimeout = 10 * time.Minute
)

// execTimeout runs one statement on db bounded by d.
func execTimeout(ctx context.Context, db *sql.DB, d time.Duration, query string, args ...any) (sql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return db.ExecContext(ctx, query, args...)
}

// currentDatabase returns the connection's current database; prepare and
// cleanup refuse to work without one.
func currentDatabase(ctx context.Context, db *sql.DB) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	var name sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		return "", fmt.Errorf("bench: read the current database: %w", err)
	}
	if !name.Valid || name.String == "" {
		return "", errors.New("bench: no database selected; name one in the connection (--database)")
	}
	return name.String, nil
}

// tableExists reports whether table exists in the current database.
func tableExists(ctx context.Context, db *sql.DB, table string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	var n int
	err := db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("bench: look for table %s: %w", table, err)
	}
	return n > 0, nil
}

// checkTables refuses to prepare over existing tables unless force, in
// which case it drops them. db is the database's name, for the message.
func checkTables(ctx context.Context, db *sql.DB, dbName string, tables []string, force bool) error {
	for _, t := range tables {
		ok, err := tableExists(ctx, db, t)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !force {
			return fmt.Errorf("bench prepare: table %s exists in %s; --force drops and recreates it", t, dbName)
		}
		if _, err := execTimeout(ctx, db, ddlTimeout, "DROP TABLE IF EXISTS "+quoteIdent(t)); err != nil {
			return fmt.Errorf("bench prepare: drop %s: %w", t, err)
		}
		if err := unmarkTable(ctx, db, t); err != nil {
			return err
		}
	}
	return nil
}

// ensureMarker creates the marker table when it is missing and then
// records it as created by prepare.
func ensureMarker(ctx context.Context, db *sql.DB) error {
	had, err := tableExists(ctx, db, MarkerTable)
	if err != nil {
		return err
	}
	if had {
		return nil
	}
	if _, err := execTimeout(ctx, db, ddlTimeout, markerCreateSQL); err != nil {
		return fmt.Errorf("bench prepare: create %s: %w", MarkerTable, err)
	}
	if _, err := execTimeout(ctx, db, ddlTimeout,
		"INSERT IGNORE INTO "+MarkerTable+" (workload, table_name) VALUES (?, ?)", markerSelf, MarkerTable); err != nil {
		return fmt.Errorf("bench prepare: record %s: %w", MarkerTable, err)
	}
	return nil
}

// MarkTable records in the marker table (creating it if needed) that
// workload created table, so that the cleanup of workload's family drops
// it. Prepare records its own tables; a run that creates a table for a
// workload (LedgerTable) records it here too.
func MarkTable(ctx context.Context, db *sql.DB, workload, table string) error {
	if err := ensureMarker(ctx, db); err != nil {
		return err
	}
	_, err := execTimeout(ctx, db, ddlTimeout,
		"REPLACE INTO "+MarkerTable+" (workload, table_name) VALUES (?, ?)", workload, table)
	if err != nil {
		return fmt.Errorf("bench: record %s in %s: %w", table, MarkerTable, err)
	}
	return nil
}

// unmarkTable forgets table (no error when the marker table is missing).
func unmarkTable(ctx context.Context, db *sql.DB, table string) error {
	ok, err := tableExists(ctx, db, MarkerTable)
	if err != nil || !ok {
		return err
	}
	if _, err := execTimeout(ctx, db, ddlTimeout, "DELETE FROM "+MarkerTable+" WHERE table_name = ?", table); err != nil {
		return fmt.Errorf("bench: forget %s in %s: %w", table, MarkerTable, err)
	}
	return nil
}

// markedTables lists the tables the marker table records for any of
// workloads, in the order they were created (none when it is missing).
func markedTables(ctx context.Context, db *sql.DB, workloads []string) ([]string, error) {
	ok, err := tableExists(ctx, db, MarkerTable)
	if err != nil || !ok || len(workloads) == 0 {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	args := make([]any, len(workloads))
	for i, w := range workloads {
		args[i] = w
	}
	q := "SELECT table_name FROM " + MarkerTable + " WHERE workload IN (?" + strings.Repeat(", ?", len(workloads)-1) +
		") AND table_name <> ? ORDER BY created_at, table_name"
	args = append(args, MarkerTable)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("bench: read %s: %w", MarkerTable, err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("bench: read %s: %w", MarkerTable, err)
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bench: read %s: %w", MarkerTable, err)
	}
	return tables, nil
}

// cleanupFamily drops the tables the marker table lists for workloads,
// then their rows, then the marker table when prepare created it and
// nothing else is listed. Tables the marker table does not list are never
// touched.
func cleanupFamily(ctx context.Context, db *sql.DB, workloads []string) error {
	if _, err := currentDatabase(ctx, db); err != nil {
		return err
	}
	tables, err := markedTables(ctx, db, workloads)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := execTimeout(ctx, db, ddlTimeout, "DROP TABLE IF EXISTS "+quoteIdent(t)); err != nil {
			return fmt.Errorf("bench cleanup: drop %s: %w", t, err)
		}
		if err := unmarkTable(ctx, db, t); err != nil {
			return err
		}
	}
	return dropMarkerIfEmpty(ctx, db)
}

// dropMarkerIfEmpty drops the marker table when its only row is its own
// (prepare created it and every listed table is gone).
func dropMarkerIfEmpty(ctx context.Context, db *sql.DB) error {
	ok, err := tableExists(ctx, db, MarkerTable)
	if err != nil || !ok {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, ddlTimeout)
	defer cancel()
	var others, self int
	err = db.QueryRowContext(qctx,
		"SELECT COALESCE(SUM(table_name <> ?), 0), COALESCE(SUM(table_name = ? AND workload = ?), 0) FROM "+MarkerTable,
		MarkerTable, MarkerTable, markerSelf).Scan(&others, &self)
	if err != nil {
		return fmt.Errorf("bench cleanup: read %s: %w", MarkerTable, err)
	}
	if others > 0 || self == 0 {
		return nil
	}
	if _, err := execTimeout(ctx, db, ddlTimeout, "DROP TABLE IF EXISTS "+MarkerTable); err != nil {
		return fmt.Errorf("bench cleanup: drop %s: %w", MarkerTable, err)
	}
	return nil
}

// quoteIdent quotes a table name for MySQL.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}
