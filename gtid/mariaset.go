package gtid

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// mariaKey is one MariaDB transaction source: a server in a domain.
type mariaKey struct{ domain, server uint32 }

// MariaSet is a set of MariaDB transactions: for each (domain, server) a
// set of sequence numbers (each at least 1) written by that server in that
// domain. It is the closed form of MariaList for set algebra: a MariaList
// entry (d, s, n) is the MariaSet of d-s sequence numbers 1..n
// (MariaList.Set), and the difference of two lists may be any range.
//
// The text form is comma-separated elements "domain-server:interval[:interval...]"
// with intervals "n" or "lo-hi", e.g. "0-1:1-100:150,0-2:101-150". The
// canonical form sorts elements by domain then server, one element per
// (domain, server), with merged intervals. When parsing, an element may also
// be a GTID "domain-server-n", meaning sequence numbers 1..n, so
// @@gtid_binlog_state text parses directly.
//
// The zero value is the empty set.
type MariaSet struct {
	m ivMap[mariaKey]
}

// ParseMariaSet parses the text form described at MariaSet. White space is
// accepted around commas, colons and interval dashes; the empty string is
// the empty set.
func ParseMariaSet(s string) (MariaSet, error) {
	sc := &scanner{what: "MariaDB GTID set", s: s}
	raw := map[mariaKey][]interval{}
	sc.skipSpace()
	if sc.eof() {
		return MariaSet{}, nil
	}
	for {
		if sc.peek() == ',' {
			return MariaSet{}, sc.errAt(sc.i, "empty element")
		}
		d, srv, err := sc.mariaDomainServer()
		if err != nil {
			return MariaSet{}, err
		}
		k := mariaKey{d, srv}
		switch sc.peek() {
		case '-':
			sc.i++
			n, err := sc.number("sequence number", math.MaxUint64)
			if err != nil {
				return MariaSet{}, err
			}
			if n > 0 {
				raw[k] = append(raw[k], interval{1, n})
			}
		default:
			sc.skipSpace()
			if sc.peek() != ':' {
				return MariaSet{}, sc.errAt(sc.i, "expected ':' and intervals or '-' and a sequence number after server ID")
			}
			for sc.peek() == ':' {
				sc.i++
				sc.skipSpace()
				iv, err := sc.interval(math.MaxUint64)
				if err != nil {
					return MariaSet{}, err
				}
				raw[k] = append(raw[k], iv)
				sc.skipSpace()
			}
		}
		sc.skipSpace()
		if sc.eof() {
			break
		}
		if sc.peek() != ',' {
			return MariaSet{}, sc.errAt(sc.i, "unexpected %s, expected ','", describe(sc.peek()))
		}
		sc.i++
		sc.skipSpace()
		if sc.eof() || sc.peek() == ',' {
			return MariaSet{}, sc.errAt(sc.i, "empty element")
		}
	}
	return MariaSet{m: build(raw)}, nil
}

func (s MariaSet) sortedKeys() []mariaKey {
	keys := make([]mariaKey, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b mariaKey) int {
		return cmp.Or(cmp.Compare(a.domain, b.domain), cmp.Compare(a.server, b.server))
	})
	return keys
}

// String formats the canonical text form, e.g. "0-1:1-100:150,0-2:101-150";
// the empty set is "".
func (s MariaSet) String() string {
	var b strings.Builder
	for i, k := range s.sortedKeys() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(uint64(k.domain), 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatUint(uint64(k.server), 10))
		s.m[k].appendTo(&b)
	}
	return b.String()
}

// MarshalText encodes the set as its String, for JSON output.
func (s MariaSet) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Equal reports whether s and o hold the same transactions.
func (s MariaSet) Equal(o MariaSet) bool { return s.m.equal(o.m) }

// IsEmpty reports whether s holds no transaction.
func (s MariaSet) IsEmpty() bool { return len(s.m) == 0 }

// Union returns s ∪ o.
func (s MariaSet) Union(o MariaSet) MariaSet { return MariaSet{m: s.m.union(o.m)} }

// Subtract returns s − o: the transactions in s and not in o.
func (s MariaSet) Subtract(o MariaSet) MariaSet { return MariaSet{m: s.m.subtract(o.m)} }

// Intersect returns s ∩ o.
func (s MariaSet) Intersect(o MariaSet) MariaSet { return MariaSet{m: s.m.intersect(o.m)} }

// Contains reports whether o ⊆ s.
func (s MariaSet) Contains(o MariaSet) bool { return s.m.contains(o.m) }

// Count returns the number of transactions in s, saturating at the largest
// uint64.
func (s MariaSet) Count() uint64 { return s.m.count() }

// Last returns, for each (domain, server) in s, the GTID with the highest
// sequence number: the binlog-state form of s. It loses any gaps:
// s.Last().Set() contains s, and equals it when every (domain, server)
// holds a prefix 1..n.
func (s MariaSet) Last() MariaList {
	var out MariaList
	for _, k := range s.sortedKeys() {
		out = append(out, MariaGTID{Domain: k.domain, Server: k.server, Seq: s.m[k].last()})
	}
	return out
}
