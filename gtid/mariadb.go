package gtid

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// MariaGTID is one MariaDB global transaction ID: the transaction with
// sequence number Seq, written by server Server in replication domain
// Domain. Its text form is "domain-server-seq", e.g. "0-1-100".
type MariaGTID struct {
	Domain, Server uint32
	Seq            uint64
}

// String formats g as "domain-server-seq".
func (g MariaGTID) String() string {
	return string(g.appendTo(nil))
}

func (g MariaGTID) appendTo(b []byte) []byte {
	b = strconv.AppendUint(b, uint64(g.Domain), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(g.Server), 10)
	b = append(b, '-')
	return strconv.AppendUint(b, g.Seq, 10)
}

// ParseMariaGTID parses "domain-server-seq". Domain and server are unsigned
// 32-bit numbers, seq an unsigned 64-bit number; leading zeros and white
// space around the GTID are accepted.
func ParseMariaGTID(s string) (MariaGTID, error) {
	sc := &scanner{what: "MariaDB GTID", s: s}
	sc.skipSpace()
	if sc.eof() {
		return MariaGTID{}, sc.errAt(sc.i, "empty GTID")
	}
	g, err := sc.mariaGTID()
	if err != nil {
		return MariaGTID{}, err
	}
	sc.skipSpace()
	if !sc.eof() {
		return MariaGTID{}, sc.errAt(sc.i, "unexpected %s after sequence number", describe(sc.peek()))
	}
	return g, nil
}

// mariaDomainServer reads "domain-server".
func (sc *scanner) mariaDomainServer() (domain, server uint32, err error) {
	d, err := sc.number("domain ID", math.MaxUint32)
	if err != nil {
		return 0, 0, err
	}
	if sc.peek() != '-' || sc.eof() {
		return 0, 0, sc.errAt(sc.i, "expected '-' after domain ID")
	}
	sc.i++
	s, err := sc.number("server ID", math.MaxUint32)
	if err != nil {
		return 0, 0, err
	}
	return uint32(d), uint32(s), nil
}

// mariaGTID reads "domain-server-seq".
func (sc *scanner) mariaGTID() (MariaGTID, error) {
	d, s, err := sc.mariaDomainServer()
	if err != nil {
		return MariaGTID{}, err
	}
	if sc.peek() != '-' || sc.eof() {
		return MariaGTID{}, sc.errAt(sc.i, "expected '-' after server ID")
	}
	sc.i++
	n, err := sc.number("sequence number", math.MaxUint64)
	if err != nil {
		return MariaGTID{}, err
	}
	return MariaGTID{Domain: d, Server: s, Seq: n}, nil
}

// MariaList is a list of MariaDB GTIDs such as @@gtid_binlog_pos,
// @@gtid_slave_pos, @@gtid_current_pos (one GTID per domain) or
// @@gtid_binlog_state (one GTID per domain and server: the last one that
// server wrote in that domain).
//
// The canonical form, produced by ParseMariaList, NewMariaList and every
// method returning a MariaList, is sorted by Domain then Server with one
// entry per (Domain, Server). Methods accept non-canonical lists too and
// read them as NewMariaList would.
//
// For Contains, Subtract, Intersect, Set and ErrantMariaDB an entry
// (d, s, n) stands for the sequence numbers 1..n written by server s in
// domain d, so an entry with sequence number 0 stands for no transaction.
type MariaList []MariaGTID

// NewMariaList returns the canonical list of gtids: sorted by domain then
// server, keeping the highest sequence number of each (domain, server).
func NewMariaList(gtids ...MariaGTID) MariaList {
	if len(gtids) == 0 {
		return nil
	}
	l := slices.Clone(gtids)
	slices.SortFunc(l, func(a, b MariaGTID) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Server, b.Server), cmp.Compare(b.Seq, a.Seq))
	})
	// Highest seq comes first within each (domain, server).
	return slices.CompactFunc(l, func(a, b MariaGTID) bool {
		return a.Domain == b.Domain && a.Server == b.Server
	})
}

// canonical returns l if it is canonical, else its canonical copy.
func (l MariaList) canonical() MariaList {
	for i := 1; i < len(l); i++ {
		a, b := l[i-1], l[i]
		if a.Domain > b.Domain || (a.Domain == b.Domain && a.Server >= b.Server) {
			return NewMariaList(l...)
		}
	}
	return l
}

