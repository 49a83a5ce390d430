package mysql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Digest is one row of performance_schema.events_statements_summary_by_digest:
// the statements of one normalized form (DIGEST_TEXT, literals replaced by
// "?") in one default schema. Times are picoseconds, as the server keeps
// them. In a DigestSnapshot the counters are cumulative since the row was
// created; DigestDeltas returns what ran between two snapshots.
type Digest struct {
	Schema string // "" for statements without a default schema
	// Digest is the server's hash of Text; "" for the row that collects
	// every statement once the table is full (DIGEST NULL).
	Digest string
	Text   string
	// Sample is an example statement (MySQL 8's QUERY_SAMPLE_TEXT; MariaDB
	// has none), redacted of literals unless DigestOptions.Examples.
	Sample          string
	Count           uint64
	TotalWait       uint64 // SUM_TIMER_WAIT, ps
	MaxWait         uint64 // MAX_TIMER_WAIT, ps; see DigestDeltas
	RowsExamined    uint64
	RowsSent        uint64
	Errors          uint64
	Warnings        uint64
	NoIndexUsed     uint64
	TmpDiskTables   uint64
	SortMergePasses uint64
	FirstSeen       string // as the server prints it (server time zone)
	LastSeen        string
}

// key identifies a digest row: the table's unique key is (SCHEMA_NAME,
// DIGEST).
func (g *Digest) key() string { return g.Schema + "\x00" + g.Digest }

// DigestSnapshot is the digest table of one server at one moment, with what
// tells whether it can be trusted: is performance_schema on, does the digest
// consumer run, how many rows the table holds at most and how many
// statements found it full.
type DigestSnapshot struct {
	Key     dbpilot.InstanceKey
	At      time.Time
	Flavor  dbpilot.Flavor
	Version string
	// Source is where the digests come from: dbpilot.QuerySourcePerformanceSchema,
	// or a slow log (the fallback when performance_schema is off), whose
	// counters are cumulative since the reader started.
	Source string
	// SourceDetail qualifies Source (the slow log file's path).
	SourceDetail string
	// Enabled is performance_schema=ON. When false, nothing else is read.
	Enabled bool
	// ConsumerOff names the consumers (global_instrumentation,
	// statements_digest) that are off: the table is not being filled.
	ConsumerOff []string
	// Capacity is performance_schema_digests_size, the most rows the table
	// keeps (-1: autosized, as a server may report it).
	Capacity int64
	// Lost is Performance_schema_digest_lost: statements whose digest found
	// the table full since the server started (they are counted in the row
	// with an empty Digest).
	Lost    uint64
	Digests []Digest
}

// DigestOptions tunes ReadDigests.
type DigestOptions struct {
	// Examples keeps the literals of sample statements (QUERY_SAMPLE_TEXT);
	// by default they are replaced by "?" (RedactLiterals), as they may hold
	// personal data.
	Examples bool
}

const (
	digestVariablesSQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'version_comment', 'performance_schema', 'performance_schema_digests_size')"
	digestLostSQL      = "SHOW GLOBAL STATUS LIKE 'Performance_schema_digest_lost'"
	digestConsumersSQL = "SELECT NAME, ENABLED FROM performance_schema.setup_consumers WHERE NAME IN ('global_instrumentation', 'statements_digest')"
	digestColumns      = "SCHEMA_NAME, DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, MAX_TIMER_WAIT, SUM_ROWS_EXAMINED, SUM_ROWS_SENT, SUM_ERRORS, SUM_WARNINGS, SUM_NO_INDEX_USED, SUM_CREATED_TMP_DISK_TABLES, SUM_SORT_MERGE_PASSES, FIRST_SEEN, LAST_SEEN"
)

// digestSQL is the read of the digest table; sample adds MySQL 8's
// QUERY_SAMPLE_TEXT. The table is never truncated: other tools read it too.
func digestSQL(sample bool) string {
	cols := digestColumns
	if sample {
		cols += ", QUERY_SAMPLE_TEXT"
	}
	return "SELECT " + cols + " FROM performance_schema.events_statements_summary_by_digest"
}

// hasQuerySample reports whether the digest table has QUERY_SAMPLE_TEXT:
// MySQL (and Percona Server) 8.0.3 and later; MariaDB has none.
func hasQuerySample(f dbpilot.Flavor, v dbpilot.Version) bool {
	return f != dbpilot.FlavorMariaDB && v.AtLeast(8, 0, 3)
}

// ReadDigests reads the digest table and what qualifies it (see
// DigestSnapshot): four statements, each with the query timeout. With
// performance_schema off it returns a snapshot with Enabled false and no
// error.
func (d *DB) ReadDigests(ctx context.Context, opts DigestOptions) (*DigestSnapshot, error) {
	return ReadDigestsFrom(ctx, d, d.Key, d.opts.User, opts)
}

