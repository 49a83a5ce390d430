package backup

import (
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestQuoteIdent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a", "`a`"},
		{"", "``"},
		{"a`b", "`a``b`"},
		{"``", "``````"},
		{"sp ace.dot", "`sp ace.dot`"},
		{"ü€", "`ü€`"},
		{`a'b"c\`, "`a'b\"c\\`"},
	}
	for _, tc := range tests {
		if got := QuoteIdent(tc.in); got != tc.want {
			t.Errorf("QuoteIdent(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestQuoteString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `''`},
		{"abc", `'abc'`},
		{"it's", `'it\'s'`},
		{`back\slash`, `'back\\slash'`},
		{"nul\x00byte", `'nul\0byte'`},
		{"new\nline", `'new\nline'`},
		{"cr\rhere", `'cr\rhere'`},
		{"ctrl\x1aZ", `'ctrl\ZZ'`},
		{"tab\tstays", "'tab\tstays'"},
		{`dq"stays`, `'dq"stays'`},
		{`\'`, `'\\\''`},
		{"ü", "'ü'"},
	}
	for _, tc := range tests {
		if got := quoteString(tc.in); got != tc.want {
			t.Errorf("quoteString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// unquoteMySQL reads back a literal as the server does with backslash
// escapes on; ok is false when the literal is not closed properly.
func unquoteMySQL(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	body := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch c {
		case '\'':
			return "", false // an unescaped quote would end the literal early
		case '\\':
			i++
			if i == len(body) {
				return "", false
			}
			switch body[i] {
			case '0':
				b.WriteByte(0)
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 'Z':
				b.WriteByte(0x1a)
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(body[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func TestQuoteStringRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	alphabet := []byte("ab'\\\"\x00\n\r\x1a\t%_ \xff")
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.Intn(12))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		in := string(b)
		q := quoteString(in)
		got, ok := unquoteMySQL(q)
		if !ok || got != in {
			t.Fatalf("quoteString(%q) = %q reads back as %q (ok %v)", in, q, got, ok)
		}
		if strings.ContainsAny(q[1:len(q)-1], "\x00\n\r\x1a") {
			t.Fatalf("quoteString(%q) = %q keeps a raw control byte", in, q)
		}
	}
}

func decodeFileName(t *testing.T, s string) string {
	t.Helper()
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '@' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			t.Fatalf("fileName output %q: truncated escape", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			t.Fatalf("fileName output %q: bad escape: %v", s, err)
		}
		b = append(b, byte(v))
		i += 2
	}
	return string(b)
}

func TestFileName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"sbtest1", "sbtest1"},
		{"Az_09-x", "Az_09-x"},
		{"a.b", "a@2eb"},
		{"a@2eb", "a@402eb"},
		{"a/b", "a@2fb"},
		{"..", "@2e@2e"},
		{"../etc", "@2e@2e@2fetc"},
		{"a b", "a@20b"},
		{"ü", "@c3@bc"},
		{"日本", "@e6@97@a5@e6@9c@ac"},
		{"x\x00y", "x@00y"},
		{"\xff", "@ff"},
		{`a\b`, "a@5cb"},
		{"A:B", "A@3aB"},
	}
	for _, tc := range tests {
		if got := fileName(tc.in); got != tc.want {
			t.Errorf("fileName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Names that look alike never collide.
	if fileName("a.b") == fileName("a@2eb") {
		t.Errorf("fileName collision between %q and %q", "a.b", "a@2eb")
	}
}

func TestFileNameInjective(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	alphabet := []byte("aZ0_-.@/\\ \x00\xc3\xbc2e")
	seen := map[string]string{}
	for i := 0; i < 5000; i++ {
		b := make([]byte, rng.Intn(8))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		in := string(b)
		out := fileName(in)
		for _, c := range []byte(out) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '@') {
				t.Fatalf("fileName(%q) = %q has byte %q", in, out, c)
			}
		}
		if back := decodeFileName(t, out); back != in {
			t.Fatalf("fileName(%q) = %q decodes to %q", in, out, back)
		}
		if prev, ok := seen[out]; ok && prev != in {
			t.Fatalf("fileName(%q) = fileName(%q) = %q", in, prev, out)
		}
		seen[out] = in
	}
}

func TestKeyLiteral(t *testing.T) {
	tests := []struct {
		name string
		col  keyCol
		v    string
		want string
	}{
		{"varbinary", keyCol{binary: true}, "a\x00\xff", "X'6100ff'"},
		{"binary charset", keyCol{charset: "binary"}, "ab", "X'6162'"},
		{"empty binary", keyCol{binary: true}, "", "X''"},
		{"utf8mb4 string", keyCol{charset: "utf8mb4"}, "é", "_utf8mb4 X'c3a9'"},
		{"latin1 string with quote", keyCol{charset: "latin1"}, "it's", "_latin1 X'69742773'"},
		{"empty string", keyCol{charset: "utf8mb4"}, "", "_utf8mb4 X''"},
		{"integer", keyCol{numeric: true}, "12345", "12345"},
		{"negative", keyCol{numeric: true}, "-42", "-42"},
		{"decimal", keyCol{numeric: true}, "3.1400", "3.1400"},
		{"float exponent", keyCol{numeric: true}, "1.5e+10", "1.5e+10"},
		{"float negative exponent", keyCol{numeric: true}, "-2E-7", "'-2E-7'"},
		{"uint64 max", keyCol{numeric: true}, "18446744073709551615", "18446744073709551615"},
		{"numeric but not a plain number", keyCol{numeric: true}, "0x10", "'0x10'"},
		{"numeric injection attempt", keyCol{numeric: true}, "1 OR 1=1", "'1 OR 1=1'"},
		{"numeric empty", keyCol{numeric: true}, "", "''"},
		{"numeric minus inside", keyCol{numeric: true}, "1-2", "'1-2'"},
		{"date", keyCol{}, "2024-01-02", "'2024-01-02'"},
		{"datetime", keyCol{}, "2024-01-02 03:04:05.123456", "'2024-01-02 03:04:05.123456'"},
		{"time negative", keyCol{}, "-838:59:59", "'-838:59:59'"},
		{"untyped with quote", keyCol{}, "a'b\\", `'a\'b\\'`},
		{"binary wins over numeric", keyCol{binary: true, numeric: true}, "1", "X'31'"},
	}
	for _, tc := range tests {
		if got := keyLiteral(tc.col, []byte(tc.v)); got != tc.want {
			t.Errorf("%s: keyLiteral(%+v, %q) = %q, want %q", tc.name, tc.col, tc.v, got, tc.want)
		}
	}
}

func TestFilterSelection(t *testing.T) {
	type check struct {
		db, table string // table "" checks DatabaseSelected only
		want      bool
	}
	tests := []struct {
		name   string
		f      Filter
		checks []check
	}{
		{"empty filter: every non-system database", Filter{}, []check{
			{"app", "", true}, {"app", "t", true},
			{"mysql", "", false}, {"MySQL", "", false}, {"sys", "", false},
			{"information_schema", "", false}, {"performance_schema", "", false},
			{"mysql", "user", false},
			{"mysqlx", "", true},
		}},
		{"databases named, system ones too", Filter{Databases: []string{"mysql", "app"}}, []check{
			{"mysql", "", true}, {"mysql", "user", true}, {"app", "t", true},
			{"other", "", false}, {"other", "t", false}, {"App", "", false},
		}},
		{"include database pattern without dot", Filter{Include: []string{"app"}}, []check{
			{"app", "", true}, {"app", "anything", true}, {"app2", "", false}, {"shop", "t", false},
		}},
		{"include table pattern", Filter{Include: []string{"app.t*"}}, []check{
			{"app", "", true}, {"app", "t1", true}, {"app", "t", true}, {"app", "x", false},
			{"shop", "", false}, {"shop", "t1", false},
		}},
		{"include with ? wildcard", Filter{Include: []string{"a?p"}}, []check{
			{"app", "", true}, {"axp", "t", true}, {"ap", "", false}, {"appp", "", false},
		}},
		{"include wildcard on database part", Filter{Include: []string{"sh*.orders"}}, []check{
			{"shop", "", true}, {"shop", "orders", true}, {"shop", "items", false},
			{"shed", "orders", true}, {"app", "orders", false},
		}},
		{"include star keeps system databases out", Filter{Include: []string{"*"}}, []check{
			{"app", "t", true}, {"mysql", "", false}, {"sys", "x", false},
		}},
		{"include star dot star", Filter{Include: []string{"*.*"}}, []check{
			{"app", "t", true}, {"performance_schema", "", false},
		}},
		{"exclude database", Filter{Exclude: []string{"app"}}, []check{
			{"app", "", false}, {"app", "t", false}, {"shop", "t", true},
		}},
		{"exclude database wildcard", Filter{Exclude: []string{"tmp_*"}}, []check{
			{"tmp_1", "", false}, {"tmp", "", true}, {"app", "", true},
		}},
		{"exclude tables", Filter{Exclude: []string{"app.log*"}}, []check{
			{"app", "", true}, {"app", "log1", false}, {"app", "log", false}, {"app", "t", true}, {"shop", "log1", true},
		}},
		{"include database, exclude one table", Filter{Include: []string{"app.*"}, Exclude: []string{"app.secret"}}, []check{
			{"app", "t", true}, {"app", "secret", false}, {"shop", "t", false},
		}},
		{"exclude beats include", Filter{Include: []string{"app"}, Exclude: []string{"app"}}, []check{
			{"app", "", false}, {"app", "t", false},
		}},
		{"several includes", Filter{Include: []string{"app.a", "shop"}}, []check{
			{"app", "a", true}, {"app", "b", false}, {"shop", "b", true}, {"other", "", false},
		}},
		{"databases and include together", Filter{Databases: []string{"mysql"}, Include: []string{"mysql.user"}}, []check{
			{"mysql", "", true}, {"mysql", "user", true}, {"mysql", "db", false}, {"app", "user", false},
		}},
		{"patterns are case-sensitive", Filter{Include: []string{"App"}}, []check{
			{"App", "", true}, {"app", "", false},
		}},
		{"exact names with special characters", Filter{Include: []string{"my-db.t_1"}}, []check{
			{"my-db", "t_1", true}, {"my-db", "t_2", false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range tc.checks {
				var got bool
				if c.table == "" {
					got = tc.f.DatabaseSelected(c.db)
				} else {
					got = tc.f.TableSelected(c.db, c.table)
				}
				if got != c.want {
					t.Errorf("%+v selects %s.%s = %v, want %v", tc.f, c.db, c.table, got, c.want)
				}
			}
		})
	}
}

func TestFilterValidate(t *testing.T) {
	tests := []struct {
		name    string
		f       Filter
		wantErr string // "" = valid
	}{
		{"zero value", Filter{}, ""},
		{"good patterns", Filter{Databases: []string{"a"}, Include: []string{"a.*", "b?", "[cd]x"}, Exclude: []string{"a.log_*"}}, ""},
		{"bad include pattern", Filter{Include: []string{"["}}, `bad pattern "["`},
		{"bad exclude pattern", Filter{Exclude: []string{"db.[t"}}, `bad pattern "db.[t"`},
		{"bad pattern after a mismatch", Filter{Include: []string{"zz["}}, `bad pattern "zz["`},
		{"trailing backslash", Filter{Include: []string{`db\`}}, "bad pattern"},
		{"empty include", Filter{Include: []string{""}}, "empty --include/--exclude pattern"},
		{"empty exclude", Filter{Exclude: []string{"a", ""}}, "empty --include/--exclude pattern"},
		{"empty database", Filter{Databases: []string{"a", ""}}, "empty database name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tc.wantErr)
			}
			if code := dbpilot.ErrorCode(err); code != dbpilot.EINVALID {
				t.Errorf("code = %q, want %q", code, dbpilot.EINVALID)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseWhere(t *testing.T) {
	good := []struct {
		in   []string
		want map[string]string
	}{
		{nil, map[string]string{}},
		{[]string{"db.t:id > 5"}, map[string]string{"db.t": "id > 5"}},
		{[]string{"db.t:  id > 5  ", "d2.t2:x = 'a:b'"}, map[string]string{"db.t": "id > 5", "d2.t2": "x = 'a:b'"}},
		{[]string{"db.t.x:1=1"}, map[string]string{"db.t.x": "1=1"}},
		{[]string{"db.t:a=1", "db.u:a=1"}, map[string]string{"db.t": "a=1", "db.u": "a=1"}},
	}
	for _, tc := range good {
		got, err := ParseWhere(tc.in)
		if err != nil {
			t.Errorf("ParseWhere(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseWhere(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	bad := []struct {
		in      []string
		wantErr string
	}{
		{[]string{"db.t"}, `--where "db.t": want db.table:condition`},
		{[]string{"db.t id > 5"}, "want db.table:condition"},
		{[]string{":id > 5"}, "want db.table:condition"},
		{[]string{"dbt:id > 5"}, `--where "dbt:id > 5": want db.table:condition`},
		{[]string{"db.t:"}, "want db.table:condition"},
		{[]string{"db.t:   "}, "want db.table:condition"},
		{[]string{"db.t:a=1", "db.t:b=2"}, "--where given twice for db.t"},
		{[]string{"ok.t:a=1", "bad"}, `--where "bad"`},
	}
	for _, tc := range bad {
		got, err := ParseWhere(tc.in)
		if err == nil {
			t.Errorf("ParseWhere(%q) = %v, want an error", tc.in, got)
			continue
		}
		if got != nil {
			t.Errorf("ParseWhere(%q) returned %v with its error", tc.in, got)
		}
		if code := dbpilot.ErrorCode(err); code != dbpilot.EINVALID {
			t.Errorf("ParseWhere(%q): code %q, want %q", tc.in, code, dbpilot.EINVALID)
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseWhere(%q): error %q does not contain %q", tc.in, err, tc.wantErr)
		}
	}
}

// TestFilterSlashInNames: MySQL names may contain '/', which path.Match's
// '*' does not cross.
func TestFilterSlashInNames(t *testing.T) {
	if !(Filter{Include: []string{"app.*"}}).TableSelected("app", "a/b") {
		t.Errorf("--include app.* does not select app.a/b")
	}
	if (Filter{Exclude: []string{"app.*"}}).TableSelected("app", "a/b") {
		t.Errorf("--exclude app.* does not exclude app.a/b")
	}
	if !(Filter{Include: []string{"a*"}}).DatabaseSelected("a/b") {
		t.Errorf("--include a* does not select database a/b")
	}
}

func TestFilterString(t *testing.T) {
	tests := []struct {
		f    Filter
		want string
	}{
		{Filter{}, ""},
		{Filter{Include: []string{"shop"}, Exclude: []string{"shop.*"}}, "--include shop --exclude 'shop.*'"},
		{Filter{Databases: []string{"a", "b"}, Include: []string{"a.t?"}}, "--databases a,b --include 'a.t?'"},
		{Filter{Exclude: []string{"it's"}}, `--exclude 'it'\''s'`},
	}
	for _, tc := range tests {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}
