package backup

import (
	"fmt"
	"math/big"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestChooseKey(t *testing.T) {
	intCol := func(name string, nullable bool) colInfo {
		return colInfo{Name: name, DataType: "int", Type: "int(11)", Nullable: nullable}
	}
	strCol := func(name string, nullable bool) colInfo {
		return colInfo{Name: name, DataType: "varchar", Type: "varchar(20)", Nullable: nullable, Charset: "utf8mb4"}
	}
	tests := []struct {
		name    string
		cols    []colInfo
		indexes []indexInfo
		ok      bool
		want    chunkKey
	}{
		{
			name:    "primary preferred over a smaller NOT NULL unique key",
			cols:    []colInfo{intCol("a", false), intCol("b", false), intCol("c", false)},
			indexes: []indexInfo{{Name: "u_c", Unique: true, Columns: []string{"c"}, Usable: true}, {Name: "PRIMARY", Unique: true, Columns: []string{"a", "b"}, Usable: true}},
			ok:      true,
			want: chunkKey{index: "PRIMARY", cols: []keyCol{
				{name: "a", numeric: true}, {name: "b", numeric: true}}},
		},
		{
			name: "NOT NULL unique key preferred over a smaller nullable one",
			cols: []colInfo{intCol("x", true), strCol("y", false), intCol("z", false)},
			indexes: []indexInfo{
				{Name: "u_x", Unique: true, Columns: []string{"x"}, Usable: true},
				{Name: "u_yz", Unique: true, Columns: []string{"y", "z"}, Usable: true},
			},
			ok: true,
			want: chunkKey{index: "u_yz", cols: []keyCol{
				{name: "y", charset: "utf8mb4"}, {name: "z", numeric: true}}},
		},
		{
			name: "fewest columns among NOT NULL unique keys",
			cols: []colInfo{intCol("a", false), intCol("b", false), intCol("c", false)},
			indexes: []indexInfo{
				{Name: "u_ab", Unique: true, Columns: []string{"a", "b"}, Usable: true},
				{Name: "u_c", Unique: true, Columns: []string{"c"}, Usable: true},
				{Name: "u_a", Unique: true, Columns: []string{"a"}, Usable: true},
			},
			ok:   true,
			want: chunkKey{index: "u_c", cols: []keyCol{{name: "c", numeric: true}}, integer: true},
		},
		{
			name: "fewest columns among nullable unique keys, nullable flag set",
			cols: []colInfo{intCol("a", true), intCol("b", false), intCol("c", true)},
			indexes: []indexInfo{
				{Name: "u_abc", Unique: true, Columns: []string{"a", "b", "c"}, Usable: true},
				{Name: "u_bc", Unique: true, Columns: []string{"b", "c"}, Usable: true},
			},
			ok: true,
			want: chunkKey{index: "u_bc", nullable: true, cols: []keyCol{
				{name: "b", numeric: true}, {name: "c", numeric: true, nullable: true}}},
		},
		{
			name: "prefix/expression primary key ignored, unique key used",
			cols: []colInfo{{Name: "t", DataType: "text", Type: "text", Charset: "utf8mb4"}, {Name: "id", DataType: "bigint", Type: "bigint(20) unsigned"}},
			indexes: []indexInfo{
				{Name: "PRIMARY", Unique: true, Columns: []string{"t"}, Usable: false},
				{Name: "u_id", Unique: true, Columns: []string{"id"}, Usable: true},
			},
			ok:   true,
			want: chunkKey{index: "u_id", cols: []keyCol{{name: "id", numeric: true}}, integer: true},
		},
		{
			name: "only unusable unique keys",
			cols: []colInfo{strCol("s", false)},
			indexes: []indexInfo{
				{Name: "PRIMARY", Unique: true, Columns: []string{"s"}, Usable: false},
				{Name: "u_expr", Unique: true, Columns: []string{""}, Usable: false},
			},
		},
		{
			name:    "only non-unique keys",
			cols:    []colInfo{intCol("a", false)},
			indexes: []indexInfo{{Name: "k_a", Columns: []string{"a"}, Usable: true}},
		},
		{
			name:    "unique key without columns",
			cols:    []colInfo{intCol("a", false)},
			indexes: []indexInfo{{Name: "u", Unique: true, Usable: true}},
		},
		{
			name: "no index at all",
			cols: []colInfo{intCol("a", false)},
		},
		{
			name:    "single NOT NULL bigint primary key is integer",
			cols:    []colInfo{{Name: "id", DataType: "bigint", Type: "bigint(20)"}},
			indexes: []indexInfo{{Name: "PRIMARY", Unique: true, Columns: []string{"id"}, Usable: true}},
			ok:      true,
			want:    chunkKey{index: "PRIMARY", cols: []keyCol{{name: "id", numeric: true}}, integer: true},
		},
		{
			name:    "single nullable int unique key is not integer",
			cols:    []colInfo{intCol("a", true)},
			indexes: []indexInfo{{Name: "u_a", Unique: true, Columns: []string{"a"}, Usable: true}},
			ok:      true,
			want:    chunkKey{index: "u_a", cols: []keyCol{{name: "a", numeric: true, nullable: true}}, nullable: true},
		},
		{
			name:    "decimal primary key is numeric but not integer",
			cols:    []colInfo{{Name: "d", DataType: "decimal", Type: "decimal(10,2)"}},
			indexes: []indexInfo{{Name: "PRIMARY", Unique: true, Columns: []string{"d"}, Usable: true}},
			ok:      true,
			want:    chunkKey{index: "PRIMARY", cols: []keyCol{{name: "d", numeric: true}}},
		},
		{
			name:    "varchar primary key is not integer",
			cols:    []colInfo{strCol("s", false)},
			indexes: []indexInfo{{Name: "PRIMARY", Unique: true, Columns: []string{"s"}, Usable: true}},
			ok:      true,
			want:    chunkKey{index: "PRIMARY", cols: []keyCol{{name: "s", charset: "utf8mb4"}}},
		},
		{
			name:    "composite int primary key is not integer",
			cols:    []colInfo{intCol("a", false), intCol("b", false)},
			indexes: []indexInfo{{Name: "PRIMARY", Unique: true, Columns: []string{"a", "b"}, Usable: true}},
			ok:      true,
			want:    chunkKey{index: "PRIMARY", cols: []keyCol{{name: "a", numeric: true}, {name: "b", numeric: true}}},
		},
		{
			name: "binary and datetime key columns",
			cols: []colInfo{{Name: "h", DataType: "varbinary", Type: "varbinary(16)"}, {Name: "ts", DataType: "datetime", Type: "datetime(6)"}},
			indexes: []indexInfo{
				{Name: "PRIMARY", Unique: true, Columns: []string{"h", "ts"}, Usable: true},
			},
			ok:   true,
			want: chunkKey{index: "PRIMARY", cols: []keyCol{{name: "h", binary: true}, {name: "ts"}}},
		},
		{
			name:    "index column names match case-insensitively; the column's spelling is kept",
			cols:    []colInfo{{Name: "Id", DataType: "int", Type: "int(11)"}},
			indexes: []indexInfo{{Name: "PRIMARY", Unique: true, Columns: []string{"ID"}, Usable: true}},
			ok:      true,
			want:    chunkKey{index: "PRIMARY", cols: []keyCol{{name: "Id", numeric: true}}, integer: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := chooseKey(&tableInfo{DB: "d", Name: "t", Columns: tc.cols, Indexes: tc.indexes})
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (key %+v)", ok, tc.ok, got)
			}
			if !ok {
				if !reflect.DeepEqual(got, chunkKey{}) {
					t.Errorf("key = %+v, want the zero key", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("key = %+v\nwant  %+v", got, tc.want)
			}
		})
	}
}

func TestColumnsFor(t *testing.T) {
	ti := &tableInfo{DB: "d", Name: "t", Columns: []colInfo{
		{Name: "id", DataType: "int", Type: "int(11)"},
		{Name: "g", DataType: "int", Type: "int(11)", Generated: true},
		{Name: "big", DataType: "bigint", Type: "bigint(20) unsigned"},
		{Name: "y", DataType: "year", Type: "year(4)"},
		{Name: "dec", DataType: "decimal", Type: "decimal(10,2)"},
		{Name: "b", DataType: "bit", Type: "bit(8)"},
		{Name: "f", DataType: "float", Type: "float"},
		{Name: "d", DataType: "double", Type: "double"},
		{Name: "r", DataType: "real", Type: "double"},
		{Name: "p", DataType: "point", Type: "point"},
		{Name: "geo", DataType: "geometry", Type: "geometry"},
		{Name: "gc", DataType: "geometrycollection", Type: "geometrycollection"},
		{Name: "j", DataType: "json", Type: "json"},
		{Name: "v", DataType: "varchar", Type: "varchar(10)", Charset: "utf8mb4"},
		{Name: "odd`name", DataType: "bit", Type: "bit(1)"},
		{Name: "vg", DataType: "varchar", Type: "varchar(10)", Generated: true},
	}}
	common := []Column{
		{Name: "id", Type: "int(11)", Select: "CONCAT(`id`)"},
		{Name: "big", Type: "bigint(20) unsigned", Select: "CONCAT(`big`)"},
		{Name: "y", Type: "year(4)", Select: "CONCAT(`y`)"},
		{Name: "dec", Type: "decimal(10,2)"},
		{Name: "b", Type: "bit(8)", Select: "CAST(`b` AS UNSIGNED)", Load: "CAST(@v AS UNSIGNED)"},
		{Name: "f", Type: "float", Select: "CONCAT(`f` + 0e0)"},
		{Name: "d", Type: "double", Select: "CONCAT(`d`)"},
		{Name: "r", Type: "double", Select: "CONCAT(`r`)"},
		{Name: "p", Type: "point"},
		{Name: "geo", Type: "geometry"},
		{Name: "gc", Type: "geometrycollection"},
		{Name: "j", Type: "json"}, // replaced below for MySQL
		{Name: "v", Type: "varchar(10)"},
		{Name: "odd`name", Type: "bit(1)", Select: "CAST(`odd``name` AS UNSIGNED)", Load: "CAST(@v AS UNSIGNED)"},
	}
	mariadb := slices.Clone(common)
	mysqlCols := slices.Clone(common)
	mysqlCols[11] = Column{Name: "j", Type: "json", Load: "CONVERT(@v USING utf8mb4)"}

	for _, tc := range []struct {
		name  string
		mysql bool
		want  []Column
	}{
		{"mariadb", false, mariadb},
		{"mysql", true, mysqlCols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := columnsFor(ti, tc.mysql)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("columnsFor:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}

	// selectExpr falls back to the quoted name.
	for _, tc := range []struct {
		col  Column
		want string
	}{
		{Column{Name: "a"}, "`a`"},
		{Column{Name: "a`b"}, "`a``b`"},
		{Column{Name: "f", Select: "CONCAT(`f` + 0e0)"}, "CONCAT(`f` + 0e0)"},
	} {
		if got := tc.col.selectExpr(); got != tc.want {
			t.Errorf("selectExpr(%+v) = %q, want %q", tc.col, got, tc.want)
		}
	}
}

func bigOf(t testing.TB, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad big int %q", s)
	}
	return v
}

func TestIntegerRanges(t *testing.T) {
	const u64max = "18446744073709551615"
	tests := []struct {
		name     string
		col      string
		min, max string
		n        int64
		want     []string
	}{
		{"n=1", "id", "1", "100", 1, []string{""}},
		{"n=0 means one", "id", "1", "100", 0, []string{""}},
		{"negative n means one", "id", "1", "100", -4, []string{""}},
		{"min equals max", "id", "7", "7", 5, []string{""}},
		{"min above max (empty range)", "id", "9", "3", 4, []string{""}},
		{"even split", "id", "1", "100", 4, []string{
			"`id` < 26", "`id` >= 26 AND `id` < 51", "`id` >= 51 AND `id` < 76", "`id` >= 76"}},
		{"two ranges", "id", "1", "10", 2, []string{"`id` < 6", "`id` >= 6"}},
		{"span smaller than n", "id", "1", "3", 10, []string{"`id` < 2", "`id` >= 2 AND `id` < 3", "`id` >= 3"}},
		{"span equal to n", "id", "0", "2", 3, []string{"`id` < 1", "`id` >= 1 AND `id` < 2", "`id` >= 2"}},
		{"rounding gives fewer ranges than n", "id", "0", "4", 4, []string{"`id` < 2", "`id` >= 2 AND `id` < 4", "`id` >= 4"}},
		{"negative numbers", "k", "-10", "9", 4, []string{
			"`k` < -5", "`k` >= -5 AND `k` < 0", "`k` >= 0 AND `k` < 5", "`k` >= 5"}},
		{"all negative", "k", "-100", "-91", 2, []string{"`k` < -95", "`k` >= -95"}},
		{"full uint64 range", "u", "0", u64max, 4, []string{
			"`u` < 4611686018427387904",
			"`u` >= 4611686018427387904 AND `u` < 9223372036854775808",
			"`u` >= 9223372036854775808 AND `u` < 13835058055282163712",
			"`u` >= 13835058055282163712"}},
		{"top of uint64", "u", "18446744073709551606", u64max, 3, []string{
			"`u` < 18446744073709551610",
			"`u` >= 18446744073709551610 AND `u` < 18446744073709551614",
			"`u` >= 18446744073709551614"}},
		{"full int64 range", "s", "-9223372036854775808", "9223372036854775807", 2, []string{
			"`s` < 0", "`s` >= 0"}},
		{"quoted column name", "we`ird", "1", "4", 2, []string{"`we``ird` < 3", "`we``ird` >= 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := integerRanges(tc.col, bigOf(t, tc.min), bigOf(t, tc.max), tc.n)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("integerRanges(%s, %s, %s, %d):\n got %q\nwant %q", tc.col, tc.min, tc.max, tc.n, got, tc.want)
			}
		})
	}
}

// TestIntegerRangesPartition checks on random bounds that every value in
// [min-5, max+5] falls in exactly one range, that there are at most n
// ranges and that none is empty inside [min, max].
func TestIntegerRangesPartition(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	iters := 3000
	if testing.Short() {
		iters = 800
	}
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	for it := 0; it < iters; it++ {
		var min *big.Int
		switch it % 4 {
		case 0:
			min = big.NewInt(rng.Int63n(200) - 100)
		case 1:
			min = big.NewInt(-rng.Int63())
		case 2:
			min = new(big.Int).Sub(two64, big.NewInt(rng.Int63n(5000)+1)) // near uint64 max
		default:
			min = big.NewInt(rng.Int63())
		}
		span := rng.Int63n(300) // max - min
		if it%10 == 0 {
			span = rng.Int63n(5)
		}
		max := new(big.Int).Add(min, big.NewInt(span))
		n := rng.Int63n(40) + 1
		if it%7 == 0 {
			n = rng.Int63n(3) - 1 // 0, -1, 1
		}
		conds := integerRanges("c", min, max, n)
		if nn := max64(n, 1); int64(len(conds)) > nn {
			t.Fatalf("min %s max %s n %d: %d ranges, more than n", min, max, n, len(conds))
		}
		preds := make([]uPred, len(conds))
		for i, c := range conds {
			preds[i] = uMustCompile(t, c)
		}
		hits := make([]int, len(conds))
		for d := int64(-5); d <= span+5; d++ {
			v := new(big.Int).Add(min, big.NewInt(d))
			var in []int
			for i, p := range preds {
				if p(uRow{"c": v}) == triTrue {
					in = append(in, i)
				}
			}
			if len(in) != 1 {
				t.Fatalf("min %s max %s n %d: value %s is in ranges %v of %q", min, max, n, v, in, conds)
			}
			if d >= 0 && d <= span {
				hits[in[0]]++
			}
		}
		for i, h := range hits {
			if h == 0 {
				t.Fatalf("min %s max %s n %d: range %q holds no value of [min, max]", min, max, n, conds[i])
			}
		}
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// numericKey is a chunk key over integer columns named c0, c1, ...;
// nullable[i] marks nullable columns.
func numericKey(nullable ...bool) chunkKey {
	k := chunkKey{index: "PRIMARY"}
	for i, nl := range nullable {
		k.cols = append(k.cols, keyCol{name: fmt.Sprintf("c%d", i), numeric: true, nullable: nl})
		k.nullable = k.nullable || nl
	}
	return k
}

func tupleVals(tu []int64) [][]byte {
	out := make([][]byte, len(tu))
	for i, v := range tu {
		out[i] = []byte(fmt.Sprint(v))
	}
	return out
}

// tupleRow turns a tuple into a row; nulls marks NULL positions.
func tupleRow(tu []int64, nulls []bool) uRow {
	r := uRow{}
	for i, v := range tu {
		if nulls == nil || !nulls[i] {
			r[fmt.Sprintf("c%d", i)] = big.NewInt(v)
		}
	}
	return r
}

func TestChunkKeyAfterBeforeText(t *testing.T) {
	tests := []struct {
		k             chunkKey
		vals          []int64
		after, before string
	}{
		{numericKey(false), []int64{5}, "`c0` > 5", "`c0` <= 5"},
		{numericKey(false), []int64{-5}, "`c0` > -5", "`c0` <= -5"},
		{numericKey(false, false), []int64{3, 7},
			"(`c0` > 3 OR (`c0` = 3 AND `c1` > 7))",
			"(`c0` < 3 OR (`c0` = 3 AND `c1` <= 7))"},
		{numericKey(false, false, false), []int64{1, 2, 3},
			"(`c0` > 1 OR (`c0` = 1 AND (`c1` > 2 OR (`c1` = 2 AND `c2` > 3))))",
			"(`c0` < 1 OR (`c0` = 1 AND (`c1` < 2 OR (`c1` = 2 AND `c2` <= 3))))"},
	}
	for _, tc := range tests {
		vals := tupleVals(tc.vals)
		if got := tc.k.after(vals); got != tc.after {
			t.Errorf("after(%v) = %q, want %q", tc.vals, got, tc.after)
		}
		if got := tc.k.before(vals); got != tc.before {
			t.Errorf("before(%v) = %q, want %q", tc.vals, got, tc.before)
		}
	}
	// Literals follow keyLiteral: strings as hex with their character set.
	k := chunkKey{index: "u", cols: []keyCol{{name: "s", charset: "utf8mb4"}, {name: "b", binary: true}}}
	want := "(`s` > _utf8mb4 X'6162' OR (`s` = _utf8mb4 X'6162' AND `b` > X'00ff'))"
	if got := k.after([][]byte{[]byte("ab"), {0, 0xff}}); got != want {
		t.Errorf("after = %q, want %q", got, want)
	}
}

func randTuple(rng *rand.Rand, n int, lo, hi int64) []int64 {
	tu := make([]int64, n)
	for i := range tu {
		tu[i] = lo + rng.Int63n(hi-lo+1)
	}
	return tu
}

// TestChunkKeyComplement checks that before(b) and after(b) are exact
// complements on NOT NULL tuples: for every tuple exactly one is TRUE and
// neither is NULL.
func TestChunkKeyComplement(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for it := 0; it < 300; it++ {
		ncol := 1 + it%4
		k := numericKey(make([]bool, ncol)...)
		b := randTuple(rng, ncol, -3, 3)
		after := uMustCompile(t, k.after(tupleVals(b)))
		before := uMustCompile(t, k.before(tupleVals(b)))
		for j := 0; j < 60; j++ {
			tu := randTuple(rng, ncol, -4, 4)
			if j == 0 {
				tu = slices.Clone(b) // the boundary itself belongs to before
			}
			row := tupleRow(tu, nil)
			a, bf := after(row), before(row)
			if a == triNull || bf == triNull || a == bf {
				t.Fatalf("boundary %v, tuple %v: after = %v, before = %v; want exactly one TRUE", b, tu, a, bf)
			}
			wantAfter := slices.Compare(tu, b) > 0
			if (a == triTrue) != wantAfter {
				t.Fatalf("boundary %v, tuple %v: after = %v, want %v (lexicographic order)", b, tu, a, wantAfter)
			}
		}
	}
}

// chunkConds is the sequence of conditions the brief's partition uses:
// before(b1), after(b1) AND before(b2), ..., after(bn).
func chunkConds(k chunkKey, bounds [][]int64) []string {
	if len(bounds) == 0 {
		return []string{""}
	}
	out := []string{and(k.before(tupleVals(bounds[0])))}
	for i := 1; i < len(bounds); i++ {
		out = append(out, and(k.after(tupleVals(bounds[i-1])), k.before(tupleVals(bounds[i]))))
	}
	return append(out, and(k.after(tupleVals(bounds[len(bounds)-1]))))
}

func sortedBounds(rng *rand.Rand, ncol, nb int) [][]int64 {
	var bs [][]int64
	for i := 0; i < nb; i++ {
		bs = append(bs, randTuple(rng, ncol, -3, 3))
	}
	slices.SortFunc(bs, slices.Compare)
	return slices.CompactFunc(bs, func(a, b []int64) bool { return slices.Equal(a, b) })
}

// TestChunkKeyPartition checks that a sorted sequence of boundaries splits
// all NOT NULL tuples into chunks with each tuple in exactly one chunk.
func TestChunkKeyPartition(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for it := 0; it < 200; it++ {
		ncol := 1 + it%3
		k := numericKey(make([]bool, ncol)...)
		bounds := sortedBounds(rng, ncol, rng.Intn(6))
		conds := chunkConds(k, bounds)
		preds := make([]uPred, len(conds))
		for i, c := range conds {
			preds[i] = uMustCompile(t, c)
		}
		for j := 0; j < 100; j++ {
			tu := randTuple(rng, ncol, -4, 4)
			var in []int
			for i, p := range preds {
				if p(tupleRow(tu, nil)) == triTrue {
					in = append(in, i)
				}
			}
			if len(in) != 1 {
				t.Fatalf("bounds %v: tuple %v is in chunks %v of %q", bounds, tu, in, conds)
			}
			// And it is the right chunk: the first whose boundary is >= tuple.
			want := len(bounds)
			for i, b := range bounds {
				if slices.Compare(tu, b) <= 0 {
					want = i
					break
				}
			}
			if in[0] != want {
				t.Fatalf("bounds %v: tuple %v in chunk %d, want %d", bounds, tu, in[0], want)
			}
		}
	}
}

// scanChunkConds are the conditions scanBoundaries and planTable emit for a
// key (without --where): the NULL chunk when the key is nullable, then
// before(b1) AND notNull, after(b_{i-1}) AND before(b_i), after(bn) AND
// notNull.
func scanChunkConds(k chunkKey, bounds [][]int64) []string {
	var out []string
	if k.nullable {
		out = append(out, k.someNull())
	}
	// As scanBoundaries cuts them.
	var prev [][]byte
	for _, b := range bounds {
		cur := tupleVals(b)
		out = append(out, k.rangeCond(prev, cur))
		prev = cur
	}
	return append(out, k.rangeCond(prev, nil))
}

// chunksHolding evaluates the conditions on a row.
func chunksHolding(t *testing.T, conds []string, row uRow) []int {
	var in []int
	for i, c := range conds {
		if uMustCompile(t, c)(row) == triTrue {
			in = append(in, i)
		}
	}
	return in
}

// TestScanChunksNotNullKey checks the planner's own composition on a NOT
// NULL composite key.
func TestScanChunksNotNullKey(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for it := 0; it < 100; it++ {
		k := numericKey(false, false)
		bounds := sortedBounds(rng, 2, rng.Intn(5))
		conds := scanChunkConds(k, bounds)
		for j := 0; j < 50; j++ {
			tu := randTuple(rng, 2, -4, 4)
			if in := chunksHolding(t, conds, tupleRow(tu, nil)); len(in) != 1 {
				t.Fatalf("bounds %v: tuple %v in chunks %v of %q", bounds, tu, in, conds)
			}
		}
	}
}

// TestScanChunksNullableKey checks the planner's composition on a unique
// key whose second column is nullable: rows with a NULL in the key must be
// in the NULL chunk only.
func TestScanChunksNullableKey(t *testing.T) {
	k := numericKey(false, true)
	bounds := [][]int64{{1, 1}, {3, 1}, {7, 2}}
	conds := scanChunkConds(k, bounds)
	t.Logf("chunks: %q", conds)
	for a := int64(-1); a <= 9; a++ {
		if in := chunksHolding(t, conds, tupleRow([]int64{a, 0}, []bool{false, true})); len(in) != 1 {
			t.Errorf("row (%d, NULL) is in chunks %v", a, in)
		}
		for _, b := range []int64{0, 1, 2, 3} {
			if in := chunksHolding(t, conds, tupleRow([]int64{a, b}, nil)); len(in) != 1 {
				t.Errorf("row (%d, %d) is in chunks %v", a, b, in)
			}
		}
	}
}

func TestNullConditions(t *testing.T) {
	tests := []struct {
		k                 chunkKey
		notNull, someNull string
	}{
		{numericKey(false, false), "", "()"},
		{numericKey(true), "`c0` IS NOT NULL", "`c0` IS NULL"},
		{numericKey(false, true), "`c1` IS NOT NULL", "`c1` IS NULL"},
		{numericKey(true, false, true), "`c0` IS NOT NULL AND `c2` IS NOT NULL", "(`c0` IS NULL OR `c2` IS NULL)"},
		{chunkKey{cols: []keyCol{{name: "a`b", nullable: true}}, nullable: true}, "`a``b` IS NOT NULL", "`a``b` IS NULL"},
	}
	for _, tc := range tests {
		if got := tc.k.notNull(); got != tc.notNull {
			t.Errorf("notNull(%+v) = %q, want %q", tc.k.cols, got, tc.notNull)
		}
		if !tc.k.nullable {
			continue // someNull is only used on nullable keys
		}
		if got := tc.k.someNull(); got != tc.someNull {
			t.Errorf("someNull(%+v) = %q, want %q", tc.k.cols, got, tc.someNull)
		}
	}
	// Semantics: someNull and notNull are complements, never NULL.
	k := numericKey(true, false, true)
	some, none := uMustCompile(t, k.someNull()), uMustCompile(t, k.notNull())
	for mask := 0; mask < 8; mask++ {
		nulls := []bool{mask&1 != 0, mask&2 != 0, mask&4 != 0}
		row := tupleRow([]int64{1, 2, 3}, nulls)
		s, n := some(row), none(row)
		if s == triNull || n == triNull || s == n {
			t.Errorf("nulls %v: someNull = %v, notNull = %v", nulls, s, n)
		}
		wantSome := nulls[0] || nulls[2] // c1 is NOT NULL: never part of the test
		if (s == triTrue) != wantSome {
			t.Errorf("nulls %v: someNull = %v, want %v", nulls, s, wantSome)
		}
	}
}

func TestAnd(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"", ""}, ""},
		{[]string{"`a` < 1"}, "`a` < 1"},
		{[]string{"`a` = 1 OR `b` = 2"}, "`a` = 1 OR `b` = 2"}, // alone: left as is
		{[]string{"", "`a` < 1", ""}, "`a` < 1"},
		{[]string{"`a` < 1", "`b` > 2"}, "`a` < 1 AND `b` > 2"},
		{[]string{"`a` < 1", "`b` = 2 OR `c` = 3"}, "`a` < 1 AND (`b` = 2 OR `c` = 3)"},
		{[]string{"(`a` > 1 OR (`a` = 1 AND `b` > 2))", "`c` IS NOT NULL"}, "(`a` > 1 OR (`a` = 1 AND `b` > 2)) AND `c` IS NOT NULL"},
		{[]string{"(`a` = 1) OR (`b` = 2)", "`c` = 3"}, "((`a` = 1) OR (`b` = 2)) AND `c` = 3"},
		{[]string{"`s` = ' OR '", "`c` = 3"}, "(`s` = ' OR ') AND `c` = 3"}, // harmless extra parentheses
		{[]string{"`a` = 1", "`b` = 2", "`c` = 3 OR `d` = 4"}, "`a` = 1 AND `b` = 2 AND (`c` = 3 OR `d` = 4)"},
	}
	for _, tc := range tests {
		if got := and(tc.in...); got != tc.want {
			t.Errorf("and(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAndSemantics(t *testing.T) {
	// A chunk condition joined with a --where containing OR must select
	// the intersection.
	conds := []string{"`id` < 10", "`id` >= 10 AND `id` < 20", "`id` >= 20"}
	where := "`x` = 1 OR `y` = 2"
	for id := int64(0); id < 30; id++ {
		for x := int64(0); x < 2; x++ {
			for y := int64(1); y < 3; y++ {
				row := uRow{"id": uInt(id), "x": uInt(x), "y": uInt(y)}
				n := 0
				for _, c := range conds {
					if uMustCompile(t, and(c, where))(row) == triTrue {
						n++
					}
				}
				want := 0
				if x == 1 || y == 2 {
					want = 1
				}
				if n != want {
					t.Fatalf("row %v: in %d chunks, want %d", row, n, want)
				}
			}
		}
	}
}

// TestAndLowercaseOr shows that a --where written with a lower-case "or"
// (or ||, XOR) is not parenthesized and escapes the chunk condition.
func TestAndLowercaseOr(t *testing.T) {
	got := and("`id` < 10", "`x` = 1 or `y` = 2")
	row := uRow{"id": uInt(50), "x": uInt(0), "y": uInt(2)}
	if v := uMustCompile(t, got)(row); v == triTrue {
		t.Errorf("and(...) = %q selects row id=50 outside the chunk `id` < 10", got)
	}
}

func TestBalancedOuter(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"(a)", true},
		{"(a OR (b))", true},
		{"((a) OR (b))", true},
		{"(a) OR (b)", false},
		{"(a) AND b", false},
		{"((a)", false},
		{"(a))", false},
		{"('(' OR x)", true},
		{"(')' OR x)", true},
		{"(`)` OR x)", true},
		{`("a)" OR x)`, true},
		{`('it\'s )' OR x)`, true},
		{`(x = ')') OR (y)`, false},
	}
	for _, tc := range tests {
		if got := balancedOuter(tc.s); got != tc.want {
			t.Errorf("balancedOuter(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestSortBySize(t *testing.T) {
	ts := []*tableInfo{
		{Name: "small", DataBytes: 10, EstRows: 100},
		{Name: "big", DataBytes: 1000, EstRows: 5},
		{Name: "tieFewRows", DataBytes: 50, EstRows: 1},
		{Name: "tieManyRows", DataBytes: 50, EstRows: 9},
		{Name: "empty1"},
		{Name: "empty2"},
		{Name: "mid", DataBytes: 500},
	}
	sortBySize(ts, 0)
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	want := []string{"big", "mid", "tieManyRows", "tieFewRows", "small", "empty1", "empty2"}
	if !slices.Equal(names, want) {
		t.Errorf("order = %v, want %v", names, want)
	}
	sortBySize(nil, 10) // no panic

	// A keyless table is one job: it goes before a bigger keyed table
	// whose chunks are smaller.
	pk := []indexInfo{{Name: "PRIMARY", Unique: true, Usable: true, Columns: []string{"id"}}}
	idCol := []colInfo{{Name: "id", DataType: "int"}}
	ts = []*tableInfo{
		{Name: "keyed", DataBytes: 5000, EstRows: 5000, Columns: idCol, Indexes: pk},
		{Name: "keyless", DataBytes: 1000, EstRows: 1000, Columns: idCol},
		{Name: "smallkeyed", DataBytes: 800, EstRows: 800, Columns: idCol, Indexes: pk},
	}
	sortBySize(ts, 500)
	names = names[:0]
	for _, t := range ts {
		names = append(names, t.Name)
	}
	if want := []string{"keyless", "keyed", "smallkeyed"}; !slices.Equal(names, want) {
		t.Errorf("order = %v, want %v", names, want)
	}
}

// The evaluator must agree with the generated text on a few hand-checked
// rows, including NULLs (three-valued logic matters for chunk conditions).
func TestChunkKeyNullSemantics(t *testing.T) {
	k := numericKey(false, true)
	after := uMustCompile(t, k.after(tupleVals([]int64{3, 1})))
	tests := []struct {
		row  uRow
		want tri
	}{
		{tupleRow([]int64{5, 0}, []bool{false, true}), triTrue}, // decided by the first column
		{tupleRow([]int64{3, 0}, []bool{false, true}), triNull},
		{tupleRow([]int64{1, 0}, []bool{false, true}), triFalse},
	}
	for _, tc := range tests {
		if got := after(tc.row); got != tc.want {
			t.Errorf("after on %v = %v, want %v", tc.row, got, tc.want)
		}
	}
	if s := k.after(tupleVals([]int64{3, 1})); !strings.Contains(s, "`c1` > 1") {
		t.Errorf("after = %q", s)
	}
}
