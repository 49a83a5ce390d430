package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// ReadRows reads every row of rows (which it does not close) into a Rows
// with a handful of allocations whatever its size: values are strings in
// blocks of bytes, their headers and pointers in blocks of slots (each
// block twice the last, up to 4 KB and 256 slots), and a block is never
// reallocated, so no value is copied twice. A monitoring
// session reads hundreds of values per statement every second on each
// instance; a string and a pointer per value made the garbage collector
// the largest cost of a 1000-instance serve. A value kept for long (a
// cache key) is best cloned (strings.Clone): it keeps its block alive.
func ReadRows(rows *sql.Rows) (*Rows, error) {
	return readRows(rows, 0)
}

// ReadQueryRows is ReadRows for the rows of query, sized for as many rows
// as query's last result had: a status or replica status read every second
// on every instance grows no slice by doubling.
func ReadQueryRows(query string, rows *sql.Rows) (*Rows, error) {
	hint := 0
	if n, ok := rowHints.Load(query); ok {
		hint = n.(int)
	}
	res, err := readRows(rows, hint)
	if err == nil && len(res.Values) != hint && len(query) <= maxHintQuery {
		if hint > 0 || rowHintCount.Load() < maxRowHints {
			if _, loaded := rowHints.Swap(query, len(res.Values)); !loaded {
				rowHintCount.Add(1)
			}
		}
	}
	return res, err
}

// rowHints holds the last row count of each query text (ReadQueryRows):
// monitoring runs a few dozen distinct statements; the bounds keep
// arbitrary ones out.
var (
	rowHints     sync.Map // query → int
	rowHintCount atomic.Int32
)

const (
	maxRowHints  = 1024
	maxHintQuery = 4096
)

// readResultSets reads the result of each of stmts, sent together in one
// query, from rows: one result set per statement. On an error it returns
// the results read before it.
func readResultSets(stmts []string, rows *sql.Rows) ([]*Rows, error) {
	out := make([]*Rows, 0, len(stmts))
	for i, q := range stmts {
		if i > 0 && !rows.NextResultSet() {
			if err := rows.Err(); err != nil {
				return out, err
			}
			return out, fmt.Errorf("%d results for %d statements", len(out), len(stmts))
		}
		r, err := ReadQueryRows(q, rows)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func readRows(rows *sql.Rows, hint int) (*Rows, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	n := len(cols)
	raw := make([]sql.RawBytes, n)
	ptrs := make([]any, n)
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	res := &Rows{Columns: cols}
	if hint > 0 {
		res.Values = make([][]*string, 0, hint)
	}
	var a rowArena
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := a.row(n)
		for i, b := range raw {
			if b != nil {
				row[i] = a.value(b)
			}
		}
		res.Values = append(res.Values, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// rowArena hands out rows and values from blocks that are never grown in
// place (a string or pointer handed out stays valid).
type rowArena struct {
	bytes []byte    // the current block of value bytes
	strs  []string  // the current block of string headers
	ptrs  []*string // the current block of row slots
}

const (
	arenaBytes = 4 << 10
	arenaSlots = 256
)

// grow is the size of the block after one of size last: twice, from
// first, up to limit, and at least need.
func grow(last, first, limit, need int) int {
	return max(need, min(limit, max(first, 2*last)))
}

// row returns n nil slots.
func (a *rowArena) row(n int) []*string {
	if len(a.ptrs)+n > cap(a.ptrs) {
		a.ptrs = make([]*string, 0, grow(cap(a.ptrs), 2*n, arenaSlots, n))
	}
	i := len(a.ptrs)
	a.ptrs = a.ptrs[:i+n]
	return a.ptrs[i : i+n : i+n]
}

// value returns a pointer to a string holding a copy of b.
func (a *rowArena) value(b []byte) *string {
	if len(a.strs) == cap(a.strs) {
		a.strs = make([]string, 0, grow(cap(a.strs), 8, arenaSlots, 1))
	}
	a.strs = a.strs[:len(a.strs)+1]
	s := &a.strs[len(a.strs)-1]
	if len(b) == 0 {
		return s
	}
	if len(a.bytes)+len(b) > cap(a.bytes) {
		a.bytes = make([]byte, 0, grow(cap(a.bytes), 128, arenaBytes, len(b)))
	}
	i := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	*s = unsafe.String(&a.bytes[i], len(b))
	return s
}

// WithQueryTimeout returns ctx bounded by d, without a new context (and
// its timer) when ctx already ends sooner.
func WithQueryTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