// Querier is a session statements run on: a *DB, or a collector's
// monitoring session.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (*Rows, error)
}

// ReadDigestsFrom is ReadDigests on any session of the server key (user
// names the account in errors).
func ReadDigestsFrom(ctx context.Context, q Querier, key dbpilot.InstanceKey, user string, opts DigestOptions) (*DigestSnapshot, error) {
	s := session{q: q, key: key, user: user}
	snap := &DigestSnapshot{Key: key, Capacity: -1, Source: dbpilot.QuerySourcePerformanceSchema}
	r, err := s.query(ctx, "read performance_schema variables", digestVariablesSQL)
	if err != nil {
		return nil, err
	}
	vars := r.NameValues()
	snap.Version = vars["version"]
	snap.Flavor = DetectFlavor(snap.Version, vars["version_comment"])
	version, err := parseServerVersion(snap.Version, snap.Flavor)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EUNSUPPORTED, err, "mysql: read version on %s", key)
	}
	// A server built without performance_schema has no such variable.
	if !strings.EqualFold(vars["performance_schema"], "ON") && vars["performance_schema"] != "1" {
		return snap, nil
	}
	snap.Enabled = true
	if c, err := strconv.ParseInt(vars["performance_schema_digests_size"], 10, 64); err == nil {
		snap.Capacity = c
	}
	if r, err = s.query(ctx, "read performance_schema consumers", digestConsumersSQL); err != nil {
		return nil, err
	}
	for name, on := range r.NameValues() {
		if !strings.EqualFold(on, "YES") {
			snap.ConsumerOff = append(snap.ConsumerOff, name)
		}
	}
	if r, err = s.query(ctx, "read lost digests", digestLostSQL); err != nil {
		return nil, err
	}
	if v, ok := r.NameValues()["performance_schema_digest_lost"]; ok {
		if snap.Lost, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: read lost digests on %s: bad value %q", key, v)
		}
	}
	snap.At = time.Now()
	if r, err = s.query(ctx, "read statement digests", digestSQL(hasQuerySample(snap.Flavor, version))); err != nil {
		return nil, err
	}
	if snap.Digests, err = ParseDigests(r); err != nil {
		return nil, fmt.Errorf("mysql: read statement digests on %s: %w", key, err)
	}
	if !opts.Examples {
		for i := range snap.Digests {
			snap.Digests[i].Sample = RedactLiterals(snap.Digests[i].Sample)
		}
	}
	return snap, nil
}

