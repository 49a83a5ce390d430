package mysql

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
	driver "github.com/go-sql-driver/mysql"
)

// recordedDigests answers ReadDigests' statements from
// testdata/digests/<dir> (see testdata/README.md); digests names the file
// holding the digest table.
type recordedDigests struct {
	dir, digests string
	queries      []string
}

func (r *recordedDigests) Query(_ context.Context, q string, _ ...any) (*Rows, error) {
	r.queries = append(r.queries, q)
	var file string
	switch {
	case q == digestVariablesSQL:
		file = "variables.txt"
	case q == digestLostSQL:
		file = "lost.txt"
	case q == digestConsumersSQL:
		file = "consumers.txt"
	case q == digestSQL(false) || q == digestSQL(true):
		file = r.digests
	default:
		return nil, &driver.MySQLError{Number: ErParseError, Message: "unexpected statement " + q}
	}
	b, err := os.ReadFile(filepath.Join("testdata", "digests", r.dir, file))
	if err != nil {
		return nil, &driver.MySQLError{Number: ErNoSuchTable, Message: "not recorded: " + file}
	}
	// By position: MariaDB names LAST_SEEN "SCHEMA_NAME", which toRows'
	// match by name would confuse.
	vr := parseVertical(string(b))
	rows := &Rows{}
	if len(vr) > 0 {
		rows.Columns = vr[0].cols
	}
	for _, row := range vr {
		rows.Values = append(rows.Values, row.vals)
	}
	return rows, nil
}

func readRecordedDigests(t *testing.T, dir, file string, opts DigestOptions) (*DigestSnapshot, *recordedDigests) {
	t.Helper()
	r := &recordedDigests{dir: dir, digests: file}
	s, err := ReadDigestsFrom(context.Background(), r, dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, "u", opts)
	if err != nil {
		t.Fatalf("ReadDigestsFrom(%s/%s): %v", dir, file, err)
	}
	return s, r
}

func findDigest(t *testing.T, ds []Digest, textPart string) *Digest {
	t.Helper()
	for i := range ds {
		if strings.Contains(ds[i].Text, textPart) {
			return &ds[i]
		}
	}
	return nil
}

// testdata/digests/mariadb-10.11: 50 × "SELECT name FROM items WHERE id =
// N", 20 × "SELECT * FROM items WHERE price > N", 10 GROUP BY ... ORDER
// BY, 3 failing SELECTs on a missing table, all in schema shop; then
// (digests-2) 30 more point selects, 5 more price selects and one SELECT
// SLEEP(0.2).
func TestReadDigestsMariaDB(t *testing.T) {
	s, r := readRecordedDigests(t, "mariadb-10.11", "digests-1.txt", DigestOptions{})
	if !s.Enabled || s.Capacity != 2000 || s.Lost != 0 || s.Flavor != dbpilot.FlavorMariaDB || len(s.ConsumerOff) != 0 {
		t.Errorf("snapshot = enabled %v capacity %d lost %d flavor %s consumers off %v", s.Enabled, s.Capacity, s.Lost, s.Flavor, s.ConsumerOff)
	}
	if err := s.DigestsUsable(); err != nil {
		t.Errorf("DigestsUsable = %v", err)
	}
	if last := r.queries[len(r.queries)-1]; strings.Contains(last, "QUERY_SAMPLE_TEXT") {
		t.Errorf("MariaDB read asks for QUERY_SAMPLE_TEXT: %s", last)
	}
	if len(s.Digests) != 20 {
		t.Errorf("got %d digests, want 20", len(s.Digests))
	}
	point := findDigest(t, s.Digests, "SELECT NAME FROM `items` WHERE ID = ?")
	if point == nil {
		t.Fatal("point select digest missing")
	}
	if point.Schema != "shop" || point.Count != 50 || point.RowsSent != 50 || point.RowsExamined != 50 || point.TotalWait == 0 ||
		point.MaxWait == 0 || point.MaxWait > point.TotalWait || point.Digest == "" || point.FirstSeen == "" || point.LastSeen == "" {
		t.Errorf("point select = %+v", *point)
	}
	if strings.HasSuffix(point.Text, " ") {
		t.Errorf("digest text not trimmed: %q", point.Text)
	}
	scan := findDigest(t, s.Digests, "WHERE `price` > ?")
	if scan == nil || scan.Count != 20 || scan.NoIndexUsed != 20 || scan.RowsExamined != 100 {
		t.Errorf("table scan = %+v", scan)
	}
	bad := findDigest(t, s.Digests, "`nosuch`")
	if bad == nil || bad.Count != 3 || bad.Errors != 3 {
		t.Errorf("failing select = %+v", bad)
	}
}

