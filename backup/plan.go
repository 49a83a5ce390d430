package backup

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// colInfo is a column as information_schema describes it.
type colInfo struct {
	Name      string
	DataType  string // lower case: int, varchar, ...
	Type      string // COLUMN_TYPE
	Nullable  bool
	Generated bool
	Charset   string // "" for non-string types
}

// indexInfo is an index as information_schema.STATISTICS describes it.
type indexInfo struct {
	Name    string
	Unique  bool
	Columns []string
	Usable  bool // no prefix or expression parts
}

// tableInfo is what the dump needs to know about a base table.
type tableInfo struct {
	DB, Name  string
	Engine    string
	Sequence  bool
	EstRows   int64
	DataBytes int64
	Columns   []colInfo
	Indexes   []indexInfo
}

var intTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "integer": true, "bigint": true}
var numericTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "integer": true, "bigint": true,
	"decimal": true, "numeric": true, "float": true, "double": true, "real": true, "year": true}
var binaryTypes = map[string]bool{"binary": true, "varbinary": true, "tinyblob": true, "blob": true, "mediumblob": true, "longblob": true}
var geometryTypes = map[string]bool{"geometry": true, "point": true, "linestring": true, "polygon": true, "multipoint": true,
	"multilinestring": true, "multipolygon": true, "geometrycollection": true}

// keyCol is a chunk key column with what literals for it need.
type keyCol struct {
	name     string
	charset  string
	binary   bool
	numeric  bool
	nullable bool
}

// chunkKey is the index chunks are cut along.
type chunkKey struct {
	index    string
	cols     []keyCol
	integer  bool // one integer column: split by value
	nullable bool // some column may be NULL: those rows form a chunk of their own
}

// columnsFor decides how each column is dumped and loaded. Generated
// columns are left out: the server computes them on load.
func columnsFor(t *tableInfo, mysqlFlavor bool) []Column {
	var out []Column
	for _, c := range t.Columns {
		if c.Generated {
			continue
		}
		col := Column{Name: c.Name, Type: c.Type}
		q := QuoteIdent(c.Name)
		switch {
		case c.DataType == "bit":
			// Raw BIT bytes do not load back through LOAD DATA; numbers do.
			col.Select = "CAST(" + q + " AS UNSIGNED)"
			col.Load = "CAST(@v AS UNSIGNED)"
		case c.DataType == "float":
			// The server prints FLOAT with 6 digits; as a double it prints
			// enough digits to load back the exact same value.
			col.Select = "CONCAT(" + q + " + 0e0)"
		case intTypes[c.DataType] || c.DataType == "year":
			// As text the driver hands the bytes over as they are; as a
			// number it parses and boxes every value, which costs more
			// client CPU than anything else per row.
			col.Select = "CONCAT(" + q + ")"
		case c.DataType == "double" || c.DataType == "real":
			// Keep the server's own text (the driver would reformat it).
			col.Select = "CONCAT(" + q + ")"
		case geometryTypes[c.DataType]:
			// The server's own format (SRID, then WKB), dumped and loaded
			// as it is: the SRID is kept (ST_AsBinary would drop it).
		case c.DataType == "json" && mysqlFlavor:
			col.Load = "CONVERT(@v USING utf8mb4)"
		}
		out = append(out, col)
	}
	return out
}

// selectExpr is the expression a column is dumped with.
func (c Column) selectExpr() string {
	if c.Select != "" {
		return c.Select
	}
	return QuoteIdent(c.Name)
}

// chooseKey picks the index to cut chunks along: the primary key, else the
// unique key with the fewest columns that are all NOT NULL, else the unique
// key with the fewest columns (rows with a NULL in it go to a chunk of
// their own). ok is false when the table has no usable unique index.
func chooseKey(t *tableInfo) (chunkKey, bool) {
	cols := map[string]colInfo{}
	for _, c := range t.Columns {
		cols[strings.ToLower(c.Name)] = c
	}
	var best *indexInfo
	bestRank := 0
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if !ix.Unique || !ix.Usable || len(ix.Columns) == 0 {
			continue
		}
		nullable, orderable := false, true
		for _, c := range ix.Columns {
			ci, ok := cols[strings.ToLower(c)]
			if !ok {
				nullable = true // unknown column: be careful
				continue
			}
			if ci.Nullable {
				nullable = true
			}
			// ENUM and SET sort by their index number but compare with a
			// string literal as strings; BIT compares as a binary string.
			// Boundaries on them would not be in order.
			if ci.DataType == "enum" || ci.DataType == "set" || ci.DataType == "bit" {
				orderable = false
			}
		}
		if !orderable {
			continue
		}
		rank := 3
		switch {
		case ix.Name == "PRIMARY":
			rank = 1
		case !nullable:
			rank = 2
		}
		if best == nil || rank < bestRank || (rank == bestRank && len(ix.Columns) < len(best.Columns)) {
			best, bestRank = ix, rank
		}
	}
	if best == nil {
		return chunkKey{}, false
	}
	k := chunkKey{index: best.Name}
	for _, c := range best.Columns {
		ci := cols[strings.ToLower(c)]
		kc := keyCol{name: ci.Name, charset: ci.Charset, binary: binaryTypes[ci.DataType], numeric: numericTypes[ci.DataType], nullable: ci.Nullable}
		if kc.name == "" {
			kc.name = c
		}
		if kc.nullable {
			k.nullable = true
		}
		k.cols = append(k.cols, kc)
	}
	k.integer = len(k.cols) == 1 && intTypes[cols[strings.ToLower(best.Columns[0])].DataType] && !k.nullable
	return k, true
}

