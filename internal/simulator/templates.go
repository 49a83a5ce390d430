package simulator

import (
	"embed"
	"fmt"
	"strings"
	"sync"
)

// data holds real MariaDB 10.11 outputs (see data/README.md) whose shape
// every answer follows: names, columns, order and static values.
//
//go:embed data/*.txt
var data embed.FS

// table is a result read from a recording.
type table struct {
	cols []string
	rows [][]string // Null for NULL
}

// parseVertical reads what the mariadb client prints with \G: a
// "*** N. row ***" line per row, then right-aligned "Column: value" lines; a
// line that is not one continues the previous value.
func parseVertical(text string) (*table, error) {
	t := &table{}
	var row []string
	inRow := false
	width := -1
	flush := func() {
		if inRow {
			t.rows = append(t.rows, row)
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.HasPrefix(line, "*****") && strings.HasSuffix(line, "row ***************************") {
			flush()
			row, inRow = nil, true
			continue
		}
		if !inRow {
			if strings.TrimSpace(line) == "" {
				continue
			}
			return nil, fmt.Errorf("text before the first row: %q", line)
		}
		if width < 0 {
			width = strings.Index(line, ":")
		}
		if width > 0 && len(line) > width && line[width] == ':' && (len(line) == width+1 || line[width+1] == ' ') {
			if name := strings.TrimSpace(line[:width]); name != "" && !strings.Contains(name, " ") {
				val := ""
				if len(line) > width+2 {
					val = line[width+2:]
				}
				if len(t.rows) == 0 {
					t.cols = append(t.cols, name)
				} else if len(row) >= len(t.cols) || t.cols[len(row)] != name {
					return nil, fmt.Errorf("row %d: column %q out of order", len(t.rows)+1, name)
				}
				if val == "NULL" {
					val = Null
				}
				row = append(row, val)
				continue
			}
		}
		if len(row) == 0 {
			return nil, fmt.Errorf("continuation line without a value: %q", line)
		}
		row[len(row)-1] += "\n" + line
	}
	flush()
	return t, nil
}

func mustTable(name string) *table {
	b, err := data.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	t, err := parseVertical(string(b))
	if err != nil {
		panic(fmt.Sprintf("simulator: data/%s: %v", name, err))
	}
	return t
}

// nameValue is one row of SHOW GLOBAL STATUS or VARIABLES: the name, its
// lower-cased form for lookups, the recorded value, the payload of the row
// written beforehand, and how the value changes (nil: it does not).
type nameValue struct {
	name, lower, value string
	payload            []byte
	dyn                *dynamic
}

// templates are the recordings, parsed once for the whole fleet.
type templates struct {
	status, variables []nameValue
	varIndex          map[string]int // lower-cased variable name → index
	replicaCols       []string
	replicaRow        []string
	innodbStatus      string
	innodbMetrics     *table
	metricsPayloads   [][]byte
	digests           *table // performance_schema's digest table
	consumers         *table // performance_schema.setup_consumers
}

var (
	tmplOnce sync.Once
	tmpl     *templates
)

// loadTemplates parses the recordings once.
func loadTemplates() *templates {
	tmplOnce.Do(func() {
		t := &templates{varIndex: map[string]int{}}
		t.status = nameValues(mustTable("status.txt"))
		for i := range t.status {
			t.status[i].dyn = statusDynamics[t.status[i].lower]
			if ov, ok := statusOverrides[t.status[i].lower]; ok {
				t.status[i].value = ov
				t.status[i].payload = appendValue(appendValue(nil, t.status[i].name), ov)
			}
		}
		t.variables = nameValues(mustTable("variables.txt"))
		for i := range t.variables {
			v := &t.variables[i]
			t.varIndex[v.lower] = i
			if ov, ok := variableOverrides[v.lower]; ok {
				v.value = ov
				v.payload = appendValue(appendValue(nil, v.name), ov)
			}
			if _, ok := instanceVariables[v.lower]; ok {
				v.dyn = &dynamic{}
			}
		}
		rs := mustTable("replica_status.txt")
		t.replicaCols, t.replicaRow = rs.cols, rs.rows[0]
		b, err := data.ReadFile("data/innodb_status.txt")
		if err != nil {
			panic(err)
		}
		t.innodbStatus = string(b)
		t.innodbMetrics = mustTable("innodb_metrics.txt")
		for _, row := range t.innodbMetrics.rows {
			var p []byte
			for _, v := range row {
				p = appendValue(p, v)
			}
			t.metricsPayloads = append(t.metricsPayloads, p)
		}
		t.digests = mustTable("digests.txt")
		t.consumers = mustTable("consumers.txt")
		tmpl = t
	})
	return tmpl
}

func nameValues(t *table) []nameValue {
	out := make([]nameValue, 0, len(t.rows))
	for _, r := range t.rows {
		if len(r) < 2 {
			continue
		}
		out = append(out, nameValue{name: r[0], lower: strings.ToLower(r[0]), value: r[1],
			payload: appendValue(appendValue(nil, r[0]), r[1])})
	}
	return out
}

// variable returns the template's value of a global variable.
func (t *templates) variable(lower string) (string, bool) {
	i, ok := t.varIndex[lower]
	if !ok {
		return "", false
	}
	return t.variables[i].value, true
}
