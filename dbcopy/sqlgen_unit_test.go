package dbcopy

import (
	"strings"
	"testing"
)

func testTable() *table {
	return &table{SrcDB: "shop", DstDB: "shop_v2", Name: "items", Cols: []column{
		{Name: "id", DataType: "int", Unsigned: true},
		{Name: "name", DataType: "varchar", Charset: "utf8mb4"},
		{Name: "price", DataType: "decimal"},
		{Name: "twice", DataType: "int", Generated: true},
		{Name: "at", DataType: "timestamp"},
		{Name: "data", DataType: "blob"},
		{Name: "note", DataType: "text", Charset: "latin1"},
	}, Key: []int{0}}
}

func TestEventLiteral(t *testing.T) {
	tests := []struct {
		col  column
		v    any
		want string
	}{
		{column{DataType: "int"}, nil, "NULL"},
		{column{DataType: "tinyint"}, int8(-1), "-1"},
		{column{DataType: "tinyint", Unsigned: true}, int8(-1), "255"},
		{column{DataType: "smallint", Unsigned: true}, int16(-2), "65534"},
		{column{DataType: "mediumint", Unsigned: true}, int32(-1), "16777215"},
		{column{DataType: "int", Unsigned: true}, int32(-1), "4294967295"},
		{column{DataType: "bigint", Unsigned: true}, int64(-1), "18446744073709551615"},
		{column{DataType: "bigint"}, int64(-5), "-5"},
		{column{DataType: "enum"}, int64(2), "2"},
		{column{DataType: "year"}, 2001, "2001"},
		{column{DataType: "float"}, float32(0.1), "0.1"},
		{column{DataType: "double"}, 1.0 / 3, "0.3333333333333333"},
		{column{DataType: "decimal"}, "-12.50", "-12.50"},
		{column{DataType: "datetime"}, "2026-01-02 03:04:05.123", "'2026-01-02 03:04:05.123'"},
		{column{DataType: "varchar", Charset: "utf8mb4"}, "é'", "_utf8mb4 X'c3a927'"},
		{column{DataType: "varchar", Charset: "utf8mb4"}, "", "_utf8mb4''"},
		{column{DataType: "varbinary"}, "\x00\xff", "X'00ff'"},
		{column{DataType: "blob"}, "", "''"},
		{column{DataType: "json"}, "{}", "_utf8mb4 X'7b7d'"},
		{column{DataType: "point"}, "\xe6\x10\x00\x00\x01", "ST_GeomFromWKB(X'01', 4326)"},
	}
	for _, tc := range tests {
		got, err := eventLiteral(&tc.col, tc.v)
		if err != nil || got != tc.want {
			t.Errorf("%s %#v: %q, %v; want %q", tc.col.DataType, tc.v, got, err, tc.want)
		}
	}
	if _, err := eventLiteral(&column{Name: "x", DataType: "int"}, struct{}{}); err == nil {
		t.Error("an unknown value type must be an error")
	}
}

func TestTextLiteral(t *testing.T) {
	tests := []struct {
		col  column
		v    []byte
		want string
	}{
		{column{DataType: "int"}, nil, "NULL"},
		{column{DataType: "int"}, []byte("-42"), "-42"},
		{column{DataType: "double"}, []byte("1e-5"), "1e-5"},
		{column{DataType: "date"}, []byte("2026-01-02"), "'2026-01-02'"},
		{column{DataType: "char", Charset: "latin1"}, []byte{0xe9}, "_latin1 X'e9'"},
		{column{DataType: "bit"}, []byte{0x15}, "X'15'"},
	}
	for _, tc := range tests {
		if got := textLiteral(&tc.col, tc.v); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.col.DataType, tc.v, got, tc.want)
		}
	}
}

func TestRowSQL(t *testing.T) {
	tb := testTable()
	row := func(id int32, name string) []any {
		return []any{id, name, "1.50", int32(0), "2026-01-02 03:04:05", "\x01", "caf\xe9"}
	}
	ins, err := insertSQL(tb, [][]any{row(1, "a"), row(-1, "b")})
	if err != nil {
		t.Fatal(err)
	}
	want := "INSERT INTO `shop_v2`.`items` (`id`,`name`,`price`,`at`,`data`,`note`) VALUES " +
		"(1,_utf8mb4 X'61',1.50,'2026-01-02 03:04:05',X'01',_latin1 X'636166e9')," +
		"(4294967295,_utf8mb4 X'62',1.50,'2026-01-02 03:04:05',X'01',_latin1 X'636166e9')"
	if ins != want {
		t.Errorf("insert:\n  %s\nwant\n  %s", ins, want)
	}
	del, err := deleteSQL(tb, [][]any{row(1, "a"), row(2, "b")})
	if err != nil || del != "DELETE FROM `shop_v2`.`items` WHERE `id` IN (1,2)" {
		t.Errorf("delete: %s, %v", del, err)
	}
	after := row(1, "a2")
	after[3] = int32(99) // a generated column is never written
	up, err := updateSQL(tb, row(1, "a"), after)
	if err != nil || up != "UPDATE `shop_v2`.`items` SET `name` = _utf8mb4 X'6132' WHERE `id` = 1" {
		t.Errorf("update: %s, %v", up, err)
	}
	if up, err := updateSQL(tb, row(1, "a"), row(1, "a")); err != nil || up != "" {
		t.Errorf("no-op update: %q, %v", up, err)
	}
	// A composite key.
	tb.Key = []int{0, 1}
	del, err = deleteSQL(tb, [][]any{row(1, "a"), row(2, "b")})
	if err != nil || del != "DELETE FROM `shop_v2`.`items` WHERE (`id` = 1 AND `name` = _utf8mb4 X'61') OR (`id` = 2 AND `name` = _utf8mb4 X'62')" {
		t.Errorf("delete by composite key: %s, %v", del, err)
	}
	// A row image whose width is not the table's: the schemas differ.
	if _, err := insertSQL(tb, [][]any{{int32(1)}}); err == nil || !strings.Contains(err.Error(), "schemas differ") {
		t.Errorf("short row: %v", err)
	}
}

func TestPosition(t *testing.T) {
	p, err := parsePosition(true, "0-1-10,1-2-5")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.add("0-3-11"); err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "0-3-11,1-2-5" {
		t.Errorf("position %q", got)
	}
	for final, want := range map[string]bool{"0-1-11": true, "0-1-12": false, "0-1-11,1-2-5": true, "2-1-1": false, "": true} {
		if ok, err := p.reached(final); err != nil || ok != want {
			t.Errorf("reached(%q) = %v, %v; want %v", final, ok, err, want)
		}
	}
	m, err := parsePosition(false, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.add("3e11fa47-71ca-11e1-9e33-c80aa9429562:6"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := m.reached("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-6"); !ok {
		t.Errorf("MySQL set %s does not reach :1-6", m)
	}
	if ok, _ := m.reached("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7"); ok {
		t.Errorf("MySQL set %s reaches :1-7", m)
	}
}
