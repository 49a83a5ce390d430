package dbcopy

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// quoteIdent quotes an identifier with backticks.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteString quotes a string literal (dbpilot's sessions never set
// NO_BACKSLASH_ESCAPES).
func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(s) + "'"
}

// column is one column of a copied table, as B (which mirrors A's schema
// at the applied position) describes it.
type column struct {
	Name     string
	DataType string // information_schema DATA_TYPE, lower case
	Charset  string // CHARACTER_SET_NAME; "" for non-strings
	Unsigned bool
	// Generated columns are computed by B: never written.
	Generated bool
}

// table is a copied table: its name on A and on B, its columns and the key
// rows are found by on B.
type table struct {
	SrcDB, DstDB, Name string
	Cols               []column
	Key                []int // indexes into Cols: primary key, or a unique key of NOT NULL columns
	KeyName            string
}

func (t *table) src() string { return quoteIdent(t.SrcDB) + "." + quoteIdent(t.Name) }
func (t *table) dst() string { return quoteIdent(t.DstDB) + "." + quoteIdent(t.Name) }

// String names the table on A.
func (t *table) String() string { return t.SrcDB + "." + t.Name }

var (
	numericTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "integer": true,
		"bigint": true, "decimal": true, "numeric": true, "float": true, "double": true, "real": true, "year": true}
	binaryTypes = map[string]bool{"binary": true, "varbinary": true, "tinyblob": true, "blob": true, "mediumblob": true,
		"longblob": true, "geometry": true, "point": true, "linestring": true, "polygon": true, "multipoint": true,
		"multilinestring": true, "multipolygon": true, "geometrycollection": true, "bit": true, "vector": true}
	geometryTypes = map[string]bool{"geometry": true, "point": true, "linestring": true, "polygon": true, "multipoint": true,
		"multilinestring": true, "multipolygon": true, "geometrycollection": true}
	temporalTypes = map[string]bool{"date": true, "time": true, "datetime": true, "timestamp": true}
)

// textLiteral renders a value read over the text protocol with
// character_set_results=binary (the column's bytes as stored) as an SQL
// literal for the column. nil is NULL.
func textLiteral(c *column, v []byte) string {
	if v == nil {
		return "NULL"
	}
	switch {
	case numericTypes[c.DataType]:
		if isPlainNumber(v) {
			return string(v)
		}
		return quoteString(string(v))
	case temporalTypes[c.DataType]:
		return quoteString(string(v))
	}
	return bytesLiteral(c, v)
}

// bytesLiteral renders a string value as hex with the column's character
// set introducer (so that it compares in the column's collation and an
// index on it is used), binary columns as plain hex.
func bytesLiteral(c *column, v []byte) string {
	if len(v) == 0 {
		if c.Charset == "" || binaryTypes[c.DataType] {
			return "''"
		}
		return "_" + c.Charset + "''"
	}
	if geometryTypes[c.DataType] && len(v) > 4 {
		// The server's own format: SRID (4 bytes, little endian), WKB.
		return fmt.Sprintf("ST_GeomFromWKB(X'%s', %d)", hex.EncodeToString(v[4:]), binary.LittleEndian.Uint32(v[:4]))
	}
	h := hex.EncodeToString(v)
	cs := c.Charset
	if c.DataType == "json" && cs == "" {
		cs = "utf8mb4" // MySQL's JSON type has no character set column
	}
	if cs == "" || cs == "binary" || binaryTypes[c.DataType] {
		return "X'" + h + "'"
	}
	return "_" + cs + " X'" + h + "'"
}

func isPlainNumber(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for i, c := range v {
		afterE := i > 0 && (v[i-1] == 'e' || v[i-1] == 'E')
		if !(c >= '0' && c <= '9' || c == '.' || (c == '-' && (i == 0 || afterE)) || c == 'e' || c == 'E' || (c == '+' && afterE)) {
			return false
		}
	}
	return true
}

