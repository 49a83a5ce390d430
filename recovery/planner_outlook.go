package recovery

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// outlook is what promoting one candidate takes.
type outlook struct {
	steps []CatchUp
	// complete: the candidate received every transaction any known replica
	// received; fetchable: it can get what it lacks from replicas that can
	// serve it.
	complete, fetchable bool
	// ahead counts the MariaDB domains where it holds the most, of domains.
	ahead, domains int
	// missing counts the transactions it lacks before catch-up.
	missing uint64
	// short describes what cannot be fetched; shortBy names the replicas
	// holding it.
	short   []string
	shortBy []dbpilot.InstanceKey
	// lacks describes what it lacks before catch-up, one phrase per domain
	// (MariaDB) or one set (MySQL).
	lacks []string

	final, finalHist gtid.MariaList // MariaDB, after catch-up
	finalSet         gtid.MySQLSet  // MySQL, after catch-up
}

func (o *outlook) holder(k dbpilot.InstanceKey) {
	if !slices.Contains(o.shortBy, k) {
		o.shortBy = append(o.shortBy, k)
	}
}

// servable reports whether s can serve transactions it received in domain d
// (MariaDB; d is ignored on MySQL) to a candidate, or why not.
func (s *member) servable(d uint32) (bool, string) {
	switch {
	case !s.known:
		return false, "unreachable"
	case !s.inst.LogBin:
		return false, "log_bin=OFF"
	case !s.inst.LogReplicaUpdates:
		return false, "log_slave_updates=OFF"
	case s.mysql() && !s.errantSet.IsEmpty():
		return false, "holds errant transactions"
	case !s.mysql() && s.errantIn[d]:
		return false, fmt.Sprintf("holds errant transactions in domain %d", d)
	case !s.mysql() && s.diverged[d] != "":
		return false, fmt.Sprintf("diverged in domain %d", d)
	}
	return true, ""
}

// mariaOutlook plans the catch-up of candidate c (MariaDB).
func mariaOutlook(c *member, ms []*member) outlook {
	top, domains := mariaTop(ms)
	o := outlook{domains: len(domains), complete: true, fetchable: true}
	var missing []uint32
	for _, d := range domains {
		t := top[d]
		cp, ok := c.recv.DomainSeq(d)
		if ok && cp.Seq >= t.Seq {
			o.ahead++
			continue
		}
		o.complete = false
		missing = append(missing, d)
		var holders []string
		for _, m := range ms {
			if g, ok := m.recv.DomainSeq(d); m != c && m.known && m.diverged[d] == "" && ok && g == t {
				holders = append(holders, m.key.String())
			}
		}
		if ok {
			o.missing += t.Seq - cp.Seq
			o.lacks = append(o.lacks, fmt.Sprintf("behind in domain %d: has %s; %s %s", d, cp, haveHas(holders), t))
		} else {
			o.missing += t.Seq
			o.lacks = append(o.lacks, fmt.Sprintf("has nothing in domain %d; %s %s", d, haveHas(holders), t))
		}
	}
	// Sources: replicas at the top of a missing domain that can serve it
	// and hold the candidate's own position there. Take the one serving
	// the most missing domains first, then the one with the smaller relay
	// backlog (it applies its relay log before it can serve), then by key.
	serves := func(s *member, d uint32) bool {
		g, ok := s.recv.DomainSeq(d)
		if s == c || !ok || g != top[d] {
			return false
		}
		if ok, _ := s.servable(d); !ok {
			return false
		}
		cp, has := c.recv.DomainSeq(d)
		return !has || holds(s.hist, cp)
	}
	o.final, o.finalHist = c.recv, c.hist
	left := missing
	for len(left) > 0 {
		var best *member
		var bestDomains []uint32
		for _, s := range ms {
			var ds []uint32
			for _, d := range left {
				if serves(s, d) {
					ds = append(ds, d)
				}
			}
			if len(ds) == 0 {
				continue
			}
			if best == nil || len(ds) > len(bestDomains) || (len(ds) == len(bestDomains) && s.backlog < best.backlog) {
				best, bestDomains = s, ds
			}
		}
		if best == nil {
			break
		}
		var until []gtid.MariaGTID
		for _, d := range bestDomains {
			until = append(until, top[d])
			o.final = replaceDomain(o.final, top[d])
			for _, h := range best.hist {
				if h.Domain == d {
					o.finalHist = o.finalHist.Union(gtid.MariaList{h})
				}
			}
		}
		o.steps = append(o.steps, CatchUp{From: best.key, Domains: bestDomains, Until: gtid.NewMariaList(until...).String()})
		left = slices.DeleteFunc(left, func(d uint32) bool { return slices.Contains(bestDomains, d) })
	}
	for _, d := range left {
		o.fetchable = false
		cp, has := c.recv.DomainSeq(d)
		have := "nothing"
		if has {
			have = cp.String()
		}
		var holders []string
		for _, m := range ms {
			g, ok := m.recv.DomainSeq(d)
			if m == c || !m.known || !ok || (has && g.Seq <= cp.Seq) || m.diverged[d] != "" {
				continue
			}
			why := "cannot serve it"
			if ok, r := m.servable(d); !ok {
				why = r
			} else if g != top[d] {
				why = "has only " + g.String()
			} else if has && !holds(m.hist, cp) {
				why = "does not hold " + cp.String()
			}
			holders = append(holders, fmt.Sprintf("%s has %s (%s)", m.key, g, why))
			o.holder(m.key)
		}
		o.short = append(o.short, fmt.Sprintf("domain %d after %s: %s", d, have, strings.Join(holders, ", ")))
	}
	return o
}