func TestDigestDeltasRecorded(t *testing.T) {
	s1, _ := readRecordedDigests(t, "mariadb-10.11", "digests-1.txt", DigestOptions{})
	s2, _ := readRecordedDigests(t, "mariadb-10.11", "digests-2.txt", DigestOptions{})
	d := DigestDeltas(s1, s2)
	point := findDigest(t, d, "SELECT NAME FROM `items` WHERE ID = ?")
	p1 := findDigest(t, s1.Digests, "SELECT NAME FROM `items` WHERE ID = ?")
	p2 := findDigest(t, s2.Digests, "SELECT NAME FROM `items` WHERE ID = ?")
	if point == nil || point.Count != 30 || point.RowsSent != 30 || point.TotalWait != p2.TotalWait-p1.TotalWait || point.MaxWait > point.TotalWait {
		t.Errorf("point select delta = %+v", point)
	}
	if scan := findDigest(t, d, "WHERE `price` > ?"); scan == nil || scan.Count != 5 || scan.NoIndexUsed != 5 {
		t.Errorf("table scan delta = %+v", scan)
	}
	sleep := findDigest(t, d, "SLEEP")
	if sleep == nil || sleep.Count != 1 || sleep.TotalWait < 200e9 || sleep.MaxWait != sleep.TotalWait {
		t.Errorf("new digest (SLEEP) delta = %+v", sleep)
	}
	if g := findDigest(t, d, "GROUP BY"); g != nil {
		t.Errorf("digest that did not run has a delta: %+v", *g)
	}
	if bad := findDigest(t, d, "`nosuch`"); bad != nil {
		t.Errorf("digest that did not run has a delta: %+v", *bad)
	}
}

func TestDigestDeltasReset(t *testing.T) {
	row := func(digest string, count, wait, maxWait uint64, first string) Digest {
		return Digest{Schema: "s", Digest: digest, Text: digest, Count: count, TotalWait: wait, MaxWait: maxWait, RowsSent: count, FirstSeen: first}
	}
	prev := &DigestSnapshot{Digests: []Digest{
		row("a", 100, 1000, 50, "t0"),
		row("b", 10, 500, 100, "t0"),
		row("c", 5, 50, 10, "t0"),
		row("gone", 7, 70, 10, "t0"),
		row("same", 3, 30, 10, "t0"),
	}}
	cur := &DigestSnapshot{Digests: []Digest{
		row("a", 4, 40, 20, "t0"),    // counter went down: truncated by someone, refilled
		row("b", 12, 520, 100, "t0"), // 2 more, the max did not grow
		row("c", 2, 30, 25, "t1"),    // recreated (FIRST_SEEN moved)
		row("new", 1, 9, 9, "t1"),    // not there before
		row("same", 3, 30, 10, "t0"), // did not run
		{Schema: "s", Digest: "x", Text: "x", Count: 0, FirstSeen: "t1"},
	}}
	got := map[string]Digest{}
	for _, d := range DigestDeltas(prev, cur) {
		got[d.Digest] = d
	}
	want := map[string][3]uint64{ // count, total, max
		"a":   {4, 40, 20},
		"b":   {2, 20, 20}, // max bounded by the interval's total
		"c":   {2, 30, 25},
		"new": {1, 9, 9},
	}
	if len(got) != len(want) {
		t.Errorf("deltas = %+v, want digests %v", got, want)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || [3]uint64{g.Count, g.TotalWait, g.MaxWait} != w || g.RowsSent != w[0] {
			t.Errorf("delta %s = %+v, want count/total/max %v", k, g, w)
		}
	}
	if all := DigestDeltas(nil, cur); len(all) != len(cur.Digests) {
		t.Errorf("DigestDeltas(nil, cur) = %d rows, want %d", len(all), len(cur.Digests))
	}
	if DigestDeltas(prev, nil) != nil {
		t.Error("DigestDeltas(prev, nil) != nil")
	}
}

