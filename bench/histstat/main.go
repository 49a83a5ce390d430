// Command histstat reads the size of the topology history from a dbpilot
// state file while serve writes it (bench/history.sh runs it): the rows of
// topology_changes by kind, the rows whose time falls in given spans, and
// the bytes the history's tables and indexes take, from SQLite's dbstat
// virtual table (compiled into modernc.org/sqlite): the pages (what the
// file holds) and the bytes of them in use; and, for each span, what its
// changes were: their summaries with addresses and numbers taken out
// (HOST, N), the most frequent first.
//
// Usage: histstat [-span FROM_NS:TO_NS]... STATE_FILE
//
// It prints one JSON object. The state file is opened read-only (WAL: it
// reads what serve committed, and blocks no writer).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

// historyObjects are the tables and indexes of the topology history
// (sqlite/migrations/0005_topology_history.sql), as dbstat names them.
var historyObjects = []string{
	"topology_changes",
	"topology_changes_instance_time",
	"topology_changes_cluster_time",
	"topology_history_start",
	"sqlite_autoindex_topology_history_start_1",
}

type span struct{ from, to int64 }

type spans []span

func (s *spans) String() string { return fmt.Sprint(*s) }

func (s *spans) Set(v string) error {
	a, b, ok := strings.Cut(v, ":")
	from, err1 := strconv.ParseInt(a, 10, 64)
	to, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || to < from {
		return fmt.Errorf("span %q: want FROM_NS:TO_NS (Unix nanoseconds, FROM <= TO)", v)
	}
	*s = append(*s, span{from, to})
	return nil
}

// Stat is what histstat prints.
type Stat struct {
	Rows   int64            `json:"rows"`
	ByKind map[string]int64 `json:"by_kind"`
	// InSpan[i]: the rows whose time is in the i-th -span, FROM included,
	// TO excluded.
	InSpan []int64 `json:"in_span"`
	// InSpanByKind[i]: those rows by kind (instance, left, cluster).
	InSpanByKind []map[string]int64 `json:"in_span_by_kind"`
	// Kinds[i]: the changes of the i-th -span by summary, addresses and
	// numbers taken out, the most frequent first (at most topKinds).
	Kinds [][]Kind `json:"span_kinds"`
	// PageBytes: the pages of the history's tables and indexes (what the
	// file holds for them); UsedBytes: of those, the bytes not unused.
	PageBytes int64            `json:"page_bytes"`
	UsedBytes int64            `json:"used_bytes"`
	ByObject  map[string]int64 `json:"page_bytes_by_object"`
	// Payload: the average length of a record's text columns, by kind.
	AvgState        float64 `json:"avg_state_bytes"`
	AvgClusterState float64 `json:"avg_cluster_state_bytes"`
	AvgSummary      float64 `json:"avg_summary_bytes"`
}

// Kind is a summary with its addresses and numbers taken out, and how
// many changes had it.
type Kind struct {
	Summary string `json:"summary"`
	Count   int    `json:"count"`
}

// topKinds is how many kinds of change a span lists.
const topKinds = 5

var (
	hostPort = regexp.MustCompile(`[\w.\-\[\]:]*:\d+\b`)
	number   = regexp.MustCompile(`\d+`)
)

// kindOf returns summary with its addresses and numbers taken out, and the
// same item repeated in a list ("A on HOST, A on HOST") said once.
func kindOf(summary string) string {
	s := number.ReplaceAllString(hostPort.ReplaceAllString(summary, "HOST"), "N")
	var parts []string
	for _, p := range strings.Split(s, "; ") {
		head, list, ok := strings.Cut(p, ": ")
		if !ok {
			head, list = "", p
		} else {
			head += ": "
		}
		items := strings.Split(list, ", ")
		parts = append(parts, head+strings.Join(slices.Compact(items), ", "))
	}
	return strings.Join(parts, "; ")
}

