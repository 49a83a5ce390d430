package gtid

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Property tests over random valid sets from a seeded generator. Values are
// drawn from two windows, near 1 and near the largest allowed number, so
// that overflow edges are exercised; a brute-force model (a Go map of the
// members) checks every operation.

const propIterations = 3000

func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(20240601, uint64(len(t.Name()))))
}

// randInterval returns an interval of up to 12 values in the low window
// [1, 40] or the high window [limit-39, limit].
func randInterval(r *rand.Rand, limit uint64) interval {
	lo := 1 + r.Uint64N(40)
	hi := min(lo+r.Uint64N(12), 40)
	if r.IntN(5) == 0 {
		lo, hi = limit-40+lo, limit-40+hi
	}
	return interval{lo, hi}
}

// randSpace returns "" or some white space, as servers and people write it.
func randSpace(r *rand.Rand) string {
	return []string{"", "", "", " ", "\n", " \n\t"}[r.IntN(6)]
}

var (
	propUUIDs = []string{uA, uB, uC}
	propTags  = []string{"", "", "a", "tag_2", "_"}
)

// randMySQLText returns the text of a random valid MySQL GTID set, written
// in a random but valid (non-canonical) way.
func randMySQLText(r *rand.Rand) string {
	var elems []string
	for range r.IntN(5) {
		u := propUUIDs[r.IntN(len(propUUIDs))]
		if r.IntN(2) == 0 {
			u = strings.ToUpper(u)
		}
		var b strings.Builder
		b.WriteString(u)
		for range 1 + r.IntN(3) {
			if tag := propTags[r.IntN(len(propTags))]; tag != "" {
				b.WriteString(randSpace(r) + ":" + randSpace(r))
				if r.IntN(2) == 0 {
					tag = strings.ToUpper(tag)
				}
				b.WriteString(tag)
			}
			for range 1 + r.IntN(3) {
				iv := randInterval(r, MaxMySQLGNO)
				b.WriteString(randSpace(r) + ":" + randSpace(r))
				if iv.lo == iv.hi && r.IntN(2) == 0 {
					fmt.Fprintf(&b, "%d", iv.lo)
				} else {
					fmt.Fprintf(&b, "%d%s-%s%d", iv.lo, randSpace(r), randSpace(r), iv.hi)
				}
			}
		}
		elems = append(elems, b.String())
	}
	var b strings.Builder
	b.WriteString(randSpace(r))
	for i, e := range elems {
		if i > 0 {
			b.WriteString(randSpace(r) + "," + randSpace(r))
		}
		b.WriteString(e)
	}
	b.WriteString(randSpace(r))
	return b.String()
}

// randMariaSetText returns the text of a random valid MariaSet, mixing
// interval elements and GTID shorthand.
func randMariaSetText(r *rand.Rand) string {
	var elems []string
	for range r.IntN(5) {
		head := fmt.Sprintf("%d-%d", r.IntN(3), 1+r.IntN(3))
		if r.IntN(4) == 0 {
			elems = append(elems, fmt.Sprintf("%s-%d", head, r.IntN(30)))
			continue
		}
		var b strings.Builder
		b.WriteString(head)
		for range 1 + r.IntN(3) {
			iv := randInterval(r, math.MaxUint64)
			fmt.Fprintf(&b, "%s:%s%d-%d", randSpace(r), randSpace(r), iv.lo, iv.hi)
		}
		elems = append(elems, b.String())
	}
	return strings.Join(elems, ","+randSpace(r))
}

// randMariaList returns a random list, canonical or not.
func randMariaList(r *rand.Rand) MariaList {
	var l MariaList
	for range r.IntN(6) {
		seq := r.Uint64N(30)
		if r.IntN(8) == 0 {
			seq = math.MaxUint64 - r.Uint64N(3)
		}
		l = append(l, MariaGTID{Domain: uint32(r.IntN(3)), Server: uint32(1 + r.IntN(3)), Seq: seq})
	}
	return l
}

// model is the brute-force form of an interval map.
type model[K comparable] map[K]map[uint64]bool

func toModel[K comparable](m ivMap[K]) model[K] {
	out := model[K]{}
	for k, v := range m {
		out[k] = map[uint64]bool{}
		for _, x := range v {
			for n := x.lo; ; n++ {
				out[k][n] = true
				if n == x.hi {
					break
				}
			}
		}
	}
	return out
}

func (a model[K]) op(b model[K], keep func(inA, inB bool) bool) model[K] {
	out := model[K]{}
	add := func(k K, n uint64) {
		if keep(a[k][n], b[k][n]) {
			if out[k] == nil {
				out[k] = map[uint64]bool{}
			}
			out[k][n] = true
		}
	}
	for k, v := range a {
		for n := range v {
			add(k, n)
		}
	}
	for k, v := range b {
		for n := range v {
			add(k, n)
		}
	}
	return out
}

