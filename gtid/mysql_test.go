package gtid

import (
	"errors"
	"strings"
	"testing"
)

const (
	uA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uB = "2174b383-5441-11e8-b90a-c80aa9429562"
	uC = "ffffffff-0000-0000-0000-000000000001"
)

func mustMySQL(t testing.TB, s string) MySQLSet {
	t.Helper()
	m, err := ParseMySQLSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseMySQLSet(t *testing.T) {
	good := []struct {
		in, want string
		count    uint64
	}{
		{"", "", 0},
		{" \n", "", 0},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18,2174b383-5441-11e8-b90a-c80aa9429562:1",
			uB + ":1," + uA + ":1-5:11-18", 14},
		{uA + ":1-3:4-5", uA + ":1-5", 5},
		{uA + ":4-5:1-3:3", uA + ":1-5", 5},
		{uA + ":7:1-2:3", uA + ":1-3:7", 4},
		{uA + ":1-5,\n" + uB + ":1-2", uB + ":1-2," + uA + ":1-5", 7},
		{" " + uA + " : 1 - 5 : 7 ,\n\t" + uA + ":6 ", uA + ":1-7", 7},
		{uA + ":1," + strings.ToUpper(uA) + ":2", uA + ":1-2", 2},
		// Tagged (MySQL 8.3+).
		{uA + ":1-5:tag1:1-3:tag2:7", uA + ":1-5:tag1:1-3:tag2:7", 9},
		{uA + ":TAG2:7:Tag1:1-3", uA + ":tag1:1-3:tag2:7", 4},
		{uA + ":_x:1," + uA + ":1", uA + ":1:_x:1", 2},
		{uA + ":t:1-2,\n" + uA + ":t:3:4", uA + ":t:1-4", 4},
		{uA + ":a:1:b:2:a:3", uA + ":a:1:3:b:2", 3},
		{uA + ":" + strings.Repeat("z", 32) + ":1", uA + ":" + strings.Repeat("z", 32) + ":1", 1},
		{uA + ":9223372036854775806", uA + ":9223372036854775806", 1},
		{uA + ":1-9223372036854775806", uA + ":1-9223372036854775806", 9223372036854775806},
	}
	for _, tc := range good {
		s, err := ParseMySQLSet(tc.in)
		if err != nil {
			t.Errorf("ParseMySQLSet(%q): %v", tc.in, err)
			continue
		}
		if got := s.String(); got != tc.want {
			t.Errorf("ParseMySQLSet(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := s.Count(); got != tc.count {
			t.Errorf("ParseMySQLSet(%q).Count() = %d, want %d", tc.in, got, tc.count)
		}
	}
	bad := []struct {
		in     string
		pos    int
		reason string
	}{
		{uA, 36, "no intervals after UUID"},
		{uA + ":", 37, "missing interval or tag"},
		{uA + ":1,", 39, "empty element"},
		{uA + ":1,," + uB + ":1", 39, "empty element"},
		{"," + uA + ":1", 0, "empty element"},
		{uA + ":0", 37, "interval start is 0"},
		{uA + ":0-5", 37, "interval start is 0"},
		{uA + ":5-3", 39, "interval end 3 is less than start 5"},
		{uA + ":-3", 37, "interval start is negative"},
		{uA + ":3--4", 39, "interval end is negative"},
		{uA + ":3-", 39, "interval end is missing"},
		{uA + ":1::2", 39, "missing interval or tag"},
		{uA + ":9223372036854775807", 37, "out of range"},
		{uA + ":99999999999999999999999", 37, "out of range"},
		{uA + ":1x", 38, "interval start is not a number"},
		{uA + ":1 2", 39, "expected ',' or ':'"},
		{uA + ":tag", 37, `tag "tag" has no intervals`},
		{uA + ":tag:", 41, "missing interval or tag"},
		{uA + ":a:b:1", 37, `tag "a" has no intervals`},
		{uA + ":1:tag," + uB + ":1", 39, `tag "tag" has no intervals`},
		{uA + ":" + strings.Repeat("z", 33) + ":1", 37, "longer than 32"},
		{uA + ":ta-g:1", 39, "invalid character '-' in tag"},
		{uA + ":tä:1", 38, "invalid character"},
		{uA + ":#:1", 37, "expected an interval or a tag"},
		{"3E11FA47-71CA-11E1-9E33-C80AA942956:1", 35, "':' is not a hex digit"},
		{"3E11FA47-71CA-11E1-9E33-C80AA94295622:1", 36, "too long"},
		{"3E11FA4771CA11E19E33C80AA9429562:1", 8, "expected '-'"},
		{"3E11FA47-71CA-11E1-9E33-C80AA942956g:1", 35, "'g' is not a hex digit"},
		{"{3E11FA47-71CA-11E1-9E33-C80AA9429562}:1", 0, "not a hex digit"},
		{"3E11FA47-71CA", 13, "truncated"},
		{uA + ";1", 36, "expected ':'"},
		{uA + ":1;" + uB + ":1", 38, "interval start is not a number"},
	}
	for _, tc := range bad {
		_, err := ParseMySQLSet(tc.in)
		parseErr(t, tc.in, err, tc.pos, tc.reason)
	}
}

func TestMySQLAlgebra(t *testing.T) {
	tests := []struct {
		a, b                       string
		union, subtract, intersect string
		contains                   bool // a ⊇ b
	}{
		{"", "", "", "", "", true},
		{uA + ":1-10", "", uA + ":1-10", uA + ":1-10", "", true},
		{"", uA + ":1-10", uA + ":1-10", "", "", false},
		{uA + ":1-10", uA + ":3-5", uA + ":1-10", uA + ":1-2:6-10", uA + ":3-5", true},
		{uA + ":1-5", uA + ":6-9", uA + ":1-9", uA + ":1-5", "", false},
		{uA + ":1-3:7-9", uA + ":2-8", uA + ":1-9", uA + ":1:9", uA + ":2-3:7-8", false},
		{uA + ":1-10," + uB + ":1-3", uB + ":1-5", uB + ":1-5," + uA + ":1-10", uA + ":1-10", uB + ":1-3", false},
		// Tags are separate sources.
		{uA + ":1-5:t:1-5", uA + ":t:3-9", uA + ":1-5:t:1-9", uA + ":1-5:t:1-2", uA + ":t:3-5", false},
		{uA + ":1-5:t:1-5", uA + ":1-5", uA + ":1-5:t:1-5", uA + ":t:1-5", uA + ":1-5", true},
		{uA + ":a:1-4:b:1-4", uA + ":b:2-3:c:1", uA + ":a:1-4:b:1-4:c:1", uA + ":a:1-4:b:1:4", uA + ":b:2-3", false},
	}
	for _, tc := range tests {
		a, b := mustMySQL(t, tc.a), mustMySQL(t, tc.b)
		if got := a.Union(b).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.a, tc.b, got, tc.union)
		}
		if got := b.Union(a).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.b, tc.a, got, tc.union)
		}
		if got := a.Subtract(b).String(); got != tc.subtract {
			t.Errorf("%q − %q = %q, want %q", tc.a, tc.b, got, tc.subtract)
		}
		if got := ErrantMySQL(a, b).String(); got != tc.subtract {
			t.Errorf("ErrantMySQL(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.subtract)
		}
		got, err := ErrantMySQLStrings(tc.a, tc.b)
		if err != nil || got != tc.subtract {
			t.Errorf("ErrantMySQLStrings(%q, %q) = %q, %v; want %q", tc.a, tc.b, got, err, tc.subtract)
		}
		if got := a.Intersect(b).String(); got != tc.intersect {
			t.Errorf("%q ∩ %q = %q, want %q", tc.a, tc.b, got, tc.intersect)
		}
		if got := a.Contains(b); got != tc.contains {
			t.Errorf("%q ⊇ %q = %v, want %v", tc.a, tc.b, got, tc.contains)
		}
		if a.Equal(b) != (tc.a == tc.b) {
			t.Errorf("%q.Equal(%q) = %v", tc.a, tc.b, a.Equal(b))
		}
	}
	var zero MySQLSet
	if !zero.IsEmpty() || zero.String() != "" || zero.Count() != 0 || !zero.Equal(mustMySQL(t, "")) || !zero.Contains(zero) {
		t.Error("zero MySQLSet is not the empty set")
	}
	if mustMySQL(t, uA+":1").IsEmpty() {
		t.Error("IsEmpty of non-empty set")
	}
	if b, _ := mustMySQL(t, uA+":1-3:2-5").MarshalText(); string(b) != uA+":1-5" {
		t.Errorf("MarshalText = %s", b)
	}
}

