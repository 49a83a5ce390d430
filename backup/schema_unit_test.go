package backup

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func readCreate(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "create", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(string(b), "\n")
}

func TestSplitSecondaryIndexes(t *testing.T) {
	tests := []struct {
		file   string // in testdata/create, or "" for inline
		create string
		want   string // "" = unchanged
		adds   []string
	}{
		{
			file: "sbtest1.sql",
			want: "CREATE TABLE `sbtest1` (\n" +
				"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
				"  `k` int(11) NOT NULL DEFAULT 0,\n" +
				"  `c` char(120) NOT NULL DEFAULT '',\n" +
				"  `pad` char(60) NOT NULL DEFAULT '',\n" +
				"  PRIMARY KEY (`id`)\n" +
				") ENGINE=InnoDB AUTO_INCREMENT=10001 DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci",
			adds: []string{"ADD KEY `k_1` (`k`)"},
		},
		{
			file: "unique_key_fulltext.sql",
			want: "CREATE TABLE `articles` (\n" +
				"  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,\n" +
				"  `slug` varchar(64) NOT NULL,\n" +
				"  `author_id` int(11) NOT NULL,\n" +
				"  `title` varchar(200) NOT NULL,\n" +
				"  `body` text DEFAULT NULL,\n" +
				"  `created` datetime NOT NULL DEFAULT current_timestamp(),\n" +
				"  PRIMARY KEY (`id`),\n" +
				"  UNIQUE KEY `slug` (`slug`)\n" +
				") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
			adds: []string{
				"ADD KEY `author_created` (`author_id`,`created`)",
				"ADD KEY `title_prefix` (`title`(20)) COMMENT 'prefix, with a comma,'",
				"ADD FULLTEXT KEY `ft_body` (`title`,`body`)",
			},
		},
		{file: "foreign_key.sql"},
		{file: "no_secondary_index.sql"},
		{
			file: "mysql8_check_spatial.sql",
			want: "CREATE TABLE `events` (\n" +
				"  `id` bigint NOT NULL AUTO_INCREMENT,\n" +
				"  `ts` datetime NOT NULL,\n" +
				"  `kind` varchar(20) COLLATE utf8mb4_bin NOT NULL,\n" +
				"  `geo` point NOT NULL /*!80003 SRID 4326 */,\n" +
				"  PRIMARY KEY (`id`),\n" +
				"  CONSTRAINT `events_chk_1` CHECK ((`kind` <> _utf8mb4''))\n" +
				") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci",
			adds: []string{"ADD KEY `kind` (`kind`) /*!80000 INVISIBLE */", "ADD SPATIAL KEY `geo` (`geo`)"},
		},
		{
			file: "partitioned.sql",
			want: "CREATE TABLE `metrics` (\n" +
				"  `id` int(11) NOT NULL,\n" +
				"  `v` int(11) DEFAULT NULL,\n" +
				"  PRIMARY KEY (`id`)\n" +
				") ENGINE=InnoDB DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci\n" +
				" PARTITION BY RANGE (`id`)\n" +
				"(PARTITION `p0` VALUES LESS THAN (1000) ENGINE = InnoDB,\n" +
				" PARTITION `p1` VALUES LESS THAN MAXVALUE ENGINE = InnoDB)",
			adds: []string{"ADD KEY `v` (`v`)"},
		},
		{
			create: "CREATE TABLE `logs` (\n  `msg` text COMMENT 'a,',\n  KEY `msg` (`msg`(10))\n) ENGINE=InnoDB",
			want:   "CREATE TABLE `logs` (\n  `msg` text COMMENT 'a,'\n) ENGINE=InnoDB",
			adds:   []string{"ADD KEY `msg` (`msg`(10))"},
		},
		{
			create: "CREATE TABLE `heap` (\n  `a` int(11) DEFAULT NULL\n) ENGINE=InnoDB",
		},
		{
			// A column named like a keyword is not an index line.
			create: "CREATE TABLE `k` (\n  `KEY` int(11) NOT NULL,\n  `INDEX` int(11) NOT NULL,\n  PRIMARY KEY (`KEY`)\n) ENGINE=InnoDB",
		},
	}
	for _, tc := range tests {
		name := tc.file
		create := tc.create
		if name != "" {
			create = readCreate(t, name)
		} else {
			name = strings.Fields(create)[2]
		}
		t.Run(name, func(t *testing.T) {
			got, adds := splitSecondaryIndexes(create)
			want := tc.want
			if want == "" {
				want = create
			}
			if got != want {
				t.Errorf("remaining statement:\n%s\nwant:\n%s", got, want)
			}
			if !reflect.DeepEqual(adds, tc.adds) {
				t.Errorf("adds = %q, want %q", adds, tc.adds)
			}
			// No dangling comma before the closing parenthesis.
			lines := strings.Split(got, "\n")
			for i := 1; i < len(lines); i++ {
				if strings.HasPrefix(lines[i], ")") && strings.HasSuffix(lines[i-1], ",") {
					t.Errorf("dangling comma: %q before %q", lines[i-1], lines[i])
				}
			}
			for _, a := range adds {
				if strings.HasSuffix(a, ",") || strings.Contains(got, strings.TrimPrefix(a, "ADD ")) {
					t.Errorf("add %q: trailing comma or still in the statement", a)
				}
			}
		})
	}
}

func TestSchemaWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, schemaDir), 0o700); err != nil {
		t.Fatal(err)
	}
	d := &dumpDir{path: dir}
	routine := "CREATE DEFINER=`root`@`localhost` PROCEDURE `p`(IN x INT)\n" +
		"BEGIN\n" +
		"  DECLARE s VARCHAR(20) DEFAULT 'a;b';\n" +
		"  SELECT 1; SELECT ';;' AS semis;\n" +
		"  SET @y = 'x;;y';;\n" +
		"  SELECT \"\\n;;\\n\" AS escaped_newlines;\n" +
		"END"
	var w schemaWriter
	w.add("CREATE TABLE `t` (\n  `a` int(11) NOT NULL\n) ENGINE=InnoDB;")
	w.withSession("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", "utf8mb4", "utf8mb4_general_ci", routine)
	w.withSession("", "", "", "CREATE VIEW `v` AS SELECT 1 AS `x`")
	w.add("SELECT SETVAL(`s`, 5, 0) ;\n\t ")
	if w.n != 10 {
		t.Fatalf("writer counted %d statements, want 10", w.n)
	}
	rel, err := w.write(d, "db.routines.sql")
	if err != nil {
		t.Fatal(err)
	}
	if rel != filepath.Join(schemaDir, "db.routines.sql") {
		t.Errorf("write returned %q", rel)
	}
	got, err := readStatements(dir, rel)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CREATE TABLE `t` (\n  `a` int(11) NOT NULL\n) ENGINE=InnoDB",
		"SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'",
		"SET SESSION character_set_client = 'utf8mb4'",
		"SET SESSION collation_connection = 'utf8mb4_general_ci'",
		routine,
		"SET SESSION sql_mode = DEFAULT, character_set_client = DEFAULT, collation_connection = DEFAULT",
		"SET SESSION sql_mode = ''",
		"CREATE VIEW `v` AS SELECT 1 AS `x`",
		"SET SESSION sql_mode = DEFAULT, character_set_client = DEFAULT, collation_connection = DEFAULT",
		"SELECT SETVAL(`s`, 5, 0)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("statements:\n%q\nwant\n%q", got, want)
	}
	// The file is what the mysql client replays too.
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "-- dbpilot schema file\nDELIMITER ;;\nCREATE TABLE") || !strings.HasSuffix(string(b), "SELECT SETVAL(`s`, 5, 0)\n;;\n") {
		t.Errorf("file text:\n%s", b)
	}

	// The same name twice is refused (files are created exclusively).
	if _, err := w.write(d, "db.routines.sql"); err == nil {
		t.Errorf("second write of the same file succeeded")
	}
	// An empty writer writes nothing.
	var empty schemaWriter
	if rel, err := empty.write(d, "empty.sql"); rel != "" || err != nil {
		t.Errorf("empty write = %q, %v", rel, err)
	}
	if _, err := os.Stat(filepath.Join(dir, schemaDir, "empty.sql")); !os.IsNotExist(err) {
		t.Errorf("empty writer created a file: %v", err)
	}
}

