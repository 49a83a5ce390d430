package backup

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// VerifyOptions configures verify.
type VerifyOptions struct {
	Dir       string
	Threads   int
	Databases []string
}

// VerifyReport is the comparison of a dump with a live server.
type VerifyReport struct {
	Server     string          `json:"server"`
	Tables     []TableVerdict  `json:"tables"`
	Chunks     int             `json:"chunks"`
	Mismatches int             `json:"mismatches"`
	Missing    []string        `json:"missing_tables,omitempty"`
	Details    []ChunkMismatch `json:"details,omitempty"`
}

// TableVerdict is one table's result.
type TableVerdict struct {
	Table      string `json:"table"`
	Rows       int64  `json:"rows"`
	ServerRows int64  `json:"server_rows"`
	OK         bool   `json:"ok"`
}

// ChunkMismatch is a chunk whose rows differ.
type ChunkMismatch struct {
	Table      string `json:"table"`
	Chunk      string `json:"chunk"`
	Rows       int64  `json:"rows"`
	ServerRows int64  `json:"server_rows"`
	Checksum   RowSum `json:"checksum"`
	ServerSum  RowSum `json:"server_checksum"`
}

// OK reports whether the server matches the dump.
func (r *VerifyReport) OK() bool { return r.Mismatches == 0 && len(r.Missing) == 0 }

// checksumSQL computes a chunk's row count and RowSum on the server, with
// the same expressions the dump used.
func checksumSQL(t *Table, c *Chunk) string {
	parts := make([]string, 0, len(t.Columns)+1)
	nulls := make([]string, 0, len(t.Columns))
	for _, col := range t.Columns {
		e := col.selectExpr()
		parts = append(parts, "CAST("+e+" AS BINARY)")
		nulls = append(nulls, "ISNULL("+e+")")
	}
	parts = append(parts, "CONCAT("+strings.Join(nulls, ", ")+")")
	row := "CRC32(CONCAT_WS('#', " + strings.Join(parts, ", ") + "))"
	q := "SELECT COUNT(*), COALESCE(BIT_XOR(" + row + "), 0), COALESCE(SUM(" + row + "), 0) FROM " + t.QualifiedName()
	if t.Key != "" && c.Where != "" && c.Where != t.Where {
		q += " FORCE INDEX (" + QuoteIdent(t.Key) + ")"
	}
	if c.Where != "" {
		q += " WHERE " + c.Where
	}
	return q
}

// Verify compares the row counts and per-chunk checksums of the dump in
// opt.Dir with the live server at key. The server should not be written to
// meanwhile (a restored copy, or a replica stopped at the dump's position).
func Verify(ctx context.Context, key dbpilot.InstanceKey, conn mysql.Options, opt VerifyOptions) (*VerifyReport, error) {
	if opt.Threads <= 0 {
		opt.Threads = defaultThreads
	}
	m, err := ReadManifest(opt.Dir)
	if err != nil {
		return nil, err
	}
	tables, _, err := selectForRestore(m, opt.Databases)
	if err != nil {
		return nil, err
	}
	sessions, closeAll, err := openSessions(ctx, key, conn, opt.Threads)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	for _, s := range sessions {
		if err := s.exec(ctx, "prepare session", "SET NAMES utf8mb4", "SET SESSION time_zone = '+00:00'", "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return nil, err
		}
	}
	rep := &VerifyReport{Server: key.String()}
	exists := map[string]bool{}
	if len(tables) > 0 {
		var dbs []string
		seen := map[string]bool{}
		for _, t := range tables {
			if !seen[t.DB] {
				seen[t.DB] = true
				dbs = append(dbs, t.DB)
			}
		}
		rows, _, err := sessions[0].query(ctx, "list tables", "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ("+inList(dbs)+")")
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			exists[str(r[0])+"."+str(r[1])] = true
		}
	}
	type job struct {
		t *Table
		c *Chunk
		i int
	}
	type result struct {
		rows int64
		sum  RowSum
	}
	results := map[*Chunk]result{}
	var mu sync.Mutex
	var firstErr error
	jobs := make(chan job)
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				mu.Lock()
				failed := firstErr != nil
				mu.Unlock()
				if failed {
					continue
				}
				rows, _, err := s.query(ctx, "checksum "+j.t.String(), checksumSQL(j.t, j.c))
				var res result
				if err == nil {
					res.rows, _ = strconv.ParseInt(str(rows[0][0]), 10, 64)
					x, _ := strconv.ParseUint(str(rows[0][1]), 10, 32)
					res.sum.Xor = uint32(x)
					res.sum.Sum, _ = strconv.ParseUint(str(rows[0][2]), 10, 64)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				results[j.c] = res
				mu.Unlock()
			}
		}()
	}
	for _, t := range tables {
		if t.Sequence {
			continue
		}
		if !exists[t.String()] {
			rep.Missing = append(rep.Missing, t.String())
			continue
		}
		for i, c := range t.Chunks {
			jobs <- job{t, c, i}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for _, t := range tables {
		if t.Sequence || !exists[t.String()] {
			continue
		}
		v := TableVerdict{Table: t.String(), Rows: t.Rows, OK: true}
		for _, c := range t.Chunks {
			rep.Chunks++
			got := results[c]
			v.ServerRows += got.rows
			if got.rows != c.Rows || got.sum != c.Sum {
				v.OK = false
				rep.Mismatches++
				rep.Details = append(rep.Details, ChunkMismatch{Table: t.String(), Chunk: c.File, Rows: c.Rows, ServerRows: got.rows, Checksum: c.Sum, ServerSum: got.sum})
			}
		}
		rep.Tables = append(rep.Tables, v)
	}
	return rep, nil
}

// String renders the report's outcome in one line.
func (r *VerifyReport) String() string {
	if r.OK() {
		return fmt.Sprintf("%s matches the dump: %d tables, %d chunks", r.Server, len(r.Tables), r.Chunks)
	}
	return fmt.Sprintf("%s differs from the dump: %d of %d chunks differ, %d tables missing", r.Server, r.Mismatches, r.Chunks, len(r.Missing))
}
