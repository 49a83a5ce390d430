// Package sqlite keeps what dbpilot serve knows across restarts (instances
// seen, recoveries and the audit log) in one SQLite file. DB implements
// dbpilot.StateStore.
//
// It uses modernc.org/sqlite, a pure Go SQLite, so dbpilot stays one static
// binary. The schema is embedded as numbered migrations and applied by Open.
//
// One serve owns a state file: Open takes an exclusive lock on PATH.lock and
// refuses a file that another process holds. OpenReadOnly takes no lock, so
// the CLI can read recoveries and the audit log while serve runs.
//
// Times are stored as UTC Unix nanoseconds (NULL for the zero time) and come
// back in UTC, equal to what was stored.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/dbpilot/dbpilot"
)

// BusyTimeout is how long a statement waits for a lock held by another
// connection before it fails.
const BusyTimeout = 5 * time.Second

// openTimeout bounds the checks and migrations run by Open.
const openTimeout = 30 * time.Second

// DB is a dbpilot state file.
type DB struct {
	db       *sql.DB
	path     string
	readOnly bool
	lock     *os.File // held by Open until Close; nil for OpenReadOnly

	// Now returns the current time; tests may replace it.
	Now func() time.Time

	// wlock serializes this process' write transactions. SQLite allows
	// one writer at a time; without it concurrent writers queue in
	// SQLite's busy handler, which polls with growing sleeps and starves
	// some of them past BusyTimeout (SQLITE_BUSY) when many clusters save
	// at once. Waiting here is first come, first served, and ends with ctx.
	wlock chan struct{}

	closeOnce sync.Once
	closeErr  error
}

var _ dbpilot.StateStore = (*DB)(nil)

// Open opens the state file at path for reading and writing, creating it
// (mode 0600, parent directories 0700) and migrating its schema as needed.
//
// It fails with ECONFLICT while another process (or another DB in this
// process) has the file open with Open, and with EUNSUPPORTED for a file
// written by a newer dbpilot.
func Open(path string) (*DB, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sqlite: cannot create the state directory")
	}
	lock, err := lockFile(path+".lock", path)
	if err != nil {
		return nil, err
	}
	d, err := open(path, false, lock)
	if err != nil {
		unlockFile(lock)
		return nil, err
	}
	return d, nil
}

// OpenReadOnly opens an existing state file for reading without taking the
// serve lock, so that the CLI can read it while serve runs. Write methods of
// the returned DB fail.
//
// It fails with ENOTFOUND when the file does not exist and with EUNSUPPORTED
// when its schema is not the one this dbpilot knows (written by an older or a
// newer dbpilot).
func OpenReadOnly(path string) (*DB, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "state file %s does not exist: has dbpilot serve run with it?", path)
		}
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sqlite: cannot read the state file")
	}
	return open(path, true, nil)
}

func checkPath(path string) error {
	if path == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: state file path is empty")
	}
	// The driver reads everything after '?' as connection parameters.
	if strings.ContainsRune(path, '?') {
		return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: state file path %q contains '?'; choose another path", path)
	}
	return nil
}

func open(path string, readOnly bool, lock *os.File) (*DB, error) {
	params := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds()),
		"_pragma=foreign_keys(1)",
	}
	if readOnly {
		params = append(params, "_pragma=query_only(1)")
	} else {
		// Create the file ourselves so that it gets mode 0600; SQLite gives
		// the -wal and -shm files the mode of the database file.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sqlite: cannot create the state file")
		}
		if err := f.Close(); err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "sqlite: cannot create the state file")
		}
		params = append(params,
			"_pragma=journal_mode(WAL)",
			// Write transactions take the write lock when they begin, so that
			// concurrent writers wait (busy_timeout) instead of failing on
			// a lock upgrade.
			"_txlock=immediate",
		)
	}
	db, err := sql.Open("sqlite", path+"?"+strings.Join(params, "&"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	d := &DB{db: db, path: path, readOnly: readOnly, lock: lock, Now: time.Now, wlock: make(chan struct{}, 1)}

	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	if readOnly {
		err = checkSchema(ctx, db, path)
	} else {
		err = migrate(ctx, db, path)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

// Path returns the state file's path.
func (d *DB) Path() string { return d.path }

// Close closes the database and releases the serve lock.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		if err := d.db.Close(); err != nil {
			d.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
		if d.lock != nil {
			unlockFile(d.lock)
		}
	})
	return d.closeErr
}

// writable fails for a DB opened with OpenReadOnly.
func (d *DB) writable(op string) error {
	if d.readOnly {
		return dbpilot.Errorf(dbpilot.EINTERNAL, "sqlite: %s: state file %s is open read-only", op, d.path)
	}
	return nil
}

// beginWrite waits for this process' turn to write (see wlock) and
// returns the function that ends it; it fails for a read-only DB, and
// when ctx ends first.
func (d *DB) beginWrite(ctx context.Context, op string) (release func(), err error) {
	if err := d.writable(op); err != nil {
		return nil, err
	}
	select {
	case d.wlock <- struct{}{}:
		return func() { <-d.wlock }, nil
	case <-ctx.Done():
		return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, ctx.Err(), "sqlite: %s: wait for the state file's writer", op)
	}
}

// Times are stored as Unix nanoseconds, which cover the years 1678 to 2262.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// timeArgs converts times to SQL arguments and remembers the first that cannot
// be stored.
type timeArgs struct{ err error }

// arg returns nil (NULL) for the zero time, else t in Unix nanoseconds.
func (a *timeArgs) arg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		if a.err == nil {
			a.err = dbpilot.Errorf(dbpilot.EINVALID, "time %s out of range (years 1678 to 2262)", t.Format(time.RFC3339Nano))
		}
		return nil
	}
	return t.UnixNano()
}

// sinceArg returns t in Unix nanoseconds for a lower bound, clamped to the
// range that can be stored (the zero time matches everything).
func sinceArg(t time.Time) int64 {
	switch {
	case t.IsZero() || t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// timeOf converts a stored time back.
func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