// notNull is the condition selecting rows whose key has no NULL.
func (k chunkKey) notNull() string {
	var parts []string
	for _, c := range k.cols {
		if c.nullable {
			parts = append(parts, QuoteIdent(c.name)+" IS NOT NULL")
		}
	}
	return strings.Join(parts, " AND ")
}

// someNull is the condition selecting rows whose key has a NULL.
func (k chunkKey) someNull() string {
	var parts []string
	for _, c := range k.cols {
		if c.nullable {
			parts = append(parts, QuoteIdent(c.name)+" IS NULL")
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// after is the condition "key > vals" in the index order, for NOT NULL
// values: (a > x OR (a = x AND (b > y))). before is its exact complement
// "key <= vals". Together they split the non-NULL rows with nothing lost
// or repeated, whatever literal a boundary renders to.
func (k chunkKey) after(vals [][]byte) string  { return k.cmp(vals, 0, ">", ">") }
func (k chunkKey) before(vals [][]byte) string { return k.cmp(vals, 0, "<", "<=") }

func (k chunkKey) cmp(vals [][]byte, i int, strict, last string) string {
	c := QuoteIdent(k.cols[i].name)
	lit := keyLiteral(k.cols[i], vals[i])
	if i == len(k.cols)-1 {
		return c + " " + last + " " + lit
	}
	return "(" + c + " " + strict + " " + lit + " OR (" + c + " = " + lit + " AND " + k.cmp(vals, i+1, strict, last) + "))"
}

// paren wraps a user's condition so that its operators cannot reach out
// of it ("" stays "").
func paren(cond string) string {
	if cond == "" {
		return ""
	}
	return "(" + cond + ")"
}

// rangeCond selects the non-NULL keys in (lo, hi]; a nil bound is open.
// Chunks cut at the same boundaries by rangeCond partition the non-NULL
// keys exactly; rows with a NULL in a nullable key are in none of them.
func (k chunkKey) rangeCond(lo, hi [][]byte) string {
	var parts []string
	if lo != nil {
		parts = append(parts, k.after(lo))
	}
	if hi != nil {
		parts = append(parts, k.before(hi))
	}
	return and(append(parts, k.notNull())...)
}

// and joins conditions, skipping empty ones.
func and(conds ...string) string {
	var parts []string
	for _, c := range conds {
		if c != "" {
			parts = append(parts, c)
		}
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	for i, p := range parts {
		up := strings.ToUpper(p)
		if (strings.Contains(up, " OR ") || strings.Contains(up, "||") || strings.Contains(up, " XOR ")) && !(strings.HasPrefix(p, "(") && balancedOuter(p)) {
			parts[i] = "(" + p + ")"
		}
	}
	return strings.Join(parts, " AND ")
}

// balancedOuter reports whether the opening parenthesis at 0 closes at the end.
func balancedOuter(s string) bool {
	depth := 0
	inQuote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inQuote != 0 {
			if c == '\\' {
				i++
			} else if c == inQuote {
				inQuote = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			inQuote = c
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return false
			}
		}
	}
	return depth == 0
}

// integerRanges splits [min, max] of an integer key into n ranges of equal
// width, returned as the conditions of each range. The first range is open
// below and the last open above, so rows outside [min, max] (there are none
// in the snapshot, but the bounds may have been read outside it) still
// belong to exactly one chunk.
func integerRanges(col string, min, max *big.Int, n int64) []string {
	if n < 1 {
		n = 1
	}
	span := new(big.Int).Sub(max, min)
	span.Add(span, big.NewInt(1))
	if span.Cmp(big.NewInt(n)) < 0 {
		n = span.Int64()
	}
	if n <= 1 {
		return []string{""}
	}
	step := new(big.Int).Add(span, big.NewInt(n-1))
	step.Div(step, big.NewInt(n))
	q := QuoteIdent(col)
	var out []string
	lo := new(big.Int).Set(min)
	for i := int64(0); i < n; i++ {
		hi := new(big.Int).Add(lo, step)
		var c string
		switch {
		case i == 0:
			c = fmt.Sprintf("%s < %s", q, hi)
		case i == n-1 || hi.Cmp(max) > 0:
			c = fmt.Sprintf("%s >= %s", q, lo)
		default:
			c = fmt.Sprintf("%s >= %s AND %s < %s", q, lo, q, hi)
		}
		out = append(out, c)
		if hi.Cmp(max) > 0 {
			break
		}
		lo = hi
	}
	return out
}

// sortBySize orders tables for the dump: the largest single job first —
// a table without a usable key is one job of its whole size, a keyed
// table's jobs are chunks of about chunkRows rows — then by size. A big
// table that cannot be split thus starts at once instead of running alone
// at the end, and the chunks of the others fill the gaps around it.
func sortBySize(ts []*tableInfo, chunkRows int64) {
	job := func(t *tableInfo) int64 {
		if _, ok := chooseKey(t); !ok || t.EstRows <= chunkRows || chunkRows <= 0 {
			return t.DataBytes
		}
		return int64(float64(t.DataBytes) * float64(chunkRows) / float64(t.EstRows))
	}
	sort.SliceStable(ts, func(i, j int) bool {
		if a, b := job(ts[i]), job(ts[j]); a != b {
			return a > b
		}
		if ts[i].DataBytes != ts[j].DataBytes {
			return ts[i].DataBytes > ts[j].DataBytes
		}
		return ts[i].EstRows > ts[j].EstRows
	})
}
