// Package backup is dbpilot's logical backup: a parallel dump that is
// consistent across all its threads and records the GTID position of its
// snapshot, a parallel and resumable restore, verification of a dump against
// a live server, and the manifest format that ties a dump directory together.
//
// A dump directory holds:
//
//	manifest.json              written last; its absence means "not a complete dump"
//	dump.incomplete            present while a dump runs or after one failed
//	schema/DB.sql              CREATE DATABASE
//	schema/DB.TABLE.sql        CREATE TABLE (or CREATE SEQUENCE)
//	schema/DB.views.sql, DB.routines.sql, DB.triggers.sql, DB.events.sql
//	schema/users.sql           CREATE USER and GRANT statements (--users)
//	data/DB.TABLE.NNNNN.tsv.zst  one file per chunk, LOAD DATA format
//	restore.progress           chunks a restore has committed (one per line)
//
// Names of databases and tables are encoded into file names (see fileName),
// the manifest maps them back.
package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/dbpilot/dbpilot"
)

// FormatVersion is the manifest format this dbpilot writes and the newest it
// reads.
const FormatVersion = 1

// File names inside a dump directory.
const (
	ManifestFile   = "manifest.json"
	IncompleteFile = "dump.incomplete"
	ProgressFile   = "restore.progress"
	schemaDir      = "schema"
	dataDir        = "data"
)

// Manifest describes a complete dump.
type Manifest struct {
	Format   int       `json:"format"`
	Tool     string    `json:"tool"`
	Server   Server    `json:"server"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Lock is the lock held while the threads opened their snapshots.
	Lock     Lock     `json:"lock"`
	Position Position `json:"position"`
	// Compression of the data files: "zstd" or "none".
	Compression string      `json:"compression"`
	Options     DumpRecord  `json:"options"`
	Databases   []Database  `json:"databases"`
	Tables      []*Table    `json:"tables"`
	Users       string      `json:"users,omitempty"` // schema file, with --users
	Warnings    []string    `json:"warnings,omitempty"`
	Totals      TotalsEntry `json:"totals"`
}

// Server is the dumped server.
type Server struct {
	Address  string          `json:"address"`
	Flavor   dbpilot.Flavor  `json:"flavor"`
	Version  dbpilot.Version `json:"version"`
	ServerID uint32          `json:"server_id"`
	Hostname string          `json:"hostname,omitempty"`
}

// Lock records which lock made the snapshots consistent and how long it was
// held.
type Lock struct {
	Kind   string        `json:"kind"` // "BACKUP STAGE BLOCK_COMMIT", "FLUSH TABLES WITH READ LOCK", "none"
	Held   time.Duration `json:"held_ns"`
	Waited time.Duration `json:"waited_ns"` // time taken to acquire it
}

// Position is where the dump's snapshot sits in the server's history.
type Position struct {
	// GTID is the position a replica provisioned from this dump starts
	// from: MariaDB, per domain the highest of gtid_binlog_pos and
	// gtid_slave_pos; MySQL, gtid_executed.
	GTID string `json:"gtid"`
	// Raw server values at the snapshot.
	GTIDBinlogPos  string `json:"gtid_binlog_pos,omitempty"`
	GTIDSlavePos   string `json:"gtid_slave_pos,omitempty"`
	GTIDCurrentPos string `json:"gtid_current_pos,omitempty"`
	GTIDExecuted   string `json:"gtid_executed,omitempty"`
	BinlogFile     string `json:"binlog_file,omitempty"`
	BinlogPos      uint64 `json:"binlog_position,omitempty"`
}

// DumpRecord is the dump's selection, kept for the record and for restore.
type DumpRecord struct {
	Threads   int               `json:"threads"`
	ChunkRows int64             `json:"chunk_rows"`
	Databases []string          `json:"databases,omitempty"`
	Include   []string          `json:"include,omitempty"`
	Exclude   []string          `json:"exclude,omitempty"`
	Where     map[string]string `json:"where,omitempty"`
	NoData    bool              `json:"no_data,omitempty"`
	Users     bool              `json:"users,omitempty"`
}

// Database is one dumped database and its schema files.
type Database struct {
	Name       string `json:"name"`
	SchemaFile string `json:"schema_file"`
	// Files of the objects created after the tables, in this order.
	Routines string `json:"routines_file,omitempty"`
	Views    string `json:"views_file,omitempty"`
	Triggers string `json:"triggers_file,omitempty"`
	Events   string `json:"events_file,omitempty"`
	// Names of the objects, so that a restore can replace them.
	ViewNames    []string `json:"views,omitempty"`
	RoutineNames []string `json:"routines,omitempty"` // "PROCEDURE p", "FUNCTION f"
	TriggerNames []string `json:"triggers,omitempty"`
	EventNames   []string `json:"events,omitempty"`
}

// Table is one dumped table.
type Table struct {
	DB         string `json:"db"`
	Name       string `json:"name"`
	SchemaFile string `json:"schema_file"`
	Engine     string `json:"engine,omitempty"`
	Sequence   bool   `json:"sequence,omitempty"`
	// Columns are the dumped columns in file order (generated columns are
	// not dumped; the server computes them).
	Columns []Column `json:"columns"`
	// Key is the index the chunks are cut along ("" when there is none)
	// and its columns.
	Key        string   `json:"key,omitempty"`
	KeyColumns []string `json:"key_columns,omitempty"`
	// Where is the user's --where condition, already part of each chunk's
	// predicate.
	Where  string   `json:"where,omitempty"`
	Chunks []*Chunk `json:"chunks"`
	Rows   int64    `json:"rows"`
	Bytes  int64    `json:"bytes"` // uncompressed data bytes
}

// Column is one dumped column: how it is selected and how it is loaded.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"` // COLUMN_TYPE
	// Select is the expression dumped ("" = the quoted column name); the
	// same expression feeds the row checksum.
	Select string `json:"select,omitempty"`
	// Load is the SET expression applied to the loaded user variable @v
	// ("" = load the value directly into the column).
	Load string `json:"load,omitempty"`
}