func main() {
	var ss spans
	flag.Var(&ss, "span", "FROM_NS:TO_NS: count the rows recorded in it (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: histstat [-span FROM_NS:TO_NS]... STATE_FILE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	st, err := stat(flag.Arg(0), ss)
	if err != nil {
		fmt.Fprintln(os.Stderr, "histstat:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(st); err != nil {
		fmt.Fprintln(os.Stderr, "histstat:", err)
		os.Exit(1)
	}
}

func stat(path string, ss spans) (*Stat, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One read transaction: every figure from the same snapshot.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%s: begin: %w", path, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	st := &Stat{ByKind: map[string]int64{}, ByObject: map[string]int64{}, InSpan: make([]int64, len(ss)), InSpanByKind: []map[string]int64{}}
	rows, err := tx.QueryContext(ctx, `SELECT kind, count(*) FROM topology_changes GROUP BY kind`)
	if err != nil {
		return nil, fmt.Errorf("%s: count the changes: %w", path, err)
	}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s: count the changes: %w", path, err)
		}
		st.ByKind[kind] = n
		st.Rows += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: count the changes: %w", path, err)
	}
	for i, s := range ss {
		byKind, err := spanCounts(ctx, tx, s)
		if err != nil {
			return nil, fmt.Errorf("%s: count the changes in a span: %w", path, err)
		}
		for _, n := range byKind {
			st.InSpan[i] += n
		}
		st.InSpanByKind = append(st.InSpanByKind, byKind)
	}
	for _, s := range ss {
		kinds, err := spanKinds(ctx, tx, s)
		if err != nil {
			return nil, fmt.Errorf("%s: the changes of a span: %w", path, err)
		}
		st.Kinds = append(st.Kinds, kinds)
	}
	var avgs [3]sql.NullFloat64
	if err := tx.QueryRowContext(ctx, `SELECT avg(length(state)), avg(length(cluster_state)), avg(length(summary)) FROM topology_changes`).
		Scan(&avgs[0], &avgs[1], &avgs[2]); err != nil {
		return nil, fmt.Errorf("%s: record lengths: %w", path, err)
	}
	st.AvgState, st.AvgClusterState, st.AvgSummary = avgs[0].Float64, avgs[1].Float64, avgs[2].Float64

	q := `SELECT name, sum(pgsize), sum(pgsize - unused) FROM dbstat WHERE name IN (?` + strings.Repeat(", ?", len(historyObjects)-1) + `) GROUP BY name`
	args := make([]any, len(historyObjects))
	for i, o := range historyObjects {
		args[i] = o
	}
	rows, err = tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: dbstat: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var pages, used int64
		if err := rows.Scan(&name, &pages, &used); err != nil {
			return nil, fmt.Errorf("%s: dbstat: %w", path, err)
		}
		st.ByObject[name] = pages
		st.PageBytes += pages
		st.UsedBytes += used
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: dbstat: %w", path, err)
	}
	return st, nil
}

// spanCounts returns the number of changes of s by kind.
func spanCounts(ctx context.Context, tx *sql.Tx, s span) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT kind, count(*) FROM topology_changes WHERE time >= ? AND time < ? GROUP BY kind`, s.from, s.to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, err
		}
		out[kind] = n
	}
	return out, rows.Err()
}

// spanKinds returns the kinds of the changes of s, the most frequent
// first.
func spanKinds(ctx context.Context, tx *sql.Tx, s span) ([]Kind, error) {
	rows, err := tx.QueryContext(ctx, `SELECT summary FROM topology_changes WHERE time >= ? AND time < ?`, s.from, s.to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	count := map[string]int{}
	for rows.Next() {
		var summary string
		if err := rows.Scan(&summary); err != nil {
			return nil, err
		}
		count[kindOf(summary)]++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := []Kind{}
	for k, n := range count {
		out = append(out, Kind{k, n})
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Summary, b.Summary)
	})
	return out[:min(len(out), topKinds)], nil
}