// ParseMariaList parses a comma-separated list of GTIDs as printed by
// MariaDB. White space (including newlines) around commas and around the
// list is accepted; the empty string is the empty list. Duplicates of the
// same (domain, server) keep the highest sequence number. Empty elements,
// such as in "0-1-1,,1-1-2" or a trailing comma, are rejected.
func ParseMariaList(s string) (MariaList, error) {
	sc := &scanner{what: "MariaDB GTID list", s: s}
	sc.skipSpace()
	if sc.eof() {
		return nil, nil
	}
	var gtids []MariaGTID
	for {
		if sc.peek() == ',' {
			return nil, sc.errAt(sc.i, "empty element")
		}
		g, err := sc.mariaGTID()
		if err != nil {
			return nil, err
		}
		gtids = append(gtids, g)
		sc.skipSpace()
		if sc.eof() {
			break
		}
		if sc.peek() != ',' {
			return nil, sc.errAt(sc.i, "unexpected %s after sequence number, expected ','", describe(sc.peek()))
		}
		sc.i++
		sc.skipSpace()
		if sc.eof() || sc.peek() == ',' {
			return nil, sc.errAt(sc.i, "empty element")
		}
	}
	return NewMariaList(gtids...), nil
}

// String formats the canonical list, e.g. "0-1-100,1-2-5"; the empty list
// is "".
func (l MariaList) String() string {
	l = l.canonical()
	var b []byte
	for i, g := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = g.appendTo(b)
	}
	return string(b)
}

// Equal reports whether l and o have the same canonical form.
func (l MariaList) Equal(o MariaList) bool {
	return slices.Equal(l.canonical(), o.canonical())
}

// Domains returns the domains present in l, in increasing order.
func (l MariaList) Domains() []uint32 {
	var ds []uint32
	for _, g := range l.canonical() {
		if len(ds) == 0 || ds[len(ds)-1] != g.Domain {
			ds = append(ds, g.Domain)
		}
	}
	return ds
}

// HighestPerDomain returns, for each domain present in any of lists, the
// GTID with the highest sequence number (per DomainSeq within one list); on
// a tie between lists the one of the earlier list wins. It merges positions
// such as gtid_binlog_pos and gtid_slave_pos, or Gtid_IO_Pos and
// gtid_current_pos: everything a server wrote or received, one GTID a
// domain.
func HighestPerDomain(lists ...MariaList) MariaList {
	best := map[uint32]MariaGTID{}
	for _, l := range lists {
		for _, d := range l.Domains() {
			g, _ := l.DomainSeq(d)
			if b, ok := best[d]; !ok || g.Seq > b.Seq {
				best[d] = g
			}
		}
	}
	out := make([]MariaGTID, 0, len(best))
	for _, g := range best {
		out = append(out, g)
	}
	return NewMariaList(out...)
}

// DomainSeq returns the entry with the highest sequence number in domain:
// the position of a binlog state in that domain. Among entries with the
// same sequence number the one with the lowest server ID is returned.
// It reports false when l has no entry in domain.
func (l MariaList) DomainSeq(domain uint32) (MariaGTID, bool) {
	var best MariaGTID
	found := false
	for _, g := range l.canonical() {
		if g.Domain == domain && (!found || g.Seq > best.Seq) {
			best, found = g, true
		}
	}
	return best, found
}

// lookup returns the sequence number of (domain, server) in canonical l.
func (l MariaList) lookup(domain, server uint32) (uint64, bool) {
	i, ok := slices.BinarySearchFunc(l, MariaGTID{Domain: domain, Server: server}, func(a, b MariaGTID) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Server, b.Server))
	})
	if !ok {
		return 0, false
	}
	return l[i].Seq, true
}

// Union returns, for each (domain, server) in l or o, the entry with the
// higher sequence number.
func (l MariaList) Union(o MariaList) MariaList {
	all := make([]MariaGTID, 0, len(l)+len(o))
	all = append(all, l...)
	all = append(all, o...)
	return NewMariaList(all...)
}

// Contains reports whether l covers every entry (d, s, n) of o: l has an
// entry (d, s, n') with n' >= n. Entries of o with sequence number 0 stand
// for no transaction and are always covered. Equivalently,
// l.Set().Contains(o.Set()).
func (l MariaList) Contains(o MariaList) bool {
	l = l.canonical()
	for _, g := range o {
		if g.Seq == 0 {
			continue
		}
		if n, ok := l.lookup(g.Domain, g.Server); !ok || n < g.Seq {
			return false
		}
	}
	return true
}

// Intersect returns, for each (domain, server) present in both l and o, the
// entry with the lower sequence number: the sequence numbers 1..min(n, n')
// that both lists cover. Entries whose result would be sequence number 0
// are omitted. l.Intersect(o).Set() equals l.Set().Intersect(o.Set()).
func (l MariaList) Intersect(o MariaList) MariaList {
	o = o.canonical()
	var out MariaList
	for _, g := range l.canonical() {
		if n, ok := o.lookup(g.Domain, g.Server); ok {
			if g.Seq = min(g.Seq, n); g.Seq > 0 {
				out = append(out, g)
			}
		}
	}
	return out
}

