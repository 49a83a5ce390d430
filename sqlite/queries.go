package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// DefaultQueryLimit is the number of digests a query report has when
// QueryFilter.Limit is 0; MaxQueryLimit the most it may ask for.
const (
	DefaultQueryLimit = 20
	MaxQueryLimit     = 10000
)

// DefaultQuerySpan is the span of a query report without a start.
const DefaultQuerySpan = time.Hour

var _ dbpilot.QueryRecorder = (*DB)(nil)
var _ dbpilot.QueryService = (*DB)(nil)

// minuteOf is the start of t's minute in Unix seconds.
func minuteOf(t time.Time) int64 { return t.Unix() - t.Unix()%60 }

// RecordQueries stores one interval of a statements collector: the
// digests that ran, added to the bucket of the minute the interval ended
// in, their text and example, and the instance's source.
func (d *DB) RecordQueries(ctx context.Context, iv dbpilot.QueryInterval) error {
	return d.RecordQueryBatch(ctx, []dbpilot.QueryInterval{iv})
}

// RecordQueryBatch stores intervals of any instances in one transaction:
// serve gathers every instance's intervals and writes them once a second,
// so that a fleet's query statistics are one write, not one per instance
// (a thousand instances' transactions kept SQLite's one writer busy, and
// the state saves behind it failed with SQLITE_BUSY).
func (d *DB) RecordQueryBatch(ctx context.Context, ivs []dbpilot.QueryInterval) error {
	const op = "record queries"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return werr
	}
	defer release()
	if len(ivs) == 0 {
		return nil
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	for _, iv := range ivs {
		if err := d.recordInterval(ctx, tx, iv); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return nil
}

// recordInterval writes one interval within tx.
func (d *DB) recordInterval(ctx context.Context, tx *sql.Tx, iv dbpilot.QueryInterval) error {
	const op = "record queries"
	if iv.Source.Instance == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "sqlite: %s: no instance", op)
	}
	end := iv.End
	if end.IsZero() {
		end = d.Now()
	}
	var ta timeArgs
	at := ta.arg(end)
	if ta.err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, ta.err)
	}
	minute := minuteOf(end)
	src := iv.Source
	full := 0
	if src.Full {
		full = 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO query_sources (instance, cluster, source, detail, capacity, digests, lost_digests, full, at, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (instance) DO UPDATE SET cluster = excluded.cluster, source = excluded.source, detail = excluded.detail,
			capacity = excluded.capacity, digests = excluded.digests, lost_digests = excluded.lost_digests, full = excluded.full,
			at = excluded.at, error = excluded.error`,
		src.Instance, src.Cluster, src.Source, src.Detail, src.Capacity, src.Digests, int64(src.LostDigests), full, at, src.Error); err != nil {
		return fmt.Errorf("sqlite: %s: source of %s: %w", op, src.Instance, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO query_source_minutes (instance, minute, lost) VALUES (?, ?, ?)
		ON CONFLICT (instance, minute) DO UPDATE SET lost = lost + excluded.lost`, src.Instance, minute, int64(src.LostInSpan)); err != nil {
		return fmt.Errorf("sqlite: %s: lost digests of %s: %w", op, src.Instance, err)
	}
	if len(iv.Stats) > 0 {
		stat, err := tx.PrepareContext(ctx, `INSERT INTO query_stats (instance, minute, schema_name, digest, count, total_ps, max_ps,
			rows_examined, rows_sent, errors, warnings, no_index_used, tmp_disk_tables, sort_merge_passes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (instance, minute, schema_name, digest) DO UPDATE SET count = count + excluded.count,
				total_ps = total_ps + excluded.total_ps, max_ps = max(max_ps, excluded.max_ps),
				rows_examined = rows_examined + excluded.rows_examined, rows_sent = rows_sent + excluded.rows_sent,
				errors = errors + excluded.errors, warnings = warnings + excluded.warnings,
				no_index_used = no_index_used + excluded.no_index_used, tmp_disk_tables = tmp_disk_tables + excluded.tmp_disk_tables,
				sort_merge_passes = sort_merge_passes + excluded.sort_merge_passes`)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		defer stat.Close()
		text, err := tx.PrepareContext(ctx, `INSERT INTO query_digests (instance, schema_name, digest, digest_text, example, first_seen, last_seen)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (instance, schema_name, digest) DO UPDATE SET last_seen = excluded.last_seen,
				digest_text = CASE WHEN excluded.digest_text != '' THEN excluded.digest_text ELSE digest_text END,
				example = CASE WHEN excluded.example != '' THEN excluded.example ELSE example END`)
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		defer text.Close()
		for _, s := range iv.Stats {
			if s.Count == 0 {
				continue
			}
			if _, err := stat.ExecContext(ctx, src.Instance, minute, s.Schema, s.Digest, clampInt(s.Count), msToPS(s.TotalMS), msToPS(s.MaxMS),
				clampInt(s.RowsExamined), clampInt(s.RowsSent), clampInt(s.Errors), clampInt(s.Warnings), clampInt(s.NoIndexUsed),
				clampInt(s.TmpDiskTables), clampInt(s.SortMergePasses)); err != nil {
				return fmt.Errorf("sqlite: %s: digest %s on %s: %w", op, s.Digest, src.Instance, err)
			}
			if _, err := text.ExecContext(ctx, src.Instance, s.Schema, s.Digest, s.DigestText, s.Example, at, at); err != nil {
				return fmt.Errorf("sqlite: %s: digest text %s on %s: %w", op, s.Digest, src.Instance, err)
			}
		}
	}
	return nil
}

