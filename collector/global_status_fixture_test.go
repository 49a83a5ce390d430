package collector

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// gsFixture reads a recorded `mariadb`/`mysql` client result printed with
// \G (see testdata/README-A.md) into Rows. "NULL" reads as NULL; a line that
// is not "<right-aligned column>: value" continues the previous value.
func gsFixture(t testing.TB, path string) *mysql.Rows {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	r, err := gsParseVertical(string(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

func gsParseVertical(text string) (*mysql.Rows, error) {
	res := &mysql.Rows{}
	var row []*string
	width := -1 // column of the ':' after right-aligned names
	col := 0
	flush := func() {
		if row != nil {
			res.Values = append(res.Values, row)
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.HasPrefix(line, "***************************") && strings.HasSuffix(line, "row ***************************") {
			flush()
			row, col = []*string{}, 0
			continue
		}
		if row == nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			return nil, fmt.Errorf("text before the first row: %q", line)
		}
		if width < 0 {
			width = strings.Index(line, ":")
		}
		if width > 0 && len(line) > width && line[width] == ':' && strings.TrimSpace(line[:width]) != "" &&
			!strings.Contains(strings.TrimSpace(line[:width]), " ") && (len(line) == width+1 || line[width+1] == ' ') {
			name := strings.TrimSpace(line[:width])
			val := ""
			if len(line) > width+2 {
				val = line[width+2:]
			}
			if len(res.Values) == 0 {
				res.Columns = append(res.Columns, name)
			} else if col >= len(res.Columns) || res.Columns[col] != name {
				return nil, fmt.Errorf("row %d: column %q out of order", len(res.Values)+1, name)
			}
			col++
			if val == "NULL" {
				row = append(row, nil)
			} else {
				row = append(row, &val)
			}
			continue
		}
		if len(row) == 0 || row[len(row)-1] == nil {
			return nil, fmt.Errorf("continuation line without a value: %q", line)
		}
		v := *row[len(row)-1] + "\n" + line
		row[len(row)-1] = &v
	}
	flush()
	return res, nil
}

// gsRows builds Rows from literal values.
func gsRows(cols []string, rows ...[]string) *mysql.Rows {
	r := &mysql.Rows{Columns: cols}
	for _, row := range rows {
		vals := make([]*string, len(row))
		for i := range row {
			v := row[i]
			vals[i] = &v
		}
		r.Values = append(r.Values, vals)
	}
	return r
}

// gsFakeQuerier answers queries from a table; unknown queries fail.
type gsFakeQuerier struct {
	mu      sync.Mutex
	results map[string]*mysql.Rows
	errs    map[string]error
	queries []string
}

func (f *gsFakeQuerier) Query(_ context.Context, q string, _ ...any) (*mysql.Rows, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if err := f.errs[q]; err != nil {
		return nil, err
	}
	if r, ok := f.results[q]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("fake querier: unexpected query %q", q)
}

func (f *gsFakeQuerier) Exec(_ context.Context, stmts ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, stmts...)
	return nil
}

// gsKey names a series: name{l1="v1",l2="v2"} with labels sorted.
func gsKey(name string, labels []dbpilot.Label) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%s=%q", l.Name, l.Value)
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// gsIndex indexes samples by series, failing on duplicates.
func gsIndex(t testing.TB, samples []dbpilot.Sample) map[string]dbpilot.Sample {
	t.Helper()
	m := make(map[string]dbpilot.Sample, len(samples))
	for _, s := range samples {
		k := gsKey(s.Name, s.Labels)
		if _, dup := m[k]; dup {
			t.Errorf("duplicate series %s", k)
		}
		m[k] = s
	}
	return m
}

// gsWant is an expected sample.
type gsWant struct {
	key   string
	value float64
	typ   dbpilot.MetricType
}

func gsCheck(t testing.TB, got map[string]dbpilot.Sample, wants []gsWant) {
	t.Helper()
	for _, w := range wants {
		s, ok := got[w.key]
		if !ok {
			t.Errorf("missing %s", w.key)
			continue
		}
		if s.Value != w.value || s.Type != w.typ {
			t.Errorf("%s = %v (type %d), want %v (type %d)", w.key, s.Value, s.Type, w.value, w.typ)
		}
	}
}

func gsCheckAbsent(t testing.TB, got map[string]dbpilot.Sample, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := got[k]; ok {
			t.Errorf("unexpected %s", k)
		}
	}
}

func TestGsParseVertical(t *testing.T) {
	r, err := gsParseVertical("*************************** 1. row ***************************\n" +
		"Variable_name: Rsa_public_key\n" +
		"        Value: -----BEGIN\n" +
		"abc: def\n" +
		"-----END\n" +
		"*************************** 2. row ***************************\n" +
		"Variable_name: Ssl_cipher\n" +
		"        Value: \n" +
		"*************************** 3. row ***************************\n" +
		"Variable_name: X\n" +
		"        Value: NULL\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Values) != 3 || strings.Join(r.Columns, ",") != "Variable_name,Value" {
		t.Fatalf("rows = %+v", r)
	}
	if v := *r.Values[0][1]; v != "-----BEGIN\nabc: def\n-----END" {
		t.Errorf("multi-line value = %q", v)
	}
	if v := *r.Values[1][1]; v != "" {
		t.Errorf("empty value = %q", v)
	}
	if r.Values[2][1] != nil {
		t.Errorf("NULL read as %q", *r.Values[2][1])
	}
}
