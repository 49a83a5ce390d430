package gtid

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// MaxMySQLGNO is the highest transaction number MySQL accepts in a GTID.
const MaxMySQLGNO = math.MaxInt64 - 1

// maxTagLen is the longest GTID tag MySQL accepts.
const maxTagLen = 32

// mysqlKey is one MySQL transaction source: a server uuid (lower case,
// 8-4-4-4-12) and a tag ("" for untagged GTIDs).
type mysqlKey struct{ uuid, tag string }

// MySQLSet is a MySQL GTID set such as @@gtid_executed or @@gtid_purged:
// for each source uuid and tag, a set of transaction numbers. The zero value
// is the empty set.
type MySQLSet struct {
	m ivMap[mysqlKey]
}

// ParseMySQLSet parses a GTID set as printed or accepted by MySQL:
// comma-separated elements "uuid:interval[:interval...]" with intervals "n"
// or "lo-hi" (1 <= lo <= hi), and since MySQL 8.3 tags: "uuid:tag:interval..."
// where a tag ([a-z_][a-z0-9_]{0,31}, case-insensitive) applies to the
// intervals after it, e.g. "uuid:1-5:tag1:1-3:tag2:7". A uuid may appear in
// several elements. White space (including the newlines MySQL prints after
// commas) is accepted around commas, colons and interval dashes; the empty
// string is the empty set. Uuids must be 8-4-4-4-12 hex digits; empty
// elements and a uuid or tag without intervals are rejected.
func ParseMySQLSet(s string) (MySQLSet, error) {
	sc := &scanner{what: "MySQL GTID set", s: s}
	raw := map[mysqlKey][]interval{}
	sc.skipSpace()
	if sc.eof() {
		return MySQLSet{}, nil
	}
	for {
		if sc.peek() == ',' {
			return MySQLSet{}, sc.errAt(sc.i, "empty element")
		}
		uuid, err := sc.uuid()
		if err != nil {
			return MySQLSet{}, err
		}
		sc.skipSpace()
		if sc.peek() != ':' {
			if sc.eof() || sc.peek() == ',' {
				return MySQLSet{}, sc.errAt(sc.i, "no intervals after UUID")
			}
			return MySQLSet{}, sc.errAt(sc.i, "unexpected %s after UUID, expected ':'", describe(sc.peek()))
		}
		k := mysqlKey{uuid: uuid}
		tagPos, tagEmpty := 0, false // tagEmpty: the current tag has no interval yet
		for sc.peek() == ':' {
			sc.i++
			sc.skipSpace()
			c := sc.peek()
			switch {
			case isDigit(c) || c == '-':
				iv, err := sc.interval(MaxMySQLGNO)
				if err != nil {
					return MySQLSet{}, err
				}
				raw[k] = append(raw[k], iv)
				tagEmpty = false
			case isTagStart(c):
				if tagEmpty {
					return MySQLSet{}, sc.errAt(tagPos, "tag %q has no intervals", k.tag)
				}
				tagPos = sc.i
				if k.tag, err = sc.tag(); err != nil {
					return MySQLSet{}, err
				}
				tagEmpty = true
			case sc.eof() || c == ',' || c == ':':
				return MySQLSet{}, sc.errAt(sc.i, "missing interval or tag after ':'")
			default:
				return MySQLSet{}, sc.errAt(sc.i, "unexpected %s, expected an interval or a tag", describe(c))
			}
			sc.skipSpace()
		}
		if tagEmpty {
			return MySQLSet{}, sc.errAt(tagPos, "tag %q has no intervals", k.tag)
		}
		if sc.eof() {
			break
		}
		if sc.peek() != ',' {
			return MySQLSet{}, sc.errAt(sc.i, "unexpected %s, expected ',' or ':'", describe(sc.peek()))
		}
		sc.i++
		sc.skipSpace()
		if sc.eof() || sc.peek() == ',' {
			return MySQLSet{}, sc.errAt(sc.i, "empty element")
		}
	}
	return MySQLSet{m: build(raw)}, nil
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func isTagStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isTagChar(c byte) bool { return isTagStart(c) || isDigit(c) }

// uuid reads a uuid in 8-4-4-4-12 hex form and returns it in lower case.
func (sc *scanner) uuid() (string, error) {
	const layout = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
	start := sc.i
	for j := 0; j < len(layout); j++ {
		p := start + j
		if p >= len(sc.s) {
			return "", sc.errAt(p, "UUID is truncated, expected 8-4-4-4-12 hex digits")
		}
		c := sc.s[p]
		if layout[j] == '-' {
			if c != '-' {
				return "", sc.errAt(p, "invalid UUID: expected '-' but found %s (8-4-4-4-12 hex digits)", describe(c))
			}
		} else if !isHex(c) {
			return "", sc.errAt(p, "invalid UUID: %s is not a hex digit (8-4-4-4-12 hex digits)", describe(c))
		}
	}
	sc.i = start + len(layout)
	if !sc.eof() && (isHex(sc.peek()) || sc.peek() == '-') {
		return "", sc.errAt(sc.i, "invalid UUID: too long, expected 8-4-4-4-12 hex digits")
	}
	return strings.ToLower(sc.s[start:sc.i]), nil
}

// tag reads a tag and returns it in lower case.
func (sc *scanner) tag() (string, error) {
	start := sc.i
	for !sc.eof() && isTagChar(sc.peek()) {
		sc.i++
	}
	if !sc.eof() && !isSpace(sc.peek()) && sc.peek() != ':' && sc.peek() != ',' {
		return "", sc.errAt(sc.i, "invalid character %s in tag (tags are [a-z_][a-z0-9_]{0,31})", describe(sc.peek()))
	}
	if sc.i-start > maxTagLen {
		return "", sc.errAt(start, "tag is longer than %d characters", maxTagLen)
	}
	return strings.ToLower(sc.s[start:sc.i]), nil
}

// compareKeys orders keys by uuid, then tag with untagged first.
func compareKeys(a, b mysqlKey) int {
	return cmp.Or(strings.Compare(a.uuid, b.uuid), strings.Compare(a.tag, b.tag))
}

func (s MySQLSet) sortedKeys() []mysqlKey {
	keys := make([]mysqlKey, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

// String formats the set canonically, as MySQL 8.4 does but without
// newlines: uuids in lower case and sorted, for each uuid the untagged
// intervals first and then the tags sorted, intervals merged, elements
// separated by ",". E.g.
// "2174b383-5441-11e8-b90a-c80aa9429562:1-5:bulk:1-3,3e11fa47-71ca-11e1-9e33-c80aa9429562:1-18".
// The empty set is "".
func (s MySQLSet) String() string {
	var b strings.Builder
	prev := ""
	for _, k := range s.sortedKeys() {
		if k.uuid != prev {
			if prev != "" {
				b.WriteByte(',')
			}
			b.WriteString(k.uuid)
			prev = k.uuid
		}
		if k.tag != "" {
			b.WriteByte(':')
			b.WriteString(k.tag)
		}
		s.m[k].appendTo(&b)
	}
	return b.String()
}

// MarshalText encodes the set as its String, for JSON output.
func (s MySQLSet) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Equal reports whether s and o hold the same transactions.
func (s MySQLSet) Equal(o MySQLSet) bool { return s.m.equal(o.m) }

// IsEmpty reports whether s holds no transaction.
func (s MySQLSet) IsEmpty() bool { return len(s.m) == 0 }

// Union returns s ∪ o.
func (s MySQLSet) Union(o MySQLSet) MySQLSet { return MySQLSet{m: s.m.union(o.m)} }

// Subtract returns s − o: the transactions in s and not in o.
func (s MySQLSet) Subtract(o MySQLSet) MySQLSet { return MySQLSet{m: s.m.subtract(o.m)} }

// Intersect returns s ∩ o.
func (s MySQLSet) Intersect(o MySQLSet) MySQLSet { return MySQLSet{m: s.m.intersect(o.m)} }

// Contains reports whether o ⊆ s.
func (s MySQLSet) Contains(o MySQLSet) bool { return s.m.contains(o.m) }

// Count returns the number of transactions in s, saturating at the largest
// uint64.
func (s MySQLSet) Count() uint64 { return s.m.count() }

// ErrantMySQL returns the transactions the replica executed that the source
// did not: replicaExecuted − sourceExecuted, both @@gtid_executed.
func ErrantMySQL(replicaExecuted, sourceExecuted MySQLSet) MySQLSet {
	return replicaExecuted.Subtract(sourceExecuted)
}

// ErrantMySQLStrings is ErrantMySQL for callers holding the text of
// @@gtid_executed of both servers. It returns the canonical text of the
// errant set ("" when there is none).
func ErrantMySQLStrings(replicaExecuted, sourceExecuted string) (string, error) {
	r, err := ParseMySQLSet(replicaExecuted)
	if err != nil {
		return "", fmt.Errorf("replica gtid_executed: %w", err)
	}
	s, err := ParseMySQLSet(sourceExecuted)
	if err != nil {
		return "", fmt.Errorf("source gtid_executed: %w", err)
	}
	return ErrantMySQL(r, s).String(), nil
}

// UUIDComparison compares two GTID sets for one source uuid and tag (Tag is
// "" for untagged GTIDs). OnlyA holds the transactions of that source in A
// and not in B, OnlyB those in B and not in A.
type UUIDComparison struct {
	UUID, Tag    string
	Order        Order
	OnlyA, OnlyB MySQLSet
}

// CompareMySQLSets compares a and b source by source and returns one
// comparison per (uuid, tag) present in either, sorted by uuid, then tag
// with untagged first. For a source present in both: OrderEqual when they
// hold the same transactions, OrderBehind when a's are a strict subset of
// b's, OrderAhead when a strict superset, OrderDiverged when each has
// transactions the other lacks. A source in one set only is OrderOnlyA or
// OrderOnlyB.
func CompareMySQLSets(a, b MySQLSet) []UUIDComparison {
	keys := append(a.sortedKeys(), b.sortedKeys()...)
	slices.SortFunc(keys, compareKeys)
	keys = slices.Compact(keys)
	out := make([]UUIDComparison, 0, len(keys))
	for _, k := range keys {
		ai, bi := a.m[k], b.m[k]
		onlyA, onlyB := ai.subtract(bi), bi.subtract(ai)
		c := UUIDComparison{UUID: k.uuid, Tag: k.tag, OnlyA: single(k, onlyA), OnlyB: single(k, onlyB)}
		switch {
		case len(bi) == 0:
			c.Order = OrderOnlyA
		case len(ai) == 0:
			c.Order = OrderOnlyB
		case len(onlyA) == 0 && len(onlyB) == 0:
			c.Order = OrderEqual
		case len(onlyA) == 0:
			c.Order = OrderBehind
		case len(onlyB) == 0:
			c.Order = OrderAhead
		default:
			c.Order = OrderDiverged
		}
		out = append(out, c)
	}
	return out
}

// single returns the set holding iv for source k only.
func single(k mysqlKey, iv ivs) MySQLSet {
	if len(iv) == 0 {
		return MySQLSet{}
	}
	return MySQLSet{m: ivMap[mysqlKey]{k: iv}}
}
