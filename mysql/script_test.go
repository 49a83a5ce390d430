package mysql

import (
	"errors"
	"strings"
	"testing"
)

func TestSplitScript(t *testing.T) {
	type st = Statement
	tests := []struct {
		name   string
		script string
		want   []Statement
	}{
		{"empty", "", nil},
		{"blanks and comments only", " \n-- c\n# d\n/* e */\n;;\n", nil},
		{"one without delimiter", "SELECT 1", []st{{"SELECT 1", 1, 1}}},
		{"one with delimiter and blanks", "  SELECT 1 ;  \n", []st{{"SELECT 1", 1, 1}}},
		{"the issue's script", "create database bb; create table bb.t(id int primary key)",
			[]st{{"create database bb", 1, 1}, {"create table bb.t(id int primary key)", 2, 1}}},
		{"lines", "SELECT 1;\n\nSELECT\n  2;\nSELECT 3",
			[]st{{"SELECT 1", 1, 1}, {"SELECT\n  2", 2, 3}, {"SELECT 3", 3, 5}}},
		{"empty statements skipped", ";;SELECT 1;;;SELECT 2;", []st{{"SELECT 1", 1, 1}, {"SELECT 2", 2, 1}}},
		{"semicolon in single quotes", "INSERT INTO t VALUES ('a;b');SELECT 2",
			[]st{{"INSERT INTO t VALUES ('a;b')", 1, 1}, {"SELECT 2", 2, 1}}},
		{"semicolon in double quotes", `SELECT "a;b"; SELECT 2`, []st{{`SELECT "a;b"`, 1, 1}, {"SELECT 2", 2, 1}}},
		{"semicolon in backticks", "CREATE TABLE `a;b` (i int); SELECT 2", []st{{"CREATE TABLE `a;b` (i int)", 1, 1}, {"SELECT 2", 2, 1}}},
		{"backslash escaped quote", `SELECT 'it\'s;'; SELECT 2`, []st{{`SELECT 'it\'s;'`, 1, 1}, {"SELECT 2", 2, 1}}},
		{"doubled quote", `SELECT 'it''s;', "a""b;"; SELECT 2`, []st{{`SELECT 'it''s;', "a""b;"`, 1, 1}, {"SELECT 2", 2, 1}}},
		{"backslash does not escape in backticks", "SELECT 1 AS `a\\`; SELECT 2", []st{{"SELECT 1 AS `a\\`", 1, 1}, {"SELECT 2", 2, 1}}},
		{"doubled backtick", "SELECT 1 AS `a``;b`; SELECT 2", []st{{"SELECT 1 AS `a``;b`", 1, 1}, {"SELECT 2", 2, 1}}},
		{"escaped backslash then quote ends", `SELECT 'a\\'; SELECT 2`, []st{{`SELECT 'a\\'`, 1, 1}, {"SELECT 2", 2, 1}}},
		{"string over lines", "SELECT 'a\nb;\nc';\nSELECT 2", []st{{"SELECT 'a\nb;\nc'", 1, 1}, {"SELECT 2", 2, 4}}},
		{"dash comment", "SELECT 1 -- not; here\n; SELECT 2", []st{{"SELECT 1 -- not; here", 1, 1}, {"SELECT 2", 2, 2}}},
		{"dash comment before statement", "-- first; comment\nSELECT 1;", []st{{"SELECT 1", 1, 2}}},
		{"dash dash without blank is minus minus", "SELECT 1--1; SELECT 2", []st{{"SELECT 1--1", 1, 1}, {"SELECT 2", 2, 1}}},
		{"dash comment at end", "SELECT 1; --", []st{{"SELECT 1", 1, 1}}},
		{"dash comment with tab", "SELECT 1 --\tx;\n;", []st{{"SELECT 1 --\tx;", 1, 1}}},
		{"hash comment", "SELECT 1 # a;b\n, 2; SELECT 3", []st{{"SELECT 1 # a;b\n, 2", 1, 1}, {"SELECT 3", 2, 2}}},
		{"block comment", "SELECT /* a;\nb */ 1; SELECT 2", []st{{"SELECT /* a;\nb */ 1", 1, 1}, {"SELECT 2", 2, 2}}},
		{"block comment before statement", "/* header;\n */\n\nSELECT 1", []st{{"SELECT 1", 1, 4}}},
		{"executable comment is a statement", "/*!40101 SET NAMES utf8mb4 */;\n/*M!100101 SET x=1 */;",
			[]st{{"/*!40101 SET NAMES utf8mb4 */", 1, 1}, {"/*M!100101 SET x=1 */", 2, 2}}},
		{"optimizer hint", "SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1", []st{{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1", 1, 1}}},
		{"quotes inside comments do not count", "SELECT 1 /* it's */; -- don't\nSELECT 2 # \"\n;",
			[]st{{"SELECT 1 /* it's */", 1, 1}, {"SELECT 2 # \"", 2, 2}}},
		{"comment markers inside quotes do not count", "SELECT '-- x;', '# y;', '/* z;'; SELECT 2",
			[]st{{"SELECT '-- x;', '# y;', '/* z;'", 1, 1}, {"SELECT 2", 2, 1}}},
		{"CRLF", "SELECT 1;\r\nSELECT 2;\r\n", []st{{"SELECT 1", 1, 1}, {"SELECT 2", 2, 2}}},
		{"delimiter for a procedure", "DELIMITER //\nCREATE PROCEDURE p()\nBEGIN\n  SELECT 1;\n  SELECT 2;\nEND//\nDELIMITER ;\nCALL p();\n",
			[]st{{"CREATE PROCEDURE p()\nBEGIN\n  SELECT 1;\n  SELECT 2;\nEND", 1, 2}, {"CALL p()", 2, 8}}},
		{"delimiter lower case, two characters", "delimiter $$\nSELECT 1; SELECT 2$$ SELECT 3 $$\ndelimiter ;\nSELECT 4;",
			[]st{{"SELECT 1; SELECT 2", 1, 2}, {"SELECT 3", 2, 2}, {"SELECT 4", 3, 4}}},
		{"delimiter after a statement on the same line", "SELECT 1; DELIMITER //\nSELECT 2; SELECT 3//",
			[]st{{"SELECT 1", 1, 1}, {"SELECT 2; SELECT 3", 2, 2}}},
		{"delimiter quoted, rest of line ignored", "DELIMITER ';;' whatever\nSELECT 1;;", []st{{"SELECT 1", 1, 2}}},
		{"mysqldump trigger", "DELIMITER ;;\n/*!50003 CREATE*/ /*!50003 TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET NEW.a=1; END */;;\nDELIMITER ;\n",
			[]st{{"/*!50003 CREATE*/ /*!50003 TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET NEW.a=1; END */", 1, 2}}},
		{"delimiter inside a statement is text", "SELECT 1 AS\ndelimiter;", []st{{"SELECT 1 AS\ndelimiter", 1, 1}}},
		{"delimiter-like word is not the command", "delimiters; SELECT 1", []st{{"delimiters", 1, 1}, {"SELECT 1", 2, 1}}},
		{"delimiter at end of script without newline", "SELECT 1;\nDELIMITER //", []st{{"SELECT 1", 1, 1}}},
		{"delimiter in quotes does not end", "DELIMITER //\nSELECT '//'//", []st{{"SELECT '//'", 1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitScript(tt.script)
			if err != nil {
				t.Fatalf("SplitScript(%q): %v", tt.script, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("SplitScript(%q) = %d statements %+v, want %d %+v", tt.script, len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("statement %d = %+v, want %+v", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSplitScriptErrors(t *testing.T) {
	tests := []struct {
		name, script string
		line         int
		msg          string
	}{
		{"unterminated single quote", "SELECT 1;\nSELECT 'abc;\nSELECT 2;", 2, "unterminated 'string'"},
		{"unterminated double quote", `SELECT "abc`, 1, `unterminated "string"`},
		{"unterminated backtick", "SELECT 1;\n\nSELECT `abc", 3, "unterminated `quoted name`"},
		{"trailing backslash", `SELECT 'abc\'`, 1, "unterminated 'string'"},
		{"unterminated comment", "SELECT 1;\n/* never\nends", 2, "unterminated /* comment"},
		{"delimiter without value", "SELECT 1;\nDELIMITER\nSELECT 2", 2, "DELIMITER needs the new delimiter"},
		{"delimiter with blank value", "DELIMITER   \nSELECT 2", 1, "DELIMITER needs the new delimiter"},
		{"delimiter with backslash", `DELIMITER \\`, 1, "cannot contain a backslash"},
		{"delimiter quoted with blank", "DELIMITER 'a b'", 1, "cannot contain a blank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitScript(tt.script)
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("SplitScript(%q) = %+v, %v; want a *ScriptError", tt.script, got, err)
			}
			if se.Line != tt.line || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("SplitScript(%q) error %q (line %d), want line %d and %q", tt.script, se.Msg, se.Line, tt.line, tt.msg)
			}
		})
	}
}

// FuzzSplitScript checks what holds for any input: no panic; statements are
// non-empty, numbered in order, on lines that exist and never go back; each
// is a substring of the script starting on the line it claims; and a script
// of plain statements joined by ";" splits back into them.
func FuzzSplitScript(f *testing.F) {
	for _, s := range []string{
		"", "SELECT 1", "a;b", "'a;b';c", "`x``;`;y", `"a\"";b`, "-- c\n;x", "#;\ny", "/* ; */z", "/*!1 ; */;w",
		"DELIMITER //\nCREATE PROCEDURE p() BEGIN SELECT 1; END//\nDELIMITER ;\nCALL p();",
		"DELIMITER", "DELIMITER \\", "'", "/*", "--", "1--1;2", "\r\n;\r\n", "delimiter $$\n$$$$x$$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		stmts, err := SplitScript(script)
		if err != nil {
			var se *ScriptError
			if !errors.As(err, &se) || se.Line < 1 || se.Line > strings.Count(script, "\n")+1 {
				t.Fatalf("SplitScript(%q) error %v", script, err)
			}
			return
		}
		lines := strings.Count(script, "\n") + 1
		prevLine := 1
		for i, st := range stmts {
			if st.Num != i+1 || st.Text == "" || strings.TrimLeft(st.Text, blanks) != st.Text || strings.TrimRight(st.Text, blanks) != st.Text {
				t.Fatalf("SplitScript(%q) statement %d = %+v", script, i+1, st)
			}
			if st.Line < prevLine || st.Line > lines {
				t.Fatalf("SplitScript(%q) statement %d on line %d (previous %d, %d lines)", script, i+1, st.Line, prevLine, lines)
			}
			prevLine = st.Line
			// The text is in the script at an offset on line st.Line.
			found := false
			for off := 0; ; {
				n := strings.Index(script[off:], st.Text)
				if n < 0 {
					break
				}
				if strings.Count(script[:off+n], "\n")+1 == st.Line {
					found = true
					break
				}
				off += n + 1
			}
			if !found {
				t.Fatalf("SplitScript(%q) statement %d %q not found on line %d", script, i+1, st.Text, st.Line)
			}
		}
	})
}

// FuzzSplitScriptRoundTrip checks that statements without quotes, comments
// or DELIMITER commands, joined by ";" and line breaks, split back into
// themselves, on their lines.
func FuzzSplitScriptRoundTrip(f *testing.F) {
	for _, s := range []string{"SELECT 1;SELECT 2", "a;;b c;d\n(e)", "x = 1 + 2;delimiterx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var parts []string
		for _, p := range strings.Split(in, ";") {
			p = strings.Map(func(r rune) rune {
				if r == ' ' || r == '\n' || r == '(' || r == ')' || r == '=' || r == '+' || r == ',' ||
					r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, p)
			p = strings.Trim(p, blanks)
			if p == "" || isDelimiterCommand(p) {
				continue
			}
			parts = append(parts, p)
		}
		script := strings.Join(parts, ";\n")
		got, err := SplitScript(script)
		if err != nil || len(got) != len(parts) {
			t.Fatalf("SplitScript(%q) = %+v, %v; want %q", script, got, err, parts)
		}
		line := 1
		for i, st := range got {
			if st.Text != parts[i] || st.Line != line {
				t.Fatalf("SplitScript(%q) statement %d = %+v, want %q on line %d", script, i+1, st, parts[i], line)
			}
			line += strings.Count(parts[i], "\n") + 1
		}
	})
}