// clampInt stores a counter; SQLite integers are signed 64-bit.
func clampInt(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}

// msToPS converts milliseconds back to the picoseconds stored.
func msToPS(ms float64) int64 {
	ps := ms * 1e9
	if ps >= 9.2e18 {
		return 1<<63 - 1
	}
	if ps < 0 {
		return 0
	}
	return int64(ps + 0.5)
}

// Queries returns the top digests over f's span, summed from the minute
// buckets the span touches (its start is rounded down to the minute), and
// the sources of the instances it covers. The report's Since is that
// rounded start and its Until the span's end (now, or the latest
// collection when that is earlier), so rates over it are right.
func (d *DB) Queries(ctx context.Context, f dbpilot.QueryFilter) (*dbpilot.QueryReport, error) {
	rep, order, limit, err := d.queryReport(f)
	if err != nil {
		return nil, err
	}
	clusterOf, err := d.querySources(ctx, f, rep)
	if err != nil {
		return nil, err
	}
	if len(rep.Sources) == 0 {
		if f.Cluster != "" || f.Instance != "" {
			what := "cluster " + f.Cluster
			if f.Instance != "" {
				what = "instance " + f.Instance
			}
			return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "no query statistics for %s (is it monitored, and the statements collector on?)", what)
		}
		return rep, nil
	}
	if err := d.queryStats(ctx, f, rep, clusterOf, order, limit); err != nil {
		return nil, err
	}
	return rep, nil
}

// queryReport checks f and returns the empty report of its span, the
// ORDER BY expression of its order and the number of digests to return.
func (d *DB) queryReport(f dbpilot.QueryFilter) (*dbpilot.QueryReport, string, int, error) {
	now := d.Now().UTC()
	until := f.Until.UTC()
	if f.Until.IsZero() || until.After(now) {
		until = now
	}
	since := f.Since.UTC()
	if f.Since.IsZero() {
		since = until.Add(-DefaultQuerySpan)
	}
	since = time.Unix(minuteOf(since), 0).UTC()
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultQueryLimit
	}
	if limit > MaxQueryLimit {
		return nil, "", 0, dbpilot.Errorf(dbpilot.EINVALID, "limit %d: at most %d", limit, MaxQueryLimit)
	}
	by := f.By
	order := map[string]string{
		"": "total_ps", dbpilot.QueryByTotal: "total_ps", dbpilot.QueryByCount: "count",
		dbpilot.QueryByRows: "rows_examined", dbpilot.QueryByAvg: "total_ps / max(count, 1)",
	}[by]
	if order == "" {
		return nil, "", 0, dbpilot.Errorf(dbpilot.EINVALID, "by %q: want total, avg, count or rows", by)
	}
	if by == "" {
		by = dbpilot.QueryByTotal
	}
	rep := &dbpilot.QueryReport{Since: since, Until: until, By: by, Sources: []dbpilot.QuerySource{}, Queries: []dbpilot.QueryStat{}}
	return rep, order, limit, nil
}