func (a model[K]) equal(b model[K]) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if len(v) != len(b[k]) {
			return false
		}
		for n := range v {
			if !b[k][n] {
				return false
			}
		}
	}
	return true
}

func (a model[K]) count() uint64 {
	var n uint64
	for _, v := range a {
		n += uint64(len(v))
	}
	return n
}

// checkNormalized fails if m breaks the ivMap invariants.
func checkNormalized[K comparable](t *testing.T, what string, m ivMap[K]) {
	t.Helper()
	for k, v := range m {
		if len(v) == 0 {
			t.Fatalf("%s: empty entry for %v", what, k)
		}
		for i, x := range v {
			if x.lo == 0 || x.lo > x.hi || (i > 0 && v[i-1].hi+1 >= x.lo) {
				t.Fatalf("%s: not normalized: %v", what, v)
			}
		}
	}
}

// setOps is the algebra both MySQLSet and MariaSet provide.
type setOps[S any] interface {
	Union(S) S
	Subtract(S) S
	Intersect(S) S
	Contains(S) bool
	Equal(S) bool
	IsEmpty() bool
	Count() uint64
	String() string
}

// checkAlgebra checks the set laws for a, b and c, and agreement with the
// brute-force model obtained through m.
func checkAlgebra[S setOps[S], K comparable](t *testing.T, a, b, c S, parse func(string) (S, error), m func(S) ivMap[K]) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("A=%q B=%q C=%q: %s", a, b, c, fmt.Sprintf(format, args...))
	}
	u, d, in := a.Union(b), a.Subtract(b), a.Intersect(b)
	for name, s := range map[string]S{"A∪B": u, "A−B": d, "A∩B": in} {
		checkNormalized(t, name, m(s))
	}
	// A ⊆ A∪B and B ⊆ A∪B.
	if !u.Contains(a) || !u.Contains(b) {
		fail("A∪B = %q does not contain A and B", u)
	}
	// Union is commutative; so is intersection.
	if !u.Equal(b.Union(a)) {
		fail("A∪B = %q, B∪A = %q", u, b.Union(a))
	}
	if !in.Equal(b.Intersect(a)) {
		fail("A∩B = %q, B∩A = %q", in, b.Intersect(a))
	}
	// (A−B) ∩ B = ∅.
	if x := d.Intersect(b); !x.IsEmpty() {
		fail("(A−B)∩B = %q", x)
	}
	// (A−B) ∪ B = A when B ⊆ A, for a random B and for B' = A∩C ⊆ A.
	if a.Contains(b) && !d.Union(b).Equal(a) {
		fail("B ⊆ A but (A−B)∪B = %q", d.Union(b))
	}
	sub := a.Intersect(c)
	if !a.Contains(sub) {
		fail("A∩C = %q not in A", sub)
	}
	if x := a.Subtract(sub).Union(sub); !x.Equal(a) {
		fail("(A−B')∪B' = %q with B' = A∩C = %q", x, sub)
	}
	// (A−B) ∪ (A∩B) = A.
	if x := d.Union(in); !x.Equal(a) {
		fail("(A−B)∪(A∩B) = %q", x)
	}
	// Contains agrees with subtraction.
	if a.Contains(b) != b.Subtract(a).IsEmpty() {
		fail("Contains(B) = %v but B−A = %q", a.Contains(b), b.Subtract(a))
	}
	// String round-trips and is a fixpoint.
	for _, s := range []S{a, b, u, d, in} {
		p, err := parse(s.String())
		if err != nil {
			fail("re-parse of %q: %v", s, err)
		}
		if !p.Equal(s) || p.String() != s.String() {
			fail("round trip of %q gave %q", s, p)
		}
	}
	// Agreement with the model.
	ma, mb := toModel(m(a)), toModel(m(b))
	for name, tc := range map[string]struct {
		got  S
		keep func(x, y bool) bool
	}{
		"union":     {u, func(x, y bool) bool { return x || y }},
		"subtract":  {d, func(x, y bool) bool { return x && !y }},
		"intersect": {in, func(x, y bool) bool { return x && y }},
	} {
		if want := ma.op(mb, tc.keep); !toModel(m(tc.got)).equal(want) {
			fail("%s = %q disagrees with the model", name, tc.got)
		}
	}
	if a.Count() != ma.count() {
		fail("Count(A) = %d, model %d", a.Count(), ma.count())
	}
	if want := ma.op(mb, func(x, y bool) bool { return y && !x }).count() == 0; a.Contains(b) != want {
		fail("Contains(B) = %v, model %v", a.Contains(b), want)
	}
	if want := ma.equal(mb); a.Equal(b) != want {
		fail("Equal = %v, model %v", a.Equal(b), want)
	}
}