// Subtract returns the transactions covered by l but not by o, reading an
// entry (d, s, n) as the sequence numbers 1..n of server s in domain d:
// for (d, s, n) in l and (d, s, m) in o with m < n the result holds m+1..n.
// The result is a MariaSet because it is in general not a prefix 1..n.
// It equals l.Set().Subtract(o.Set()).
func (l MariaList) Subtract(o MariaList) MariaSet {
	return l.Set().Subtract(o.Set())
}

// Set returns the transactions l covers: for each entry (d, s, n) the
// sequence numbers 1..n of server s in domain d.
func (l MariaList) Set() MariaSet {
	m := make(ivMap[mariaKey], len(l))
	for _, g := range l {
		if g.Seq == 0 {
			continue
		}
		k := mariaKey{g.Domain, g.Server}
		m[k] = m[k].union(ivs{{1, g.Seq}})
	}
	return MariaSet{m: m}
}

// DomainComparison compares two MariaDB positions in one domain. A and B
// are the DomainSeq of each side; HasA and HasB report whether that side
// has the domain at all.
type DomainComparison struct {
	Domain     uint32
	A, B       MariaGTID
	HasA, HasB bool
	Order      Order
}

// String formats the comparison, e.g. "domain 0: 0-1-5 behind 0-1-7".
func (c DomainComparison) String() string {
	side := func(g MariaGTID, ok bool) string {
		if !ok {
			return "none"
		}
		return g.String()
	}
	return fmt.Sprintf("domain %d: %s %s %s", c.Domain, side(c.A, c.HasA), c.Order, side(c.B, c.HasB))
}

// CompareMariaPositions compares positions a and b domain by domain, using
// DomainSeq of each side, and returns one comparison per domain present in
// either, sorted by domain. In a domain present on both sides: a lower
// sequence number in a is OrderBehind, a higher one OrderAhead, the same
// GTID OrderEqual, and the same sequence number from different servers
// (different transactions) OrderDiverged. A domain on one side only is
// OrderOnlyA or OrderOnlyB.
//
// Positions alone cannot show that a lower position is not a prefix of the
// higher one (transactions written on a replica); use ErrantMariaDB on the
// binlog states for that.
func CompareMariaPositions(a, b MariaList) []DomainComparison {
	domains := append(a.Domains(), b.Domains()...)
	slices.Sort(domains)
	domains = slices.Compact(domains)
	out := make([]DomainComparison, 0, len(domains))
	for _, d := range domains {
		c := DomainComparison{Domain: d}
		c.A, c.HasA = a.DomainSeq(d)
		c.B, c.HasB = b.DomainSeq(d)
		switch {
		case !c.HasB:
			c.Order = OrderOnlyA
		case !c.HasA:
			c.Order = OrderOnlyB
		case c.A.Seq < c.B.Seq:
			c.Order = OrderBehind
		case c.A.Seq > c.B.Seq:
			c.Order = OrderAhead
		case c.A.Server == c.B.Server:
			c.Order = OrderEqual
		default:
			c.Order = OrderDiverged
		}
		out = append(out, c)
	}
	return out
}

// ErrantMariaDB compares two @@gtid_binlog_state lists and returns the
// entries of the replica that the source lacks: every (d, s, n) of
// replicaBinlogState, n > 0, for which sourceBinlogState has no (d, s, n')
// with n' >= n. These are transactions written on the replica (or on a
// server the source never replicated from). To see which sequence numbers
// exactly, use replicaBinlogState.Subtract(sourceBinlogState).
func ErrantMariaDB(replicaBinlogState, sourceBinlogState MariaList) MariaList {
	src := sourceBinlogState.canonical()
	var out MariaList
	for _, g := range replicaBinlogState.canonical() {
		if g.Seq == 0 {
			continue
		}
		if n, ok := src.lookup(g.Domain, g.Server); !ok || n < g.Seq {
			out = append(out, g)
		}
	}
	return out
}

// ErrantMariaDBStrings is ErrantMariaDB for callers holding the text of
// @@gtid_binlog_state of both servers. It returns the canonical text of the
// errant list ("" when there is none).
func ErrantMariaDBStrings(replicaState, sourceState string) (string, error) {
	r, err := ParseMariaList(replicaState)
	if err != nil {
		return "", fmt.Errorf("replica binlog state: %w", err)
	}
	s, err := ParseMariaList(sourceState)
	if err != nil {
		return "", fmt.Errorf("source binlog state: %w", err)
	}
	return ErrantMariaDB(r, s).String(), nil
}