// testdata/digests/mysql-8.0 is written from the MySQL manual (MySQL is not
// installable here): a point select, a table scan with a sample holding an
// e-mail address, and the row of statements that found the table full.
func TestReadDigestsMySQL8(t *testing.T) {
	s, r := readRecordedDigests(t, "mysql-8.0", "digests-1.txt", DigestOptions{})
	if last := r.queries[len(r.queries)-1]; last != digestSQL(true) {
		t.Errorf("MySQL 8 digest read = %s, want the QUERY_SAMPLE_TEXT one", last)
	}
	if !s.Enabled || s.Capacity != 10000 || s.Lost != 42 || s.Flavor != dbpilot.FlavorMySQL {
		t.Errorf("snapshot = %+v", s)
	}
	scan := findDigest(t, s.Digests, "`customers`")
	if scan == nil || scan.Sample != "SELECT * FROM customers WHERE email = ? AND created > ?" || scan.NoIndexUsed != 7 || scan.RowsExamined != 700000 {
		t.Errorf("table scan = %+v", scan)
	}
	var other *Digest
	for i := range s.Digests {
		if s.Digests[i].Digest == "" {
			other = &s.Digests[i]
		}
	}
	if other == nil || other.Count != 42 || other.Text != "" || other.Schema != "" {
		t.Errorf("table-full row = %+v", other)
	}
	kept, _ := readRecordedDigests(t, "mysql-8.0", "digests-1.txt", DigestOptions{Examples: true})
	if g := findDigest(t, kept.Digests, "`customers`"); g == nil || !strings.Contains(g.Sample, "'ann@example.com'") {
		t.Errorf("Examples: sample = %+v", g)
	}
}

func TestReadDigestsOff(t *testing.T) {
	s, r := readRecordedDigests(t, "mariadb-10.11-off", "", DigestOptions{})
	if s.Enabled || len(r.queries) != 1 {
		t.Errorf("performance_schema off: enabled %v after %d statements", s.Enabled, len(r.queries))
	}
	err := s.DigestsUsable()
	if err == nil || !strings.Contains(err.Error(), "performance_schema is off on 127.0.0.1:3306") ||
		!strings.Contains(err.Error(), "performance_schema=ON") || dbpilot.ErrorCode(err) != dbpilot.EUNSUPPORTED {
		t.Errorf("DigestsUsable = %v", err)
	}
	off := &DigestSnapshot{Key: s.Key, Enabled: true, ConsumerOff: []string{"statements_digest"}}
	if err := off.DigestsUsable(); err == nil || !strings.Contains(err.Error(), "consumer statements_digest is off") || !strings.Contains(err.Error(), "UPDATE performance_schema.setup_consumers") {
		t.Errorf("consumer off: DigestsUsable = %v", err)
	}
}

func TestRedactLiterals(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"SELECT name FROM items WHERE id = 4", "SELECT name FROM items WHERE id = ?"},
		{"SELECT * FROM t1 WHERE a='x''y' AND b=\"q\\\"r\" AND c = -3.5e+10", "SELECT * FROM t1 WHERE a=? AND b=? AND c = -?"},
		{"INSERT INTO `t 2`(c1) VALUES (0x1F, X'ab', b'101', .5)", "INSERT INTO `t 2`(c1) VALUES (?, ?, ?, .?)"},
		{"SELECT t1.c2, @@max_connections, @v1 FROM db1.t1", "SELECT t1.c2, @@max_connections, @v1 FROM db1.t1"},
		{"SELECT `a'b`, 'unterminated", "SELECT `a'b`, ?"},
		{"SELECT 'é', ñ1 FROM t", "SELECT ?, ñ1 FROM t"},
		{"UPDATE u SET p = 'secret' WHERE id IN (1,2,3) LIMIT 10", "UPDATE u SET p = ? WHERE id IN (?,?,?) LIMIT ?"},
	} {
		if got := RedactLiterals(tt.in); got != tt.want {
			t.Errorf("RedactLiterals(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func FuzzRedactLiterals(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT 'a''b' FROM `t`", "x'0f' 1e-5 .5 t.1a", "'\\", "`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		once := RedactLiterals(q)
		if twice := RedactLiterals(once); twice != once {
			t.Errorf("not idempotent: %q → %q → %q", q, once, twice)
		}
	})
}