// ParseDigests reads the rows of the digest SELECT (digestSQL), by
// position: MariaDB 10.11 names its LAST_SEEN column SCHEMA_NAME in the
// result metadata (see testdata/digests/mariadb-10.11), so names cannot be
// trusted. A 16th column is QUERY_SAMPLE_TEXT.
func ParseDigests(r *Rows) ([]Digest, error) {
	want := strings.Split(digestColumns, ", ")
	if n := len(r.Columns); n != len(want) && n != len(want)+1 {
		return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "digest table result has %d columns, want %d or %d", n, len(want), len(want)+1)
	}
	out := make([]Digest, 0, len(r.Values))
	for n, row := range r.Values {
		var err error
		num := func(i int) uint64 {
			s := Str(row, i)
			if s == "" || err != nil {
				return 0
			}
			v, perr := strconv.ParseUint(s, 10, 64)
			if perr != nil {
				err = fmt.Errorf("row %d: %s: %w", n+1, want[i], perr)
			}
			return v
		}
		g := Digest{
			Schema:          Str(row, 0),
			Digest:          Str(row, 1),
			Text:            strings.TrimSpace(Str(row, 2)),
			Count:           num(3),
			TotalWait:       num(4),
			MaxWait:         num(5),
			RowsExamined:    num(6),
			RowsSent:        num(7),
			Errors:          num(8),
			Warnings:        num(9),
			NoIndexUsed:     num(10),
			TmpDiskTables:   num(11),
			SortMergePasses: num(12),
			FirstSeen:       Str(row, 13),
			LastSeen:        Str(row, 14),
			Sample:          Str(row, 15),
		}
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// DigestDeltas returns what ran between prev and cur, two snapshots of the
// same server: per digest, cur's counters minus prev's, for the digests
// whose count grew. The table is never reset by dbpilot, so deltas are
// computed here. A digest absent from prev (new, or gone and back), or
// whose counters went down or whose FIRST_SEEN changed (someone truncated
// the table, the server restarted), counts in full: its current values are
// the delta. A digest that disappeared from cur ran nothing dbpilot can
// know of and is left out.
//
// MaxWait is not a counter: the server keeps the largest since the row was
// created. When it grew between the snapshots it is the interval's maximum;
// otherwise the interval's maximum is at most prev's and at most the
// interval's total, and the smaller of MaxWait and TotalWait is reported.
//
// A nil prev returns cur's digests (everything since the table started).
func DigestDeltas(prev, cur *DigestSnapshot) []Digest {
	if cur == nil {
		return nil
	}
	if prev == nil {
		return append([]Digest(nil), cur.Digests...)
	}
	before := make(map[string]*Digest, len(prev.Digests))
	for i := range prev.Digests {
		before[prev.Digests[i].key()] = &prev.Digests[i]
	}
	var out []Digest
	for _, c := range cur.Digests {
		p, ok := before[c.key()]
		if !ok || wasReset(p, &c) {
			if c.Count > 0 {
				out = append(out, c)
			}
			continue
		}
		if c.Count == p.Count {
			continue
		}
		d := c
		d.Count -= p.Count
		d.TotalWait -= p.TotalWait
		d.RowsExamined -= p.RowsExamined
		d.RowsSent -= p.RowsSent
		d.Errors -= p.Errors
		d.Warnings -= p.Warnings
		d.NoIndexUsed -= p.NoIndexUsed
		d.TmpDiskTables -= p.TmpDiskTables
		d.SortMergePasses -= p.SortMergePasses
		if c.MaxWait <= p.MaxWait {
			d.MaxWait = min(c.MaxWait, d.TotalWait)
		}
		out = append(out, d)
	}
	return out
}

// wasReset reports whether the row c is not the continuation of p: a
// counter went down or the row was created again.
func wasReset(p, c *Digest) bool {
	return c.Count < p.Count || c.TotalWait < p.TotalWait || c.RowsExamined < p.RowsExamined ||
		c.RowsSent < p.RowsSent || c.Errors < p.Errors || c.Warnings < p.Warnings ||
		c.NoIndexUsed < p.NoIndexUsed || c.TmpDiskTables < p.TmpDiskTables ||
		c.SortMergePasses < p.SortMergePasses || c.FirstSeen != p.FirstSeen
}

// DigestsUsable returns nil when s's digest table is being filled, or a
// one-line error (code EUNSUPPORTED) saying what is off and how to turn it
// on.
func (s *DigestSnapshot) DigestsUsable() error {
	switch {
	case !s.Enabled:
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED,
			"performance_schema is off on %s: set performance_schema=ON in the server's option file ([mysqld]) and restart it (a sandbox: redeploy, or --option performance_schema=ON)", s.Key)
	case len(s.ConsumerOff) > 0:
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED,
			"performance_schema consumer %s is off on %s: UPDATE performance_schema.setup_consumers SET ENABLED='YES' WHERE NAME IN ('global_instrumentation', 'statements_digest')",
			strings.Join(s.ConsumerOff, " and "), s.Key)
	}
	return nil
}

// RedactLiterals replaces the literals of a SQL statement — quoted strings,
// numbers, hexadecimal and bit values — with "?", keeping identifiers
// (`quoted` ones too), keywords, operators and comments' markers. It is
// meant for example statements shown next to a digest, where a literal may
// be personal data; it is not a parser and errs towards redacting.
func RedactLiterals(q string) string {
	if q == "" {
		return q
	}
	var b strings.Builder
	b.Grow(len(q))
	isIdent := func(c byte) bool {
		return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			// A string; '' and \' inside do not end it. An unterminated one
			// (a truncated sample) runs to the end.
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' {
					j += 2
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			b.WriteByte('?')
			i = min(j+1, len(q))
		case c == '`':
			j := strings.IndexByte(q[i+1:], '`')
			if j < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+j+2])
			i += j + 2
		case (c == 'x' || c == 'X' || c == 'b' || c == 'B') && i+1 < len(q) && q[i+1] == '\'' && (i == 0 || !isIdent(q[i-1])):
			i++ // x'..' and b'..': the string case takes the rest
		case c >= '0' && c <= '9' && startsNumber(q, i, isIdent):
			j := i + 1
			for j < len(q) && (isIdent(q[j]) || q[j] == '.' ||
				(q[j] == '+' || q[j] == '-') && (q[j-1] == 'e' || q[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(q[i:j]), "0x")) {
				j++
			}
			b.WriteByte('?')
			i = j
		case isIdent(c):
			j := i + 1
			for j < len(q) && isIdent(q[j]) {
				j++
			}
			b.WriteString(q[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// startsNumber reports whether the digit at q[i] starts a number rather
// than continuing a name: not after a name character or "@", and after "."
// only when the dot follows no name (".5", not "t.1col").
func startsNumber(q string, i int, isIdent func(byte) bool) bool {
	if i == 0 {
		return true
	}
	switch p := q[i-1]; {
	case isIdent(p) || p == '@':
		return false
	case p == '.':
		return i < 2 || !isIdent(q[i-2]) && q[i-2] != '`'
	}
	return true
}