func TestReadStatementsErrors(t *testing.T) {
	tests := []struct {
		name     string
		content  *string // nil: no file
		want     []string
		contains string
	}{
		{name: "missing file", contains: "read schema file"},
		{name: "no header", content: ptr("CREATE TABLE t (a int)\n;;\n"), contains: "is not a dbpilot schema file"},
		{name: "header without DELIMITER", content: ptr("-- dbpilot schema file\nCREATE TABLE t (a int)\n;;\n"), contains: "is not a dbpilot schema file"},
		{name: "empty file", content: ptr(""), contains: "is not a dbpilot schema file"},
		{name: "truncated in a statement", content: ptr(schemaHeader + "SELECT 1\n;;\nCREATE TABLE t (\n  a int"), contains: "is truncated"},
		{name: "truncated in the delimiter", content: ptr(schemaHeader + "SELECT 1\n;;\nSELECT 2\n;"), contains: "is truncated"},
		{name: "missing final newline", content: ptr(schemaHeader + "SELECT 1\n;;"), contains: "is truncated"},
		{name: "header only", content: ptr(schemaHeader), want: nil},
		{name: "two statements", content: ptr(schemaHeader + "SELECT 1\n;;\nSELECT ';;'\n;;\n"), want: []string{"SELECT 1", "SELECT ';;'"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rel := filepath.Join(schemaDir, "x.sql")
			if tc.content != nil {
				writeTestFile(t, filepath.Join(dir, rel), *tc.content)
			}
			got, err := readStatements(dir, rel)
			if tc.contains == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("statements = %q, want %q", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("readStatements = %q, want an error", got)
			}
			if code := dbpilot.ErrorCode(err); code != dbpilot.EINVALID {
				t.Errorf("code = %q, want %q", code, dbpilot.EINVALID)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q", err, tc.contains)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestSchemaHelpers(t *testing.T) {
	for _, u := range []string{"root", "mariadb.sys", "mysql.sys", "mysql.session", "mysql.infoschema", ""} {
		if !systemAccount(u) {
			t.Errorf("systemAccount(%q) = false", u)
		}
	}
	for _, u := range []string{"app", "Root", "repl", "mysql"} {
		if systemAccount(u) {
			t.Errorf("systemAccount(%q) = true", u)
		}
	}
	if got := titleCase("PROCEDURE"); got != "Procedure" {
		t.Errorf("titleCase = %q", got)
	}
	v := "x"
	m := rowMap([]string{"a", "b"}, [][]*string{{&v, nil}})
	if !reflect.DeepEqual(m, map[string]string{"a": "x", "b": ""}) {
		t.Errorf("rowMap = %v", m)
	}
	if m := rowMap([]string{"a"}, nil); len(m) != 0 {
		t.Errorf("rowMap of no rows = %v", m)
	}
	if got := inList([]string{"a", "it's"}); got != `'a','it\'s'` {
		t.Errorf("inList = %q", got)
	}
}

// TestSplitSecondaryIndexesAutoIncrement: InnoDB needs an index that starts
// with the AUTO_INCREMENT column; when the only one is a plain KEY, taking
// it out makes CREATE TABLE fail (ER_WRONG_AUTO_KEY, 1075).
func TestSplitSecondaryIndexesAutoIncrement(t *testing.T) {
	got, adds := splitSecondaryIndexes(readCreate(t, "auto_increment_key.sql"))
	if !strings.Contains(got, "  KEY `id` (`id`)") {
		t.Errorf("the AUTO_INCREMENT column's index was taken out:\n%s", got)
	}
	if !reflect.DeepEqual(adds, []string{"ADD KEY `v` (`v`)"}) {
		t.Errorf("adds = %q, want only KEY v", adds)
	}
}
