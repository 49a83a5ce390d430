package mysql

import (
	"regexp"
	"testing"
)

func TestFingerprint(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"SELECT * FROM t WHERE id = 1", "select * from t where id = ?"},
		{"select  *\n\tFROM   t  WHERE id=42;", "select * from t where id=?"},
		{"SELECT name FROM t WHERE name = 'apple' /* comment with 'quote' */;", "select name from t where name = ?"},
		{"SELECT /* hint */ name, price\n# hash comment inside\nFROM t\nWHERE name = \"double\" AND price > -1 AND note IS NULL\nORDER BY name ASC, price DESC LIMIT 2, 10",
			"select name, price from t where name = ? and price > ? and note is ? order by name, price desc limit ?"},
		{"SELECT 'it''s', 'a\\'b', \"x\" FROM t", "select ?, ?, ? from t"},
		{"SELECT x'4142', b'01', 0xFF, .5, 1e3, 1.5e-3, TRUE, FALSE FROM DUAL", "select ?, ?, ?, ?, ?, ?, ?, ? from dual"},
		{"SELECT name FROM t WHERE id IN (1, 2, 3)", "select name from t where id in(?+)"},
		{"SELECT name FROM t WHERE id IN (7)", "select name from t where id in(?+)"},
		{"SELECT name FROM t WHERE id NOT IN ( 'a' ,'b' )", "select name from t where id not in(?+)"},
		{"INSERT INTO t (name, price) VALUES ('a', 1), ('b', 2), ('c', -3.5e2)", "insert into t (name, price) values(?+)"},
		{"INSERT INTO t (a) VALUES (1)", "insert into t (a) values(?+)"},
		{"INSERT INTO t (a, b) VALUES (1, NOW()), (2, NOW()) ON DUPLICATE KEY UPDATE b = NOW()",
			"insert into t (a, b) values (?, now()) on duplicate key update b = now()"},
		{"REPLACE INTO t (id, name) VALUES (1, 'apple')", "replace into t (id, name) values(?+)"},
		{"USE shop", "use ?"},
		{"use `my db`;", "use `my db`"}, // a name with a space is not one word: kept
		{"CALL no_such_proc(1, 'x')", "call no_such_proc"},
		{"administrator command: Quit", "administrator command: Quit"},
		{"SELECT * FROM t1 JOIN `t2` ON t1.a2 = `t2`.b3 WHERE t1.c = 5", "select * from t1 join `t2` on t1.a2 = `t2`.b3 where t1.c = ?"},
		{"SELECT a-1, a - 1, -1, f(-2), a+-3 FROM t", "select a-?, a - ?, ?, f(?), a+? from t"},
		{"SELECT * FROM t LIMIT 5 OFFSET 10", "select * from t limit ?"},
		{"SELECT 1 -- trailing\n", "select ?"},
		{"SELECT @@version, @a1", "select @@version, @a1"},
		{"SELECT ÄÖ FROM t WHERE ü = 'é'", "select ÄÖ from t where ü = ?"},
		{"  ", ""},
		{"SELECT 'unterminated", "select ?"},
		{"SELECT `unterminated", "select `unterminated"},
		{"SELECT /* unterminated", "select"},
	} {
		if got := Fingerprint(tt.in); got != tt.want {
			t.Errorf("Fingerprint(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Statements that differ only by literals, spacing, case and comments
// fingerprint alike; others do not.
func TestFingerprintGroups(t *testing.T) {
	same := [][2]string{
		{"SELECT * FROM t WHERE id = 1", "select *  from t where id = 99 -- x"},
		{"SELECT * FROM t WHERE id IN (1)", "SELECT * FROM t WHERE id IN (1,2,3,4,5,6)"},
		{"INSERT INTO t VALUES (1,'a')", "INSERT INTO t VALUES (2,'b'),(3,'c')"},
	}
	for _, p := range same {
		if a, b := Fingerprint(p[0]), Fingerprint(p[1]); a != b || FingerprintDigest(a) != FingerprintDigest(b) {
			t.Errorf("%q and %q differ: %q, %q", p[0], p[1], a, b)
		}
	}
	if Fingerprint("SELECT a FROM t") == Fingerprint("SELECT b FROM t") {
		t.Error("different columns fingerprint alike")
	}
}

func TestFingerprintDigest(t *testing.T) {
	d := FingerprintDigest("select ?")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(d) {
		t.Errorf("FingerprintDigest = %q, want 32 lowercase hex characters", d)
	}
	if d == FingerprintDigest("select ? ") || d != FingerprintDigest("select ?") {
		t.Error("FingerprintDigest is not a function of its input")
	}
}

func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{"SELECT 1", "INSERT INTO t VALUES (1),(2)", "x'0f' 1e-5 .5 t.1a", "'\\", "`", "/*", "-- ", "use x", "call p("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		once := Fingerprint(q)
		if len(once) > len(q)+8 {
			t.Errorf("Fingerprint(%q) = %q grew", q, once)
		}
	})
}
