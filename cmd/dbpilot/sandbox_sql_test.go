package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// withStdin makes os.Stdin read s for the rest of the test.
func withStdin(t *testing.T, s string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = old; f.Close() })
}

// TestSandboxSQLUsage checks the refusals that need no server: the script
// is read and split before the sandbox is looked up.
func TestSandboxSQLUsage(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	script := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(script, []byte("SELECT 1;\nSELECT 'oops;\n"), 0o600)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no script", []string{"sandbox", "sql", "x", "1"}, "needs NAME NODE and a script"},
		{"too many", []string{"sandbox", "sql", "x", "1", "SELECT 1", "SELECT 2"}, "needs NAME NODE and a script"},
		{"argument and file", []string{"sandbox", "sql", "x", "1", "SELECT 1", "--file", script}, "either as an argument or with --file"},
		{"unterminated string", []string{"sandbox", "sql", "x", "1", "SELECT 1;\n\nSELECT \"a"}, `sandbox sql: script: line 3: unterminated "string"`},
		{"unterminated string in a file", []string{"sandbox", "sql", "x", "1", "--file", script}, "sandbox sql: script: line 2: unterminated 'string'"},
		{"missing file", []string{"sandbox", "sql", "x", "1", "--file", script + ".none"}, "sandbox sql: read the script: open "},
		{"empty", []string{"sandbox", "sql", "x", "1", " -- nothing\n;"}, "the script holds no statement"},
		{"delimiter without value", []string{"sandbox", "sql", "x", "1", "DELIMITER\nSELECT 1"}, "line 1: DELIMITER needs the new delimiter"},
		{"unknown sandbox", []string{"sandbox", "sql", "nosuch", "1", "SELECT 1"}, `no sandbox named "nosuch"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, errOut, tt.want)
			}
		})
	}
}

// TestSandboxSQLScript runs scripts of several statements on a real server.
func TestSandboxSQLScript(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	sql := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append([]string{"sandbox", "sql", d.Name, "1"}, args...)...)
	}

	t.Run("the issue's script", func(t *testing.T) {
		code, out, errOut := sql(t, "create database bb; create table bb.t(id int primary key)")
		if code != 0 || out != "" {
			t.Fatalf("exit %d\nstdout %q\nstderr %s", code, out, errOut)
		}
	})

	t.Run("result sets in order", func(t *testing.T) {
		code, out, errOut := sql(t, `INSERT INTO bb.t VALUES (1), (2), (3);
			SELECT id, IF(id = 2, NULL, 'a;b') AS v FROM bb.t ORDER BY id; -- a comment; with a semicolon
			# another; comment
			SELECT COUNT(*) AS n FROM bb.t /* c; */;
			SELECT 'x' AS "semi;colon"`)
		want := "id  v\n1   a;b\n2   NULL\n3   a;b\n\nn\n3\n\nsemi;colon\nx\n"
		if code != 0 || out != want {
			t.Fatalf("exit %d\nstdout\n%s\nwant\n%s\nstderr %s", code, out, want, errOut)
		}
	})

	t.Run("standard input, one session", func(t *testing.T) {
		withStdin(t, "USE bb;\nSET @n := 10;\nINSERT INTO t VALUES (@n);\nSELECT MAX(id) AS max FROM t;\nSELECT DATABASE() AS db\n")
		code, out, errOut := sql(t, "-")
		if want := "max\n10\n\ndb\nbb\n"; code != 0 || out != want {
			t.Fatalf("exit %d\nstdout\n%s\nwant\n%s\nstderr %s", code, out, want, errOut)
		}
	})

	t.Run("a failing statement stops the script", func(t *testing.T) {
		code, out, errOut := sql(t, "SELECT 1 AS one;\n\nINSERT INTO bb.nosuch (id)\n  VALUES (1);\nCREATE DATABASE never_created")
		if code != 2 || out != "one\n1\n" {
			t.Fatalf("exit %d\nstdout %q\nstderr %s", code, out, errOut)
		}
		for _, want := range []string{
			"dbpilot: mysql: statement 2 of 3 (line 3) on " + d.Nodes[0].Key().String() + ": ",
			"Table 'bb.nosuch' doesn't exist\n",
			"\n  INSERT INTO bb.nosuch (id)\n    VALUES (1)\n",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
		if _, out, _ := sql(t, "SHOW DATABASES LIKE 'never%'"); strings.Contains(out, "never_created") {
			t.Errorf("the statement after the failing one ran: %q", out)
		}
	})

	t.Run("a long statement is named in full", func(t *testing.T) {
		long := "SELECT " + strings.Repeat("1 + ", 200) + "nosuch_column"
		code, _, errOut := sql(t, "SELECT 1;"+long)
		if code != 2 || !strings.Contains(errOut, "statement 2 of 2 (line 1)") || !strings.Contains(errOut, "\n  "+long+"\n") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})

	t.Run("delimiter and a procedure", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "proc.sql")
		script := `DROP PROCEDURE IF EXISTS bb.p;
DELIMITER //
CREATE PROCEDURE bb.p(n INT)
BEGIN
  -- two result sets; the semicolons stay inside the body
  SELECT n AS arg;
  SELECT COUNT(*) AS rows_now FROM bb.t WHERE id <= n;
END//
DELIMITER ;
CALL bb.p(2);
`
		if err := os.WriteFile(p, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := sql(t, "--file", p)
		if want := "arg\n2\n\nrows_now\n2\n"; code != 0 || out != want {
			t.Fatalf("exit %d\nstdout\n%s\nwant\n%s\nstderr %s", code, out, want, errOut)
		}
		// A failure inside a DELIMITER block names the right line.
		code, _, errOut = sql(t, "DELIMITER $$\nSELECT 1$$\n\nCREATE PROCEDURE bb.p() BEGIN SELECT 1; END$$")
		if code != 2 || !strings.Contains(errOut, "statement 2 of 2 (line 4)") || !strings.Contains(errOut, "PROCEDURE p already exists") ||
			!strings.Contains(errOut, "\n  CREATE PROCEDURE bb.p() BEGIN SELECT 1; END\n") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})

	t.Run("json", func(t *testing.T) {
		code, out, errOut := sql(t, "--json", "DO 1; SELECT id FROM bb.t WHERE id < 3 ORDER BY id; SELECT NULL AS x")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		var docs [][]map[string]string
		for dec.More() {
			var doc []map[string]string
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("%v in\n%s", err, out)
			}
			docs = append(docs, doc)
		}
		if len(docs) != 3 || len(docs[0]) != 0 || len(docs[1]) != 2 || docs[1][1]["id"] != "2" || len(docs[2]) != 1 || len(docs[2][0]) != 0 {
			t.Errorf("json documents %v from\n%s", docs, out)
		}
	})

	t.Run("passwords redacted", func(t *testing.T) {
		code, _, errOut := sql(t, "CREATE USER 'u1'@'%' IDENTIFIED BY 'Sekr1t-pw';\nCREATE USER 'u1'@'%' IDENTIFIED BY 'Sekr1t-pw'")
		if code != 2 || strings.Contains(errOut, "Sekr1t") || !strings.Contains(errOut, "IDENTIFIED BY '***'") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})
}
