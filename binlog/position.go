package binlog

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/dbpilot/dbpilot/gtid"
)

// Flavors of servers and archives.
const (
	FlavorMariaDB = "mariadb"
	FlavorMySQL   = "mysql"
)

// position is a replication position: for MariaDB one GTID per domain (as
// gtid_slave_pos), for MySQL a GTID set (as gtid_executed).
type position struct {
	flavor string
	maria  map[uint32]gtid.MariaGTID
	mysql  gtid.MySQLSet
}

func newPosition(flavor string) position {
	return position{flavor: flavor, maria: map[uint32]gtid.MariaGTID{}}
}

// parsePosition reads a position in the flavor's text form. A MariaDB list
// with several servers in one domain (a gtid_binlog_state) keeps the
// highest sequence number of each domain.
func parsePosition(flavor, s string) (position, error) {
	p := newPosition(flavor)
	if flavor == FlavorMySQL {
		set, err := gtid.ParseMySQLSet(s)
		if err != nil {
			return p, err
		}
		p.mysql = set
		return p, nil
	}
	l, err := gtid.ParseMariaList(s)
	if err != nil {
		return p, err
	}
	for _, g := range gtid.HighestPerDomain(l) {
		p.maria[g.Domain] = g
	}
	return p, nil
}

func (p position) clone() position {
	q := p
	q.maria = maps.Clone(p.maria)
	return q
}

// String is the position in the server's text form, "" when empty.
func (p position) String() string {
	if p.flavor == FlavorMySQL {
		return p.mysql.String()
	}
	l := make([]gtid.MariaGTID, 0, len(p.maria))
	for _, g := range p.maria {
		l = append(l, g)
	}
	return gtid.NewMariaList(l...).String()
}

// covers reports whether p has reached o in every domain (MariaDB) or
// contains it (MySQL).
func (p position) covers(o position) bool {
	if p.flavor == FlavorMySQL {
		return p.mysql.Contains(o.mysql)
	}
	for d, g := range o.maria {
		if g.Seq == 0 {
			continue
		}
		if h, ok := p.maria[d]; !ok || h.Seq < g.Seq {
			return false
		}
	}
	return true
}

func (p position) equal(o position) bool {
	if p.flavor == FlavorMySQL {
		return p.mysql.Equal(o.mysql)
	}
	if len(p.maria) != len(o.maria) {
		return false
	}
	for d, g := range p.maria {
		if o.maria[d] != g {
			return false
		}
	}
	return true
}

// Gap is a break in GTID continuity: in Domain (MariaDB) or UUID (MySQL),
// the transaction after After is Next, where the next sequence number was
// expected.
type Gap struct {
	Domain string `json:"domain"` // MariaDB domain id, or MySQL source UUID
	After  string `json:"after"`  // last GTID before the break ("" if none)
	Next   string `json:"next"`   // first GTID after it ("" if none)
	// Missing is the range of sequence numbers not in the archive, e.g.
	// "11-20"; empty when the break goes backwards (Kind "out of order").
	Missing string `json:"missing,omitempty"`
	Kind    string `json:"kind"` // "gap", "duplicate", "out of order"
}

func (g Gap) String() string {
	switch g.Kind {
	case "gap":
		return fmt.Sprintf("domain %s: GTIDs %s missing between %s and %s", g.Domain, g.Missing, orNone(g.After), orNone(g.Next))
	default:
		return fmt.Sprintf("domain %s: %s %s after %s", g.Domain, g.Kind, orNone(g.Next), orNone(g.After))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// diff lists how `to` fails to continue `from`: per MariaDB domain, the
// sequence numbers between them. MySQL: the GTIDs of from missing in to.
func diff(from, to position) []Gap {
	var out []Gap
	if from.flavor == FlavorMySQL {
		if !to.mysql.Contains(from.mysql) || !from.mysql.Equal(to.mysql) {
			miss := to.mysql.Subtract(from.mysql)
			lost := from.mysql.Subtract(to.mysql)
			if !lost.IsEmpty() {
				out = append(out, Gap{Domain: "*", After: from.String(), Next: to.String(), Missing: lost.String(), Kind: "out of order"})
			}
			if !miss.IsEmpty() {
				out = append(out, Gap{Domain: "*", After: from.String(), Next: to.String(), Missing: miss.String(), Kind: "gap"})
			}
		}
		return out
	}
	domains := map[uint32]bool{}
	for d := range from.maria {
		domains[d] = true
	}
	for d := range to.maria {
		domains[d] = true
	}
	for _, d := range sortedKeys(domains) {
		a, aok := from.maria[d]
		b, bok := to.maria[d]
		switch {
		case aok && bok && a == b:
		case aok && bok && b.Seq > a.Seq:
			out = append(out, Gap{Domain: strconv.FormatUint(uint64(d), 10), After: a.String(), Next: b.String(),
				Missing: seqRange(a.Seq+1, b.Seq), Kind: "gap"})
		case !aok && bok:
			out = append(out, Gap{Domain: strconv.FormatUint(uint64(d), 10), Next: b.String(), Missing: seqRange(1, b.Seq), Kind: "gap"})
		default:
			g := Gap{Domain: strconv.FormatUint(uint64(d), 10), Kind: "out of order"}
			if aok {
				g.After = a.String()
			}
			if bok {
				g.Next = b.String()
			}
			out = append(out, g)
		}
	}
	return out
}

func seqRange(lo, hi uint64) string {
	if lo == hi {
		return strconv.FormatUint(lo, 10)
	}
	return strconv.FormatUint(lo, 10) + "-" + strconv.FormatUint(hi, 10)
}

func sortedKeys(m map[uint32]bool) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func mariaFromList(domain, server uint32, seq uint64) gtid.MariaGTID {
	return gtid.MariaGTID{Domain: domain, Server: server, Seq: seq}
}
