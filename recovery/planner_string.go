package recovery

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// String renders the plan for people: what happens to whom, and why. It
// lists the candidates considered with their notes, the winner and the
// reason, the catch-up steps, the replicas to repoint and the lost ones.
func (p *Plan) String() string {
	var b strings.Builder
	switch p.Kind {
	case dbpilot.RecoverySwitchover:
		fmt.Fprintf(&b, "switchover of primary %s in cluster %s\n", p.OldPrimary, p.Cluster)
	default:
		fmt.Fprintf(&b, "failover of dead primary %s in cluster %s\n", p.OldPrimary, p.Cluster)
	}
	if p.Candidate.IsZero() {
		fmt.Fprintf(&b, "no replica promoted: %s\n", p.Reason)
	} else {
		fmt.Fprintf(&b, "promote %s: %s\n", p.Candidate, p.Reason)
	}

	if len(p.Candidates) > 0 {
		b.WriteString("\ncandidates, best first:\n")
		kw, rw := 0, 0
		for _, c := range p.Candidates {
			kw = max(kw, len(c.Key.String()))
			rw = max(rw, len(c.Rule))
		}
		for _, c := range p.Candidates {
			el := "eligible"
			if !c.Eligible {
				el = "not eligible"
			}
			pos := c.Position
			if pos == "" {
				pos = "unknown"
			}
			fmt.Fprintf(&b, "  %-*s  %-12s  %-*s  received %s\n", kw, c.Key, el, rw, c.Rule, pos)
			for _, n := range c.Notes {
				fmt.Fprintf(&b, "      - %s\n", n)
			}
		}
	}

	if p.Candidate.IsZero() {
		return b.String()
	}
	b.WriteString("\n")
	if p.Kind == dbpilot.RecoverySwitchover {
		fmt.Fprintf(&b, "before promotion: %s is set read_only and its client connections are ended; %s applies up to the primary's position %s (read again once the primary is read_only)\n",
			p.OldPrimary, p.Candidate, orNone(p.TargetPosition))
	}
	if len(p.CatchUp) > 0 {
		all := p.domains()
		fmt.Fprintf(&b, "catch-up of %s before promotion (after it applied its relay log):\n", p.Candidate)
		for i, s := range p.CatchUp {
			if len(s.Domains) == 0 {
				fmt.Fprintf(&b, "  %d. replicate from %s (GTID auto-positioning) until it has %s\n", i+1, s.From, s.Until)
				continue
			}
			word := "domain"
			if len(s.Domains) > 1 {
				word = "domains"
			}
			ignore := slices.DeleteFunc(slices.Clone(all), func(d uint32) bool { return slices.Contains(s.Domains, d) })
			fmt.Fprintf(&b, "  %d. replicate %s %s from %s until %s", i+1, word, joinDomains(s.Domains), s.From, s.Until)
			if len(ignore) > 0 {
				fmt.Fprintf(&b, ", ignoring domains %s", joinDomains(ignore))
			}
			b.WriteString("\n")
		}
	}
	if len(p.Repoint) > 0 {
		fmt.Fprintf(&b, "repoint below %s:\n", p.Candidate)
		for _, k := range p.Repoint {
			fmt.Fprintf(&b, "  %s\n", k)
		}
	} else {
		fmt.Fprintf(&b, "repoint below %s: none\n", p.Candidate)
	}
	if p.Kind == dbpilot.RecoverySwitchover {
		fmt.Fprintf(&b, "old primary %s becomes a replica of %s\n", p.OldPrimary, p.Candidate)
	}
	if len(p.Lost) > 0 {
		fmt.Fprintf(&b, "lost (will not replicate from %s):\n", p.Candidate)
		for _, l := range p.Lost {
			fmt.Fprintf(&b, "  %s: %s\n", l.Key, l.Reason)
		}
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// domains returns the MariaDB domains seen in the candidates' positions.
func (p *Plan) domains() []uint32 {
	var ds []uint32
	for _, c := range p.Candidates {
		l, err := gtid.ParseMariaList(c.Position)
		if err != nil {
			continue
		}
		ds = append(ds, l.Domains()...)
	}
	for _, s := range p.CatchUp {
		ds = append(ds, s.Domains...)
	}
	slices.Sort(ds)
	return slices.Compact(ds)
}
