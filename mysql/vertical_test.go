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

// This file reads the mysql command-line client's vertical output (\G), in
// which testdata/ keeps recorded server outputs:
//
//	*************************** 1. row ***************************
//	     Column_name: value
//	Other_column_nam: NULL
//
// Names are right-aligned, so every name line of a result has its colon at
// the same offset; a line that does not (a value with a line break, such as a
// long MySQL GTID set) continues the previous value.

// verticalRow is one row: columns in order, nil values are NULL.
type verticalRow struct {
	cols []string
	vals []*string
}

func isRowHeader(line string) bool {
	return strings.HasPrefix(line, "***") && strings.HasSuffix(line, "***") && strings.Contains(line, ". row ")
}

func isNameChar(r byte) bool {
	return r == '_' || r == '@' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// nameColon returns the offset of the colon after a right-aligned name at the
// start of line, or -1.
func nameColon(line string) int {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	start := i
	for i < len(line) && isNameChar(line[i]) {
		i++
	}
	if i == start || i >= len(line) || line[i] != ':' || (i+1 < len(line) && line[i+1] != ' ') {
		return -1
	}
	return i
}

// parseVertical reads \G output. Text before the first row header is ignored,
// and so are blank lines.
func parseVertical(text string) []verticalRow {
	var (
		rows  []verticalRow
		cur   *verticalRow
		colon = -1 // offset of the colon of this result's name lines
		last  = -1 // index in cur of the value that continuation lines extend
	)
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if isRowHeader(strings.TrimSpace(line)) {
			rows = append(rows, verticalRow{})
			cur, last = &rows[len(rows)-1], -1
			continue
		}
		if cur == nil || strings.TrimSpace(line) == "" {
			continue
		}
		c := nameColon(line)
		if c >= 0 && (colon < 0 || c == colon) {
			colon = c
			name := strings.TrimSpace(line[:c])
			val := ""
			if c+2 <= len(line) {
				val = line[c+2:]
			}
			cur.cols = append(cur.cols, name)
			if val == "NULL" {
				cur.vals = append(cur.vals, nil)
			} else {
				cur.vals = append(cur.vals, &val)
			}
			last = len(cur.vals) - 1
			continue
		}
		if last >= 0 && cur.vals[last] != nil {
			v := *cur.vals[last] + "\n" + line
			cur.vals[last] = &v
		}
	}
	return rows
}

// verticalMaps returns each row as column → value; NULL columns are absent,
// as in Rows.Maps.
func verticalMaps(text string) []map[string]string {
	return toRows(parseVertical(text)).Maps()
}

// toRows turns parsed rows into the Rows a query returns, with the first
// row's columns.
func toRows(vr []verticalRow) *Rows {
	r := &Rows{}
	if len(vr) == 0 {
		return r
	}
	r.Columns = vr[0].cols
	for _, row := range vr {
		vals := make([]*string, len(r.Columns))
		for i, c := range r.Columns {
			for j, rc := range row.cols {
				if rc == c {
					vals[i] = row.vals[j]
					break
				}
			}
		}
		r.Values = append(r.Values, vals)
	}
	return r
}

func readTestdata(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recorded answers queries from the recorded outputs in one directory of
// testdata/, so that a whole inspection runs without a server. A statement
// whose file is missing fails with a server error (1146), as a missing
// performance_schema table would; errs injects other failures by file name.
type recorded struct {
	dir     string
	errs    map[string]error
	queries []string
}

// recordedFile names the file that holds the answer to q.
func recordedFile(q string) string {
	switch {
	case q == versionSQL:
		return "version.txt"
	case strings.HasPrefix(q, "SELECT @@global."):
		return "variables.txt"
	case strings.HasPrefix(q, "SHOW GLOBAL STATUS WHERE"):
		return "status.txt"
	case q == semiSyncVariablesSQL:
		return "semisync_variables.txt"
	case q == "SHOW ALL SLAVES STATUS" || q == "SHOW REPLICA STATUS" || q == "SHOW SLAVE STATUS":
		return "replica_status.txt"
	case q == "SHOW SLAVE HOSTS" || q == "SHOW REPLICAS":
		return "replica_hosts.txt"
	case q == processlistSQL:
		return "processlist.txt"
	case q == heartbeatSQL:
		return "heartbeat.txt"
	}
	return "unknown-statement"
}

func (r *recorded) Query(ctx context.Context, q string, args ...any) (*Rows, error) {
	r.queries = append(r.queries, q)
	file := recordedFile(q)
	if err, ok := r.errs[file]; ok {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join("testdata", r.dir, file))
	if err != nil {
		return nil, &driver.MySQLError{Number: ErNoSuchTable, Message: "not recorded: " + file}
	}
	return toRows(parseVertical(string(b))), nil
}

func TestParseVertical(t *testing.T) {
	text := "mysql> SHOW X\\G\n" +
		"*************************** 1. row ***************************\n" +
		"      Name: a\n" +
		"Long_Name_: NULL\n" +
		" Gtid_Set_: 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n" +
		"4a6f2c9f-0e88-11ef-a1b3-0242ac110002:1-3\n" +
		"     Empty:\n" +
		"     Blank: \n" +
		"*************************** 2. row ***************************\n" +
		"      Name: b: c\n"
	rows := parseVertical(text)
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	m := verticalMaps(text)
	want0 := map[string]string{
		"Name":      "a",
		"Gtid_Set_": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n4a6f2c9f-0e88-11ef-a1b3-0242ac110002:1-3",
		"Empty":     "",
		"Blank":     "",
	}
	if len(m[0]) != len(want0) {
		t.Errorf("row 0 = %q, want %q", m[0], want0)
	}
	for k, v := range want0 {
		if m[0][k] != v {
			t.Errorf("row 0 %s = %q, want %q", k, m[0][k], v)
		}
	}
	if _, ok := m[0]["Long_Name_"]; ok {
		t.Errorf("NULL column present: %q", m[0])
	}
	if m[1]["Name"] != "b: c" {
		t.Errorf("row 1 Name = %q", m[1]["Name"])
	}
	if got := parseVertical(""); len(got) != 0 {
		t.Errorf("empty text: %d rows", len(got))
	}
}

func FuzzParseVertical(f *testing.F) {
	for _, p := range []string{
		"mariadb-10.11/multisource-errors/replica_status.txt",
		"mysql-8.0/replica/replica_status.txt",
		"mysql-8.0/replica/variables.txt",
		"mariadb-10.11/primary/processlist.txt",
	} {
		f.Add(readTestdata(f, p))
	}
	f.Add("*** 1. row ***\n:\n x: y\nz\n")
	f.Fuzz(func(t *testing.T, text string) {
		rows := verticalMaps(text)
		for _, flavor := range []string{"mariadb", "mysql", ""} {
			for _, row := range rows {
				_, _ = parseReplicaStatusRow(dbpilot.Flavor(flavor), row)
			}
		}
		parseSemiSync(nameValues(rows), nameValues(rows))
		parseReplicaHosts(rows, 3306)
		parseProcesslistReplicas(rows, 3306)
		applyHeartbeats(nil, rows)
	})
}

// nameValues turns recorded SHOW VARIABLES / SHOW STATUS rows
// (Variable_name, Value, as read by verticalMaps) into a name→value map.
func nameValues(rows []map[string]string) map[string]string {
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		cr := canonicalRow(r)
		name, ok := cr["variable_name"]
		if !ok {
			continue
		}
		val, ok := cr["value"]
		if !ok {
			val, ok = cr["variable_value"] // information_schema / performance_schema spelling
		}
		if ok {
			out[name] = val
		}
	}
	return out
}