func TestMySQLImmutable(t *testing.T) {
	a := mustMySQL(t, uA+":1-10:t:1-3,"+uB+":5")
	b := mustMySQL(t, uA+":4-20,"+uC+":1")
	as, bs := a.String(), b.String()
	_ = a.Union(b)
	_ = a.Subtract(b)
	_ = a.Intersect(b)
	_ = b.Subtract(a)
	_ = CompareMySQLSets(a, b)
	if a.String() != as || b.String() != bs {
		t.Errorf("inputs modified: %s, %s", a, b)
	}
}

func TestErrantMySQLStringsError(t *testing.T) {
	_, err := ErrantMySQLStrings(uA+":0", "")
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "replica gtid_executed: gtid: invalid MySQL GTID set") {
		t.Errorf("error = %v", err)
	}
	_, err = ErrantMySQLStrings("", "x")
	if err == nil || !strings.HasPrefix(err.Error(), "source gtid_executed: ") {
		t.Errorf("error = %v", err)
	}
}

func TestCompareMySQLSets(t *testing.T) {
	type row struct {
		uuid, tag    string
		order        Order
		onlyA, onlyB string
	}
	tests := []struct {
		a, b string
		want []row
	}{
		{"", "", nil},
		{uA + ":1-10", uA + ":1-10", []row{{uA, "", OrderEqual, "", ""}}},
		{uA + ":1-5", uA + ":1-10", []row{{uA, "", OrderBehind, "", uA + ":6-10"}}},
		{uA + ":1-10", uA + ":1-5", []row{{uA, "", OrderAhead, uA + ":6-10", ""}}},
		{uA + ":1-5:7", uA + ":1-6", []row{{uA, "", OrderDiverged, uA + ":7", uA + ":6"}}},
		{
			uA + ":1-10:t:1-2," + uC + ":1", uA + ":1-12," + uB + ":1-3",
			[]row{
				{uB, "", OrderOnlyB, "", uB + ":1-3"},
				{uA, "", OrderBehind, "", uA + ":11-12"},
				{uA, "t", OrderOnlyA, uA + ":t:1-2", ""},
				{uC, "", OrderOnlyA, uC + ":1", ""},
			},
		},
	}
	for _, tc := range tests {
		got := CompareMySQLSets(mustMySQL(t, tc.a), mustMySQL(t, tc.b))
		if len(got) != len(tc.want) {
			t.Errorf("CompareMySQLSets(%q, %q) = %+v, want %d rows", tc.a, tc.b, got, len(tc.want))
			continue
		}
		for i, c := range got {
			w := tc.want[i]
			if c.UUID != w.uuid || c.Tag != w.tag || c.Order != w.order || c.OnlyA.String() != w.onlyA || c.OnlyB.String() != w.onlyB {
				t.Errorf("CompareMySQLSets(%q, %q)[%d] = {%s %q %s %q %q}, want %+v",
					tc.a, tc.b, i, c.UUID, c.Tag, c.Order, c.OnlyA, c.OnlyB, w)
			}
		}
	}
}