// mariaTop returns the highest transaction any known replica received in
// each GTID domain (diverged domains aside), and the domains, sorted.
func mariaTop(ms []*member) (map[uint32]gtid.MariaGTID, []uint32) {
	top := map[uint32]gtid.MariaGTID{}
	var domains []uint32
	for _, m := range ms {
		if !m.known {
			continue
		}
		for _, g := range m.recv {
			if m.diverged[g.Domain] != "" {
				continue
			}
			t, ok := top[g.Domain]
			if !ok {
				domains = append(domains, g.Domain)
			}
			if !ok || g.Seq > t.Seq || (g.Seq == t.Seq && g.Server < t.Server) {
				top[g.Domain] = g
			}
		}
	}
	slices.Sort(domains)
	return top, domains
}

// haveHas joins keys into "a has", "a and b have", "a, b and c have".
func haveHas(keys []string) string {
	switch len(keys) {
	case 0:
		return "nobody has"
	case 1:
		return keys[0] + " has"
	}
	return strings.Join(keys[:len(keys)-1], ", ") + " and " + keys[len(keys)-1] + " have"
}

// replaceDomain returns l with its entry of g's domain replaced by g.
func replaceDomain(l gtid.MariaList, g gtid.MariaGTID) gtid.MariaList {
	out := slices.DeleteFunc(slices.Clone(l), func(x gtid.MariaGTID) bool { return x.Domain == g.Domain })
	return gtid.NewMariaList(append(out, g)...)
}

// mysqlOutlook plans the catch-up of candidate c (MySQL). Auto-positioning
// fetches exactly what c lacks from the source, so a step is one source; the
// source holding the most of what is missing comes first.
func mysqlOutlook(c *member, ms []*member) outlook {
	var all gtid.MySQLSet
	for _, m := range ms {
		if m.known {
			all = all.Union(m.recvSet)
		}
	}
	missing := all.Subtract(c.recvSet)
	o := outlook{complete: missing.IsEmpty(), fetchable: true, missing: missing.Count()}
	if !missing.IsEmpty() {
		var holders []string
		for _, m := range ms {
			if m != c && m.known && !m.recvSet.Intersect(missing).IsEmpty() {
				holders = append(holders, m.key.String())
			}
		}
		o.lacks = append(o.lacks, fmt.Sprintf("lacks %s (on %s)", missing, strings.Join(holders, ", ")))
	}
	have := c.recvSet
	for !missing.IsEmpty() {
		var best *member
		var gain uint64
		for _, s := range ms {
			if s == c {
				continue
			}
			if ok, _ := s.servable(0); !ok || !s.purged.Intersect(s.recvSet.Subtract(have)).IsEmpty() {
				continue
			}
			n := missing.Intersect(s.recvSet).Count()
			if n > 0 && (best == nil || n > gain || (n == gain && s.backlog < best.backlog)) {
				best, gain = s, n
			}
		}
		if best == nil {
			break
		}
		o.steps = append(o.steps, CatchUp{From: best.key, Until: best.recvSet.String()})
		have = have.Union(best.recvSet)
		missing = missing.Subtract(best.recvSet)
	}
	o.finalSet = have
	if !missing.IsEmpty() {
		o.fetchable = false
		var holders []string
		for _, m := range ms {
			part := m.recvSet.Intersect(missing)
			if m == c || !m.known || part.IsEmpty() {
				continue
			}
			why := "cannot serve them"
			if ok, r := m.servable(0); !ok {
				why = r
			} else if p := m.purged.Intersect(m.recvSet.Subtract(c.recvSet)); !p.IsEmpty() {
				why = "purged " + p.String() + " from its binary log"
			}
			holders = append(holders, fmt.Sprintf("%s has %s (%s)", m.key, part, why))
			o.holder(m.key)
		}
		o.short = append(o.short, fmt.Sprintf("%s: %s", missing, strings.Join(holders, ", ")))
	}
	return o
}

// canFollow says why p cannot replicate from the candidate once it caught up
// as o describes, or "".
func canFollow(p, c *member, o outlook) string {
	if p.lost != "" {
		return p.lost
	}
	if p.mysql() {
		if !strings.EqualFold(p.inst.GTID.Mode, "ON") {
			return fmt.Sprintf("gtid_mode=%s: it cannot be repointed by GTID auto-positioning", orUnknown(p.inst.GTID.Mode))
		}
		if extra := p.recvSet.Subtract(o.finalSet); !extra.IsEmpty() {
			return fmt.Sprintf("has %s, which %s will not have", extra, c.key)
		}
		if gone := o.finalSet.Subtract(p.recvSet).Intersect(c.purged); !gone.IsEmpty() {
			return fmt.Sprintf("needs %s, which %s purged from its binary log", gone, c.key)
		}
		return ""
	}
	for _, g := range p.recv {
		f, ok := o.final.DomainSeq(g.Domain)
		switch {
		case !ok || g.Seq > f.Seq:
			return fmt.Sprintf("has %s, which %s will not have", g, c.key)
		case !holds(o.finalHist, g):
			return fmt.Sprintf("its position %s in domain %d is not in the history of %s (which will be at %s): diverged", g, g.Domain, c.key, f)
		}
	}
	return ""
}