// Chunk is one data file: the rows of a table matching Where.
type Chunk struct {
	File string `json:"file"`
	// Where is the predicate that selects exactly this chunk's rows ("" =
	// all rows); restore uses it to clear a chunk before reloading it, and
	// verify to compare it with a live server.
	Where    string `json:"where,omitempty"`
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`     // uncompressed
	FileSize int64  `json:"file_size"` // on disk
	// FileCRC is the CRC-32C of the file as written, checked on restore.
	FileCRC uint32 `json:"file_crc32c"`
	// Sum is the row checksum of the chunk (see RowSum).
	Sum RowSum `json:"checksum"`
}

// RowSum is an order-independent checksum of a set of rows: for every row
// c = CRC32(CONCAT_WS('#', v1, ..., vn, CONCAT(ISNULL(v1), ..., ISNULL(vn)))),
// XOR and SUM of c over the rows. The server computes the same figures, so
// a dump can be compared with a live server without reading it back.
type RowSum struct {
	Xor uint32 `json:"xor"`
	Sum uint64 `json:"sum"`
}

// Add folds one row's CRC in.
func (s *RowSum) Add(c uint32) { s.Xor ^= c; s.Sum += uint64(c) }

// Merge folds another sum in.
func (s *RowSum) Merge(o RowSum) { s.Xor ^= o.Xor; s.Sum += o.Sum }

// TotalsEntry sums up a dump.
type TotalsEntry struct {
	Tables int   `json:"tables"`
	Chunks int   `json:"chunks"`
	Rows   int64 `json:"rows"`
	Bytes  int64 `json:"bytes"`
	Files  int64 `json:"file_bytes"`
}

// QualifiedName is `db`.`table`.
func (t *Table) QualifiedName() string { return QuoteIdent(t.DB) + "." + QuoteIdent(t.Name) }

// String is db.table for messages.
func (t *Table) String() string { return t.DB + "." + t.Name }

// ReadManifest reads and checks the manifest of the dump in dir. A missing
// directory is ENOTFOUND; a directory without a manifest is an incomplete
// dump (EINVALID, saying so when the incomplete marker is there) or not a
// dump at all; a manifest of a newer format is EUNSUPPORTED.
func ReadManifest(dir string) (*Manifest, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "backup: dump directory %s does not exist", dir)
	case err != nil:
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "backup: read dump directory %s", dir)
	case !st.IsDir():
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: %s is not a directory", dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		if marker, merr := os.ReadFile(filepath.Join(dir, IncompleteFile)); merr == nil {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: the dump in %s is incomplete (%s); it cannot be restored, dump again", dir, firstLine(string(marker)))
		}
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: %s is not a dbpilot dump (no %s)", dir, ManifestFile)
	}
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "backup: read manifest of %s", dir)
	}
	var probe struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(b, &probe); err != nil || probe.Format == nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: %s/%s is not a dbpilot manifest", dir, ManifestFile)
	}
	if *probe.Format > FormatVersion {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "backup: the dump in %s has manifest format %d, newer than this dbpilot reads (%d); use a newer dbpilot", dir, *probe.Format, FormatVersion)
	}
	if *probe.Format < 1 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: %s/%s has invalid format %d", dir, ManifestFile, *probe.Format)
	}
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "backup: parse manifest of %s", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, IncompleteFile)); err == nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "backup: the dump in %s is marked incomplete (%s exists)", dir, IncompleteFile)
	}
	return m, nil
}

// writeManifest writes the manifest atomically (temp file, fsync, rename).
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("backup: encode manifest: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("backup: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("backup: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("backup: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("backup: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("backup: write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	return nil
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