// eventLiteral renders a value decoded from a ROWS event by go-mysql
// (replication.RowsEvent with ParseTime and UseDecimal off) as an SQL
// literal for the column.
func eventLiteral(c *column, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case int8:
		if c.Unsigned {
			return strconv.FormatUint(uint64(uint8(x)), 10), nil
		}
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		if c.Unsigned {
			return strconv.FormatUint(uint64(uint16(x)), 10), nil
		}
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		if c.Unsigned {
			if c.DataType == "mediumint" {
				return strconv.FormatUint(uint64(uint32(x)&0xFFFFFF), 10), nil
			}
			return strconv.FormatUint(uint64(uint32(x)), 10), nil
		}
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		if c.Unsigned {
			return strconv.FormatUint(uint64(x), 10), nil
		}
		// ENUM (index), SET and BIT (bit masks) arrive as integers too,
		// which the server stores as such.
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float32:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("column %s: value %v cannot be written", c.Name, x)
		}
		return strconv.FormatFloat(f, 'g', -1, 32), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("column %s: value %v cannot be written", c.Name, x)
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		if numericTypes[c.DataType] {
			if isPlainNumber([]byte(x)) {
				return x, nil
			}
			return quoteString(x), nil
		}
		if temporalTypes[c.DataType] {
			return quoteString(x), nil
		}
		return bytesLiteral(c, []byte(x)), nil
	case []byte:
		return bytesLiteral(c, x), nil
	}
	return "", fmt.Errorf("column %s: value of type %T is not supported", c.Name, v)
}

// rowError names the table in a rendering error.
func rowError(t *table, err error) error {
	return fmt.Errorf("dbcopy: %s: %w", t, err)
}

// checkRow checks that a row image has the table's columns.
func checkRow(t *table, row []any) error {
	if len(row) != len(t.Cols) {
		return fmt.Errorf("dbcopy: %s: the binary log has %d columns, %s on B has %d: the schemas differ", t, len(row), t.dst(), len(t.Cols))
	}
	return nil
}

// insertSQL returns one multi-row INSERT of rows (full row images).
func insertSQL(t *table, rows [][]any) (string, error) {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(t.dst())
	b.WriteString(" (")
	n := 0
	for _, c := range t.Cols {
		if c.Generated {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteIdent(c.Name))
		n++
	}
	b.WriteString(") VALUES ")
	for i, row := range rows {
		if err := checkRow(t, row); err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		n := 0
		for j := range t.Cols {
			c := &t.Cols[j]
			if c.Generated {
				continue
			}
			lit, err := eventLiteral(c, row[j])
			if err != nil {
				return "", rowError(t, err)
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(lit)
			n++
		}
		b.WriteByte(')')
	}
	return b.String(), nil
}

// keyCond returns the WHERE condition that finds row by the table's key.
func keyCond(t *table, row []any) (string, error) {
	var b strings.Builder
	for i, k := range t.Key {
		c := &t.Cols[k]
		lit, err := eventLiteral(c, row[k])
		if err != nil {
			return "", rowError(t, err)
		}
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(quoteIdent(c.Name))
		b.WriteString(" = ")
		b.WriteString(lit)
	}
	return b.String(), nil
}

// deleteSQL returns one DELETE of rows (before images) by key.
func deleteSQL(t *table, rows [][]any) (string, error) {
	var b strings.Builder
	b.WriteString("DELETE FROM ")
	b.WriteString(t.dst())
	b.WriteString(" WHERE ")
	if len(t.Key) == 1 {
		k := t.Key[0]
		b.WriteString(quoteIdent(t.Cols[k].Name))
		b.WriteString(" IN (")
		for i, row := range rows {
			if err := checkRow(t, row); err != nil {
				return "", err
			}
			lit, err := eventLiteral(&t.Cols[k], row[k])
			if err != nil {
				return "", rowError(t, err)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(lit)
		}
		b.WriteByte(')')
		return b.String(), nil
	}
	for i, row := range rows {
		if err := checkRow(t, row); err != nil {
			return "", err
		}
		cond, err := keyCond(t, row)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('(')
		b.WriteString(cond)
		b.WriteByte(')')
	}
	return b.String(), nil
}

// updateSQL returns the UPDATE that turns the row before into after, found
// by the before image's key, setting only the columns that changed; "" when
// nothing changed.
func updateSQL(t *table, before, after []any) (string, error) {
	if err := checkRow(t, before); err != nil {
		return "", err
	}
	if err := checkRow(t, after); err != nil {
		return "", err
	}
	var set strings.Builder
	for j := range t.Cols {
		c := &t.Cols[j]
		if c.Generated || reflect.DeepEqual(before[j], after[j]) {
			continue
		}
		lit, err := eventLiteral(c, after[j])
		if err != nil {
			return "", rowError(t, err)
		}
		if set.Len() > 0 {
			set.WriteByte(',')
		}
		set.WriteString(quoteIdent(c.Name))
		set.WriteString(" = ")
		set.WriteString(lit)
	}
	if set.Len() == 0 {
		return "", nil
	}
	cond, err := keyCond(t, before)
	if err != nil {
		return "", err
	}
	return "UPDATE " + t.dst() + " SET " + set.String() + " WHERE " + cond, nil
}
