package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dbpilot/dbpilot"
)

// Migrations are migrations/NNNN_description.sql, numbered from 1 without
// gaps. A released migration is never edited: a change to the schema is a new
// file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads and checks the embedded migrations once.
var loadMigrations = sync.OnceValues(func() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("sqlite: migration %s: name must be NNNN_description.sql", base)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migration %s: want version %d (versions are numbered from 1 without gaps or duplicates)", m.name, i+1)
		}
	}
	return ms, nil
})

// SchemaVersion is the schema version this dbpilot writes: the number of the
// last embedded migration.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

const createSchemaVersion = `CREATE TABLE IF NOT EXISTS schema_version (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
)`

// migrate brings the schema up to date in one transaction.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return applyMigrations(ctx, db, path, ms)
}

// applyMigrations applies the migrations of ms newer than the file's version;
// ms[i] is version i+1.
func applyMigrations(ctx context.Context, db *sql.DB, path string, ms []migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return openError(path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, createSchemaVersion); err != nil {
		return openError(path, err)
	}
	cur, err := currentVersion(ctx, tx)
	if err != nil {
		return openError(path, err)
	}
	if cur > len(ms) {
		return newerError(path, cur, len(ms))
	}
	for _, m := range ms[cur:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %s: %w", path, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, strftime('%s', 'now') * 1000000000)`, m.version); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %s: %w", path, m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migrate %s: commit: %w", path, err)
	}
	return nil
}

// checkSchema verifies that a file opened read-only has exactly the schema
// this dbpilot knows.
func checkSchema(ctx context.Context, db *sql.DB, path string) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&n)
	if err != nil {
		return openError(path, err)
	}
	if n == 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "state file %s is not a dbpilot state file (no schema); check the path", path)
	}
	cur, err := currentVersion(ctx, db)
	if err != nil {
		return openError(path, err)
	}
	switch {
	case cur > len(ms):
		return newerError(path, cur, len(ms))
	case cur < len(ms):
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED,
			"state file %s has schema version %d, older than this dbpilot's %d; restart dbpilot serve with this version to upgrade it",
			path, cur, len(ms))
	}
	return nil
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func currentVersion(ctx context.Context, q queryRower) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

func newerError(path string, have, know int) error {
	return dbpilot.Errorf(dbpilot.EUNSUPPORTED,
		"state file %s has schema version %d, newer than this dbpilot knows (%d); use a newer dbpilot or another state file",
		path, have, know)
}

func openError(path string, err error) error {
	return fmt.Errorf("sqlite: open %s: %w", path, err)
}