func TestMySQLSetProperties(t *testing.T) {
	r := newRand(t)
	parse := func(text string) MySQLSet {
		s, err := ParseMySQLSet(text)
		if err != nil {
			t.Fatalf("generated set %q does not parse: %v", text, err)
		}
		return s
	}
	for range propIterations {
		a, b, c := parse(randMySQLText(r)), parse(randMySQLText(r)), parse(randMySQLText(r))
		checkAlgebra(t, a, b, c, ParseMySQLSet, func(s MySQLSet) ivMap[mysqlKey] { return s.m })
		if !ErrantMySQL(a, b).Equal(a.Subtract(b)) {
			t.Fatalf("ErrantMySQL(%q, %q) != A−B", a, b)
		}
		// The per-source comparison partitions the differences.
		var onlyA, onlyB MySQLSet
		for _, cmp := range CompareMySQLSets(a, b) {
			onlyA, onlyB = onlyA.Union(cmp.OnlyA), onlyB.Union(cmp.OnlyB)
		}
		if !onlyA.Equal(a.Subtract(b)) || !onlyB.Equal(b.Subtract(a)) {
			t.Fatalf("CompareMySQLSets(%q, %q) differences %q, %q", a, b, onlyA, onlyB)
		}
	}
}

func TestMariaSetProperties(t *testing.T) {
	r := newRand(t)
	parse := func(text string) MariaSet {
		s, err := ParseMariaSet(text)
		if err != nil {
			t.Fatalf("generated set %q does not parse: %v", text, err)
		}
		return s
	}
	for range propIterations {
		a, b, c := parse(randMariaSetText(r)), parse(randMariaSetText(r)), parse(randMariaSetText(r))
		checkAlgebra(t, a, b, c, ParseMariaSet, func(s MariaSet) ivMap[mariaKey] { return s.m })
		if !a.Last().Set().Contains(a) {
			t.Fatalf("%q.Last() = %q does not cover it", a, a.Last())
		}
	}
}

func TestMariaListProperties(t *testing.T) {
	r := newRand(t)
	for range propIterations {
		a, b, c := randMariaList(r), randMariaList(r), randMariaList(r)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("A=%v B=%v C=%v: %s", a, b, c, fmt.Sprintf(format, args...))
		}
		u := a.Union(b)
		if !slices.Equal(u, NewMariaList(u...)) {
			fail("A∪B = %v is not canonical", u)
		}
		if !u.Contains(a) || !u.Contains(b) {
			fail("A∪B = %v does not contain A and B", u)
		}
		if !u.Equal(b.Union(a)) {
			fail("A∪B = %v, B∪A = %v", u, b.Union(a))
		}
		// Round trip through text.
		for _, l := range []MariaList{a, b, u} {
			p, err := ParseMariaList(l.String())
			if err != nil || !p.Equal(l) || p.String() != l.String() {
				fail("round trip of %v gave %v, %v", l, p, err)
			}
		}
		// Set semantics: Contains, Union, Intersect and Subtract agree with MariaSet.
		as, bs := a.Set(), b.Set()
		if a.Contains(b) != as.Contains(bs) {
			fail("Contains = %v, Set().Contains = %v", a.Contains(b), as.Contains(bs))
		}
		if !u.Set().Equal(as.Union(bs)) {
			fail("(A∪B).Set() = %q, A.Set()∪B.Set() = %q", u.Set(), as.Union(bs))
		}
		if !a.Intersect(b).Set().Equal(as.Intersect(bs)) {
			fail("(A∩B).Set() = %q", a.Intersect(b).Set())
		}
		d := a.Subtract(b)
		if !d.Equal(as.Subtract(bs)) {
			fail("A−B = %q", d)
		}
		if x := d.Intersect(bs); !x.IsEmpty() {
			fail("(A−B)∩B = %q", x)
		}
		if a.Contains(b) && !d.Union(bs).Equal(as) {
			fail("B ⊆ A but (A−B)∪B = %q", d.Union(bs))
		}
		sub := a.Intersect(c)
		if !a.Contains(sub) || !a.Subtract(sub).Union(sub.Set()).Equal(as) {
			fail("B' = A∩C = %v: (A−B')∪B' = %q", sub, a.Subtract(sub).Union(sub.Set()))
		}
		// Errant entries are exactly the (domain, server) pairs of A−B.
		e := ErrantMariaDB(a, b)
		if !e.Set().Contains(d) || !slices.Equal(e, d.Last()) {
			fail("ErrantMariaDB = %v, A−B = %q", e, d)
		}
		if (len(e) > 0) == b.Contains(a) {
			fail("ErrantMariaDB = %v but B.Contains(A) = %v", e, b.Contains(a))
		}
	}
}