// querySources adds to rep the sources of the instances f covers (those of
// its cluster, or the one named), and returns each one's cluster.
func (d *DB) querySources(ctx context.Context, f dbpilot.QueryFilter, rep *dbpilot.QueryReport) (map[string]string, error) {
	const op = "queries"
	srcWhere, srcArgs := []string{"1"}, []any{}
	if f.Cluster != "" {
		srcWhere, srcArgs = append(srcWhere, "cluster = ?"), append(srcArgs, f.Cluster)
	}
	if f.Instance != "" {
		srcWhere, srcArgs = append(srcWhere, "instance = ?"), append(srcArgs, f.Instance)
	}
	rows, err := d.db.QueryContext(ctx, `SELECT q.instance, q.cluster, q.source, q.detail, q.capacity, q.digests, q.lost_digests, q.full, q.at, q.error,
			(SELECT coalesce(sum(m.lost), 0) FROM query_source_minutes m WHERE m.instance = q.instance AND m.minute >= ? AND m.minute <= ?)
		FROM query_sources q WHERE `+strings.Join(srcWhere, " AND ")+` ORDER BY q.instance`,
		append([]any{rep.Since.Unix(), rep.Until.Unix()}, srcArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	clusterOf := map[string]string{}
	for rows.Next() {
		var (
			s          dbpilot.QuerySource
			lost, lsp  int64
			full       int
			at         sql.NullInt64
			capacity   int64
			digestRows int
		)
		if err := rows.Scan(&s.Instance, &s.Cluster, &s.Source, &s.Detail, &capacity, &digestRows, &lost, &full, &at, &s.Error, &lsp); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		s.Capacity, s.Digests, s.LostDigests, s.LostInSpan, s.Full, s.At = capacity, digestRows, uint64(lost), uint64(lsp), full != 0, timeOf(at)
		rep.Sources = append(rep.Sources, s)
		clusterOf[s.Instance] = s.Cluster
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return clusterOf, nil
}

// queryStats adds to rep the top limit digests of f over rep's span,
// ordered by order, summed from the minute buckets.
func (d *DB) queryStats(ctx context.Context, f dbpilot.QueryFilter, rep *dbpilot.QueryReport, clusterOf map[string]string, order string, limit int) error {
	const op = "queries"
	where := []string{"s.minute >= ?", "s.minute <= ?"}
	args := []any{rep.Since.Unix(), rep.Until.Unix()}
	if f.Instance != "" {
		where, args = append(where, "s.instance = ?"), append(args, f.Instance)
	}
	if f.Cluster != "" {
		where, args = append(where, "s.instance IN (SELECT instance FROM query_sources WHERE cluster = ?)"), append(args, f.Cluster)
	}
	if f.Schema != "" {
		where, args = append(where, "s.schema_name = ?"), append(args, f.Schema)
	}
	// TOTAL (a float) rather than SUM, which fails on integer overflow.
	q := `SELECT instance, schema_name, digest, count, total_ps, max_ps, rows_examined, rows_sent, errors, warnings,
			no_index_used, tmp_disk_tables, sort_merge_passes, first_minute, last_minute,
			coalesce((SELECT digest_text FROM query_digests t WHERE t.instance = g.instance AND t.schema_name = g.schema_name AND t.digest = g.digest), ''),
			coalesce((SELECT example FROM query_digests t WHERE t.instance = g.instance AND t.schema_name = g.schema_name AND t.digest = g.digest), '')
		FROM (SELECT s.instance, s.schema_name, s.digest, TOTAL(s.count) AS count, TOTAL(s.total_ps) AS total_ps, max(s.max_ps) AS max_ps,
				TOTAL(s.rows_examined) AS rows_examined, TOTAL(s.rows_sent) AS rows_sent, TOTAL(s.errors) AS errors, TOTAL(s.warnings) AS warnings,
				TOTAL(s.no_index_used) AS no_index_used, TOTAL(s.tmp_disk_tables) AS tmp_disk_tables, TOTAL(s.sort_merge_passes) AS sort_merge_passes,
				min(s.minute) AS first_minute, max(s.minute) AS last_minute
			FROM query_stats s WHERE ` + strings.Join(where, " AND ") + `
			GROUP BY s.instance, s.schema_name, s.digest) g
		ORDER BY ` + order + ` DESC, total_ps DESC, instance, digest LIMIT ?`
	rows, err := d.db.QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			s                                           dbpilot.QueryStat
			count, total, rowsEx, rowsSent, errs, warns float64
			noIndex, tmpDisk, sortMerge                 float64
			maxPS, firstMinute, lastMinute              int64
		)
		if err := rows.Scan(&s.Instance, &s.Schema, &s.Digest, &count, &total, &maxPS, &rowsEx, &rowsSent, &errs, &warns,
			&noIndex, &tmpDisk, &sortMerge, &firstMinute, &lastMinute, &s.DigestText, &s.Example); err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		s.Cluster = clusterOf[s.Instance]
		s.Count, s.RowsExamined, s.RowsSent, s.Errors, s.Warnings = uint64(count), uint64(rowsEx), uint64(rowsSent), uint64(errs), uint64(warns)
		s.NoIndexUsed, s.TmpDiskTables, s.SortMergePasses = uint64(noIndex), uint64(tmpDisk), uint64(sortMerge)
		s.TotalMS, s.MaxMS = total/1e9, float64(maxPS)/1e9
		if s.Count > 0 {
			s.AvgMS = s.TotalMS / float64(s.Count)
		}
		s.FirstSeen = time.Unix(firstMinute, 0).UTC().Format(time.RFC3339)
		s.LastSeen = time.Unix(lastMinute, 0).UTC().Format(time.RFC3339)
		if s.Digest == "" && s.DigestText == "" {
			s.DigestText = "(statements that found the digest table full)"
		}
		rep.Queries = append(rep.Queries, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return nil
}

// PruneQueries deletes the query statistics of minutes before before, and
// the digests and sources not seen since then.
func (d *DB) PruneQueries(ctx context.Context, before time.Time) (int64, error) {
	const op = "prune queries"
	release, werr := d.beginWrite(ctx, op)
	if werr != nil {
		return 0, werr
	}
	defer release()
	var n int64
	for _, stmt := range []struct {
		sql string
		arg any
	}{
		{"DELETE FROM query_stats WHERE minute < ?", before.Unix()},
		{"DELETE FROM query_source_minutes WHERE minute < ?", before.Unix()},
		{"DELETE FROM query_digests WHERE last_seen < ?", sinceArg(before)},
		{"DELETE FROM query_sources WHERE at < ?", sinceArg(before)},
	} {
		res, err := d.db.ExecContext(ctx, stmt.sql, stmt.arg)
		if err != nil {
			return n, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, nil
}
