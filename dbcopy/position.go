package dbcopy

import (
	"fmt"

	"github.com/dbpilot/dbpilot/gtid"
)

// position is the GTID position applied on B: MariaDB, the last GTID of
// each domain (like gtid_binlog_pos); MySQL, a GTID set (gtid_executed).
type position struct {
	mariadb bool
	maria   map[uint32]gtid.MariaGTID
	my      gtid.MySQLSet
}

func parsePosition(mariadb bool, s string) (*position, error) {
	p := &position{mariadb: mariadb, maria: map[uint32]gtid.MariaGTID{}}
	if mariadb {
		l, err := gtid.ParseMariaList(s)
		if err != nil {
			return nil, fmt.Errorf("dbcopy: GTID position %q: %w", s, err)
		}
		for _, d := range l.Domains() {
			g, _ := l.DomainSeq(d)
			p.maria[d] = g
		}
		return p, nil
	}
	set, err := gtid.ParseMySQLSet(s)
	if err != nil {
		return nil, fmt.Errorf("dbcopy: GTID set %q: %w", s, err)
	}
	p.my = set
	return p, nil
}

// add records one applied transaction's GTID.
func (p *position) add(g string) error {
	if p.mariadb {
		m, err := gtid.ParseMariaGTID(g)
		if err != nil {
			return fmt.Errorf("dbcopy: GTID %q: %w", g, err)
		}
		p.maria[m.Domain] = m
		return nil
	}
	s, err := gtid.ParseMySQLSet(g)
	if err != nil {
		return fmt.Errorf("dbcopy: GTID %q: %w", g, err)
	}
	p.my = p.my.Union(s)
	return nil
}

func (p *position) String() string {
	if p.mariadb {
		l := make([]gtid.MariaGTID, 0, len(p.maria))
		for _, g := range p.maria {
			l = append(l, g)
		}
		return gtid.NewMariaList(l...).String()
	}
	return p.my.String()
}

// reached reports whether every transaction of the source position final
// is applied: MariaDB, in each of final's domains the sequence number is
// at least final's; MySQL, the set contains final.
func (p *position) reached(final string) (bool, error) {
	if p.mariadb {
		l, err := gtid.ParseMariaList(final)
		if err != nil {
			return false, fmt.Errorf("dbcopy: GTID position %q: %w", final, err)
		}
		for _, d := range l.Domains() {
			g, _ := l.DomainSeq(d)
			if p.maria[d].Seq < g.Seq {
				return false, nil
			}
		}
		return true, nil
	}
	s, err := gtid.ParseMySQLSet(final)
	if err != nil {
		return false, fmt.Errorf("dbcopy: GTID set %q: %w", final, err)
	}
	return p.my.Contains(s), nil
}
