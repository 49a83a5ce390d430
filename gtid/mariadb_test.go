package gtid

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// parseErr asserts err is a *ParseError at pos whose reason contains reason.
func parseErr(t *testing.T, input string, err error, pos int, reason string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("parse %q: error = %v, want *ParseError", input, err)
	}
	if pe.Input != input || pe.Pos != pos || !strings.Contains(pe.Reason, reason) {
		t.Errorf("parse %q: got Input=%q Pos=%d Reason=%q, want Pos=%d Reason containing %q",
			input, pe.Input, pe.Pos, pe.Reason, pos, reason)
	}
}

func TestParseMariaGTID(t *testing.T) {
	good := []struct {
		in   string
		want MariaGTID
	}{
		{"0-1-100", MariaGTID{0, 1, 100}},
		{" 0-1-100\n", MariaGTID{0, 1, 100}},
		{"00-01-0100", MariaGTID{0, 1, 100}},
		{"1-2-0", MariaGTID{1, 2, 0}},
		{"4294967295-4294967295-18446744073709551615", MariaGTID{4294967295, 4294967295, 18446744073709551615}},
	}
	for _, tc := range good {
		g, err := ParseMariaGTID(tc.in)
		if err != nil || g != tc.want {
			t.Errorf("ParseMariaGTID(%q) = %v, %v; want %v", tc.in, g, err, tc.want)
		}
	}
	bad := []struct {
		in     string
		pos    int
		reason string
	}{
		{"", 0, "empty GTID"},
		{"   ", 3, "empty GTID"},
		{"0-1-x", 4, "sequence number is not a number"},
		{"0-1-1x", 5, "sequence number is not a number"},
		{"0-1", 3, "expected '-' after server ID"},
		{"0-1-", 4, "sequence number is missing"},
		{"0", 1, "expected '-' after domain ID"},
		{"-1-1-1", 0, "domain ID is negative"},
		{"0--1-1", 2, "server ID is negative"},
		{"0-1--1", 4, "sequence number is negative"},
		{"+0-1-1", 0, "domain ID is not a number"},
		{"4294967296-1-1", 0, "domain ID is out of range"},
		{"0-4294967296-1", 2, "server ID is out of range"},
		{"0-1-18446744073709551616", 4, "sequence number is out of range"},
		{"0-1-99999999999999999999999", 4, "sequence number is out of range"},
		{"0-1-2-3", 5, "unexpected '-'"},
		{"0-1-2,0-1-3", 5, "unexpected ','"},
		{"0-1-2 3", 6, "unexpected '3'"},
		{"a-1-2", 0, "domain ID is not a number"},
	}
	for _, tc := range bad {
		_, err := ParseMariaGTID(tc.in)
		parseErr(t, tc.in, err, tc.pos, tc.reason)
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := ParseMariaGTID("0-1-x")
	want := `gtid: invalid MariaDB GTID "0-1-x" at position 4: sequence number is not a number`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	_, err = ParseMariaList("0-1-1,,1-1-2")
	want = `gtid: invalid MariaDB GTID list "0-1-1,,1-1-2" at position 6: empty element`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	_, err = ParseMySQLSet("3E11FA47-71CA-11E1-9E33-C80AA9429562:5-3")
	want = `gtid: invalid MySQL GTID set "3E11FA47-71CA-11E1-9E33-C80AA9429562:5-3" at position 39: interval end 3 is less than start 5`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	// Long inputs are quoted as an excerpt around the position.
	long := strings.Repeat("0-1-1,", 50) + "0-1-y"
	_, err = ParseMariaList(long)
	msg := err.Error()
	if !strings.Contains(msg, `..."`) || !strings.Contains(msg, `0-1-y"`) || !strings.Contains(msg, "at position 304:") || len(msg) > 200 {
		t.Errorf("long input error = %s", msg)
	}
}

func TestParseMariaList(t *testing.T) {
	good := []struct {
		in, want string
	}{
		{"", ""},
		{" \n ", ""},
		{"0-1-100", "0-1-100"},
		{"1-2-5,0-1-100", "0-1-100,1-2-5"},
		{"0-1-100,\n1-2-5", "0-1-100,1-2-5"},
		{" 0-1-100 ,\t1-2-5 \n", "0-1-100,1-2-5"},
		{"0-1-100,0-1-7,0-1-200", "0-1-200"},
		{"0-2-10,0-1-12,1-1-3", "0-1-12,0-2-10,1-1-3"},
		{"10-1-1,9-1-1,2-1-1", "2-1-1,9-1-1,10-1-1"},
	}
	for _, tc := range good {
		l, err := ParseMariaList(tc.in)
		if err != nil {
			t.Errorf("ParseMariaList(%q): %v", tc.in, err)
			continue
		}
		if got := l.String(); got != tc.want {
			t.Errorf("ParseMariaList(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
	}
	bad := []struct {
		in     string
		pos    int
		reason string
	}{
		{"0-1-1,,1-1-2", 6, "empty element"},
		{"0-1-1, ,1-1-2", 7, "empty element"},
		{",0-1-1", 0, "empty element"},
		{"0-1-1,", 6, "empty element"},
		{"0-1-1,\n", 7, "empty element"},
		{"0-1-1 0-1-2", 6, "expected ','"},
		{"0-1-1,0-1", 9, "expected '-' after server ID"},
		{"0-1-1,0-1-x", 10, "sequence number is not a number"},
		{"0-1-1,5000000000-1-1", 6, "domain ID is out of range"},
		{"0-1-1;1-1-1", 5, "sequence number is not a number"},
	}
	for _, tc := range bad {
		_, err := ParseMariaList(tc.in)
		parseErr(t, tc.in, err, tc.pos, tc.reason)
	}
}

func mustMaria(t testing.TB, s string) MariaList {
	t.Helper()
	l, err := ParseMariaList(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustMariaSet(t testing.TB, s string) MariaSet {
	t.Helper()
	m, err := ParseMariaSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMariaListMethods(t *testing.T) {
	l := mustMaria(t, "0-1-100,0-2-150,1-3-7,5-1-1")
	if got := l.Domains(); !slices.Equal(got, []uint32{0, 1, 5}) {
		t.Errorf("Domains = %v", got)
	}
	if g, ok := l.DomainSeq(0); !ok || g != (MariaGTID{0, 2, 150}) {
		t.Errorf("DomainSeq(0) = %v, %v", g, ok)
	}
	if g, ok := l.DomainSeq(2); ok {
		t.Errorf("DomainSeq(2) = %v, true", g)
	}
	// Ties go to the lowest server ID.
	if g, _ := mustMaria(t, "0-9-5,0-3-5").DomainSeq(0); g != (MariaGTID{0, 3, 5}) {
		t.Errorf("DomainSeq tie = %v", g)
	}
	if !l.Equal(mustMaria(t, "5-1-1,1-3-7,0-2-150,0-1-100")) || l.Equal(mustMaria(t, "0-1-100")) {
		t.Error("Equal")
	}
	if !MariaList(nil).Equal(MariaList{}) {
		t.Error("nil and empty lists differ")
	}
}

func TestMariaListAlgebra(t *testing.T) {
	tests := []struct {
		a, b      string
		union     string
		intersect string
		subtract  string // a − b as MariaSet
		contains  bool   // a ⊇ b
		errant    string // ErrantMariaDB(a, b)
	}{
		{"", "", "", "", "", true, ""},
		{"0-1-10", "", "0-1-10", "", "0-1:1-10", true, "0-1-10"},
		{"", "0-1-10", "0-1-10", "", "", false, ""},
		{"0-1-10", "0-1-10", "0-1-10", "0-1-10", "", true, ""},
		{"0-1-10", "0-1-7", "0-1-10", "0-1-7", "0-1:8-10", true, "0-1-10"},
		{"0-1-7", "0-1-10", "0-1-10", "0-1-7", "", false, ""},
		// Multi-domain: replica has an errant transaction from server 3 in domain 0
		// and is behind in domain 1.
		{
			"0-1-100,0-3-101,1-2-50", "0-1-100,1-2-60,2-5-1",
			"0-1-100,0-3-101,1-2-60,2-5-1", "0-1-100,1-2-50", "0-3:1-101", false, "0-3-101",
		},
		{
			"0-1-100,1-1-20,1-2-30", "0-1-90,1-1-20",
			"0-1-100,1-1-20,1-2-30", "0-1-90,1-1-20", "0-1:91-100,1-2:1-30", true, "0-1-100,1-2-30",
		},
		// Sequence number 0 stands for no transaction.
		{"0-1-0", "", "0-1-0", "", "", true, ""},
		{"", "0-1-0", "0-1-0", "", "", true, ""},
	}
	for _, tc := range tests {
		a, b := mustMaria(t, tc.a), mustMaria(t, tc.b)
		if got := a.Union(b).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.a, tc.b, got, tc.union)
		}
		if got := b.Union(a).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.b, tc.a, got, tc.union)
		}
		if got := a.Intersect(b).String(); got != tc.intersect {
			t.Errorf("%q ∩ %q = %q, want %q", tc.a, tc.b, got, tc.intersect)
		}
		if got := a.Subtract(b).String(); got != tc.subtract {
			t.Errorf("%q − %q = %q, want %q", tc.a, tc.b, got, tc.subtract)
		}
		if got := a.Contains(b); got != tc.contains {
			t.Errorf("%q ⊇ %q = %v, want %v", tc.a, tc.b, got, tc.contains)
		}
		if got := ErrantMariaDB(a, b).String(); got != tc.errant {
			t.Errorf("ErrantMariaDB(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.errant)
		}
		got, err := ErrantMariaDBStrings(tc.a, tc.b)
		if err != nil || got != tc.errant {
			t.Errorf("ErrantMariaDBStrings(%q, %q) = %q, %v; want %q", tc.a, tc.b, got, err, tc.errant)
		}
	}
}

func TestErrantMariaDBStringsError(t *testing.T) {
	_, err := ErrantMariaDBStrings("0-1-1", "0-1-x")
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "source binlog state: gtid: invalid MariaDB GTID list") {
		t.Errorf("error = %v", err)
	}
	_, err = ErrantMariaDBStrings("0-1-1,,", "")
	if err == nil || !strings.HasPrefix(err.Error(), "replica binlog state: ") {
		t.Errorf("error = %v", err)
	}
}

func TestCompareMariaPositions(t *testing.T) {
	tests := []struct {
		a, b string
		want string
	}{
		{"", "", ""},
		{"0-1-5", "0-1-5", "domain 0: 0-1-5 equal 0-1-5"},
		{"0-1-5", "0-1-7", "domain 0: 0-1-5 behind 0-1-7"},
		{"0-1-9", "0-2-7", "domain 0: 0-1-9 ahead 0-2-7"},
		{"0-1-7", "0-2-7", "domain 0: 0-1-7 diverged 0-2-7"},
		{
			"0-1-10,1-1-5,3-4-4", "0-1-10,1-2-8,2-2-2",
			"domain 0: 0-1-10 equal 0-1-10; domain 1: 1-1-5 behind 1-2-8; domain 2: none only-b 2-2-2; domain 3: 3-4-4 only-a none",
		},
		// Binlog states: each side's position is its highest seq in the domain.
		{"0-1-100,0-2-120", "0-1-110", "domain 0: 0-2-120 ahead 0-1-110"},
	}
	for _, tc := range tests {
		cs := CompareMariaPositions(mustMaria(t, tc.a), mustMaria(t, tc.b))
		var parts []string
		for _, c := range cs {
			parts = append(parts, c.String())
		}
		if got := strings.Join(parts, "; "); got != tc.want {
			t.Errorf("CompareMariaPositions(%q, %q) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
	c := CompareMariaPositions(mustMaria(t, "0-1-5"), nil)[0]
	if c != (DomainComparison{Domain: 0, A: MariaGTID{0, 1, 5}, HasA: true, Order: OrderOnlyA}) {
		t.Errorf("comparison = %+v", c)
	}
}

func TestOrderString(t *testing.T) {
	for o, want := range map[Order]string{
		OrderEqual: "equal", OrderBehind: "behind", OrderAhead: "ahead", OrderDiverged: "diverged",
		OrderOnlyA: "only-a", OrderOnlyB: "only-b", Order(42): "Order(42)", Order(-1): "Order(-1)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Order(%d).String() = %q, want %q", int(o), got, want)
		}
	}
	if b, _ := OrderBehind.MarshalText(); string(b) != "behind" {
		t.Errorf("MarshalText = %s", b)
	}
}

func TestMariaListImmutable(t *testing.T) {
	// A non-canonical list built by hand must survive every method unchanged.
	orig := MariaList{{1, 1, 5}, {0, 2, 3}, {0, 2, 9}, {0, 1, 4}}
	l := slices.Clone(orig)
	o := MariaList{{0, 2, 1}, {2, 2, 2}}
	oo := slices.Clone(o)
	_ = l.String()
	_ = l.Equal(o)
	_ = l.Domains()
	_, _ = l.DomainSeq(0)
	u := l.Union(o)
	_ = l.Contains(o)
	in := l.Intersect(o)
	_ = l.Subtract(o)
	_ = l.Set()
	_ = CompareMariaPositions(l, o)
	e := ErrantMariaDB(l, o)
	if !slices.Equal(l, orig) || !slices.Equal(o, oo) {
		t.Fatalf("inputs modified: %v %v", l, o)
	}
	// Results do not share memory with inputs.
	for _, r := range []MariaList{u, in, e} {
		if len(r) > 0 {
			r[0].Seq = 999
		}
	}
	if !slices.Equal(l, orig) || !slices.Equal(o, oo) {
		t.Fatalf("inputs share memory with results: %v %v", l, o)
	}
	if got := l.String(); got != "0-1-4,0-2-9,1-1-5" {
		t.Errorf("String of non-canonical list = %q", got)
	}
	if got := NewMariaList(orig...); !slices.Equal(got, MariaList{{0, 1, 4}, {0, 2, 9}, {1, 1, 5}}) {
		t.Errorf("NewMariaList = %v", got)
	}
}

func TestParseMariaSet(t *testing.T) {
	good := []struct{ in, want string }{
		{"", ""},
		{"0-1-100", "0-1:1-100"},
		{"0-1-0", ""},
		{"0-1:5", "0-1:5"},
		{"0-1:1-3:4-5:9", "0-1:1-5:9"},
		{"0-2:7,0-1:1-3,\n0-1 : 4 - 6", "0-1:1-6,0-2:7"},
		{"0-1-100,0-2:101-150", "0-1:1-100,0-2:101-150"},
		{"0-1:50-60,0-1-10", "0-1:1-10:50-60"},
		{"1-1:18446744073709551615,1-1:1-18446744073709551614", "1-1:1-18446744073709551615"},
	}
	for _, tc := range good {
		s, err := ParseMariaSet(tc.in)
		if err != nil {
			t.Errorf("ParseMariaSet(%q): %v", tc.in, err)
			continue
		}
		if got := s.String(); got != tc.want {
			t.Errorf("ParseMariaSet(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	bad := []struct {
		in     string
		pos    int
		reason string
	}{
		{"0-1", 3, "expected ':'"},
		{"0-1:", 4, "interval start is missing"},
		{"0-1:0", 4, "interval start is 0"},
		{"0-1:5-3", 6, "interval end 3 is less than start 5"},
		{"0-1:5-", 6, "interval end is missing"},
		{"0-1:5,,", 6, "empty element"},
		{"0-1:5 6", 6, "expected ','"},
		{"0-1:-5", 4, "interval start is negative"},
		{"0-1:18446744073709551616", 4, "out of range"},
	}
	for _, tc := range bad {
		_, err := ParseMariaSet(tc.in)
		parseErr(t, tc.in, err, tc.pos, tc.reason)
	}
}

func TestMariaSetAlgebra(t *testing.T) {
	tests := []struct {
		a, b                              string
		union, subtract, intersect, lastA string
		contains                          bool
		countA                            uint64
	}{
		{"", "", "", "", "", "", true, 0},
		{"0-1:1-10", "0-1:3-5", "0-1:1-10", "0-1:1-2:6-10", "0-1:3-5", "0-1-10", true, 10},
		{"0-1:1-10,1-1:4", "0-1:5-20,1-2:4", "0-1:1-20,1-1:4,1-2:4", "0-1:1-4,1-1:4", "0-1:5-10", "0-1-10,1-1-4", false, 11},
		{"0-1:1-3:7-9", "0-1:2-8", "0-1:1-9", "0-1:1:9", "0-1:2-3:7-8", "0-1-9", false, 6},
	}
	for _, tc := range tests {
		a, b := mustMariaSet(t, tc.a), mustMariaSet(t, tc.b)
		if got := a.Union(b).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.a, tc.b, got, tc.union)
		}
		if got := a.Subtract(b).String(); got != tc.subtract {
			t.Errorf("%q − %q = %q, want %q", tc.a, tc.b, got, tc.subtract)
		}
		if got := a.Intersect(b).String(); got != tc.intersect {
			t.Errorf("%q ∩ %q = %q, want %q", tc.a, tc.b, got, tc.intersect)
		}
		if got := a.Last().String(); got != tc.lastA {
			t.Errorf("%q.Last() = %q, want %q", tc.a, got, tc.lastA)
		}
		if got := a.Contains(b); got != tc.contains {
			t.Errorf("%q ⊇ %q = %v, want %v", tc.a, tc.b, got, tc.contains)
		}
		if got := a.Count(); got != tc.countA {
			t.Errorf("%q.Count() = %d, want %d", tc.a, got, tc.countA)
		}
		if a.IsEmpty() != (tc.a == "") {
			t.Errorf("%q.IsEmpty() = %v", tc.a, a.IsEmpty())
		}
	}
	if got := mustMariaSet(t, "0-1:1-18446744073709551615,0-2:1").Count(); got != 1<<64-1 {
		t.Errorf("saturating Count = %d", got)
	}
	if b, _ := mustMariaSet(t, "0-1-3").MarshalText(); string(b) != "0-1:1-3" {
		t.Errorf("MarshalText = %s", b)
	}
	var zero MariaSet
	if !zero.IsEmpty() || zero.String() != "" || !zero.Union(zero).IsEmpty() || !zero.Equal(MariaSet{}) {
		t.Error("zero MariaSet is not the empty set")
	}
}

func TestHighestPerDomain(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"", ""}, ""},
		{[]string{"0-1-5", ""}, "0-1-5"},
		{[]string{"0-1-5,1-1-3", "0-2-7"}, "0-2-7,1-1-3"},
		// A tie between lists keeps the earlier list's GTID.
		{[]string{"0-1-7", "0-2-7"}, "0-1-7"},
		{[]string{"0-2-7", "0-1-7"}, "0-2-7"},
		// Within one list, the domain's position (DomainSeq) counts.
		{[]string{"0-1-9,0-2-4", "0-3-8"}, "0-1-9"},
		{[]string{"2-1-1", "1-1-1", "0-1-1"}, "0-1-1,1-1-1,2-1-1"},
	} {
		var ls []MariaList
		for _, s := range tc.in {
			l, err := ParseMariaList(s)
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		}
		if got := HighestPerDomain(ls...).String(); got != tc.want {
			t.Errorf("HighestPerDomain(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
