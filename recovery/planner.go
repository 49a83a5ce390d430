package recovery

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// rank orders promotion candidates.
type rank struct {
	key       dbpilot.InstanceKey
	rule      dbpilot.PromotionRule
	complete  bool
	fetchable bool
	ahead     int
	missing   uint64
	backlog   uint64
}

// tier groups candidates, best first: complete and not prefer_not; made
// complete by catch-up and not prefer_not; complete prefer_not; prefer_not
// made complete by catch-up; cannot be made complete.
func (r rank) tier() int {
	pn := r.rule == dbpilot.PromotePreferNot
	switch {
	case !r.fetchable:
		return 4
	case r.complete && !pn:
		return 0
	case !pn:
		return 1
	case r.complete:
		return 2
	}
	return 3
}

func ruleOrder(r dbpilot.PromotionRule) int {
	switch r {
	case dbpilot.PromotePrefer:
		return 0
	case dbpilot.PromoteNeutral, "":
		return 1
	case dbpilot.PromotePreferNot:
		return 2
	}
	return 3
}

// compareRank orders a before b when a is the better candidate: by tier,
// promotion rule, then (when catch-up is needed) more domains held at the
// top and fewer transactions to fetch, then the smaller relay backlog, then
// the key.
func compareRank(a, b rank) int {
	if c := cmp.Compare(a.tier(), b.tier()); c != 0 {
		return c
	}
	if c := cmp.Compare(ruleOrder(a.rule), ruleOrder(b.rule)); c != 0 {
		return c
	}
	if !a.complete || !b.complete {
		if c := cmp.Compare(b.ahead, a.ahead); c != 0 {
			return c
		}
		if c := cmp.Compare(a.missing, b.missing); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(a.backlog, b.backlog), compareKeys(a.key, b.key))
}

// decider names what puts the winner w before the runner-up r.
func decider(w, r rank) string {
	switch {
	case w.tier() != r.tier():
		switch {
		case !r.fetchable:
			return fmt.Sprintf("%s cannot fetch what it lacks", r.key)
		case w.complete && !r.complete:
			return fmt.Sprintf("%s lacks some of them", r.key)
		case r.rule == dbpilot.PromotePreferNot:
			return fmt.Sprintf("%s is prefer_not, chosen only when no other replica can be made complete", r.key)
		}
	case ruleOrder(w.rule) != ruleOrder(r.rule):
		return fmt.Sprintf("promotion rule %s beats %s of %s", w.rule, r.rule, r.key)
	case (!w.complete || !r.complete) && w.ahead != r.ahead:
		return fmt.Sprintf("holds the most in more domains than %s (%d vs %d)", r.key, w.ahead, r.ahead)
	case (!w.complete || !r.complete) && w.missing != r.missing:
		return fmt.Sprintf("fewer transactions to fetch than %s (%d vs %d)", r.key, w.missing, r.missing)
	case w.backlog != r.backlog:
		return fmt.Sprintf("smaller relay backlog than %s (%d vs %d transactions to apply)", r.key, w.backlog, r.backlog)
	}
	return fmt.Sprintf("ties with %s; the lower key wins", r.key)
}

// PlanFailover plans the recovery of a dead primary from the observed replicas of the cluster.
//
// The candidates are the direct replicas of dead: instances with a channel
// whose source is dead, plus unreachable instances nothing is known of that
// no reachable instance reports as its replica. Replicas of replicas stay
// below their intermediate.
// A candidate must be reachable, not must_not, have log_bin and
// log_slave_updates on, replicate with GTID (MariaDB Using_Gtid Slave_Pos or
// Current_Pos; MySQL gtid_mode=ON and auto-positioning), hold no errant
// transactions and not run a newer release series than another replica that
// would follow it (replication from a newer to an older series is not
// supported).
//
// What a replica received is, on MariaDB, per domain the higher of
// Gtid_IO_Pos (of the channel from dead) and gtid_current_pos; on MySQL
// Retrieved_Gtid_Set ∪ gtid_executed. Transactions written on a replica that
// no other replica has are errant (on MariaDB only recent ones: at the
// replica's position in their domain or beyond every other replica's; older
// ones may be a former primary's and are only noted): the replica is not
// promoted, does not serve that domain, is lost, and what it received from
// the old primary still counts. On MariaDB two positions in a domain conflict
// when they have the same sequence number from different servers or when
// the one behind is not in the history of the one ahead; the side whose
// position was not written by the old primary is lost (both when that does
// not tell).
//
// Ranking, best first:
//  1. complete candidates (they received every transaction any reachable
//     replica received) that are prefer or neutral;
//  2. prefer or neutral candidates that can be made complete by catch-up:
//     for every domain (MySQL: every transaction) where another replica
//     received more, the candidate replicates from a replica holding the
//     most there that can serve it (reachable, log_bin and
//     log_slave_updates on, no errant transactions there);
//  3. complete prefer_not candidates; 4. prefer_not ones made complete.
//
// Within a group: prefer before neutral; when catch-up is needed, more
// domains held at the top first, then fewer transactions to fetch; then the
// smaller relay backlog (received but not applied); then the key.
//
// A candidate that lacks transactions nobody can serve it is never chosen:
// when no candidate can be made complete PlanFailover fails naming the
// replicas holding them and the GTIDs. Unreachable replicas are lost
// ("unreachable"; they are repointed when they come back), so are errant
// or diverged ones and those that cannot replicate from the candidate.
//
// Plan.Kind is dbpilot.RecoveryFailoverManual; callers recovering on their
// own set RecoveryFailoverAuto. On an error after the replicas were
// examined, the plan is returned too, with Candidate unset: it explains each
// replica for the record and must not be executed.
func PlanFailover(cluster string, dead dbpilot.InstanceKey, instances []*dbpilot.Instance, rules Rules) (*Plan, error) {
	if dead.IsZero() {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "failover of cluster %s: no dead primary given", cluster)
	}
	deadInst := findInstance(instances, dead)
	ms := directReplicas(dead, instances, rules)
	if len(ms) == 0 {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "cannot fail over %s: none of the %d observed instances replicates from it", dead, len(instances))
	}
	flavor := clusterFlavor(deadInst, ms)
	for _, m := range ms {
		m.load(flavor)
	}
	markErrant(ms)
	if !flavor.IsMySQLFamily() {
		markDiverged(ms, deadServerID(deadInst, ms))
	}
	// Replicas that will follow the new primary, for the version rule.
	var followers []*member
	for _, m := range ms {
		if m.known && m.lost == "" {
			followers = append(followers, m)
		}
	}
	plan := &Plan{Kind: dbpilot.RecoveryFailoverManual, Cluster: cluster, OldPrimary: dead}
	cands := rankCandidates(ms, instances, followers)
	// Candidates: eligible ones best first, then the others by key.
	for i := range cands {
		plan.Candidates = append(plan.Candidates, candidateOf(cands[i].m, &cands[i].o))
	}
	for _, m := range ms {
		if !m.eligible() {
			plan.Candidates = append(plan.Candidates, candidateOf(m, nil))
		}
	}

	if len(cands) == 0 {
		var parts []string
		for _, m := range ms {
			parts = append(parts, fmt.Sprintf("%s: %s", m.key, strings.Join(m.why, ", ")))
		}
		err := dbpilot.Errorf(dbpilot.ECONFLICT, "cannot fail over %s: no replica can be promoted: %s", dead, strings.Join(parts, "; "))
		plan.Reason = err.Message
		return plan, err
	}
	best := cands[0]
	if !best.o.fetchable {
		// The best candidate by rule and by what it holds still lacks
		// transactions nobody can serve it.
		var holders []string
		for _, k := range best.o.shortBy {
			holders = append(holders, k.String())
		}
		hint := ""
		if len(holders) > 0 {
			hint = fmt.Sprintf("; they would be lost: to fail over without them, stop %s", strings.Join(holders, " and "))
		}
		err := dbpilot.Errorf(dbpilot.ECONFLICT, "cannot fail over %s without losing transactions: no eligible replica has or can fetch every transaction that was received; best candidate %s cannot fetch %s%s",
			dead, best.m.key, strings.Join(best.o.short, "; "), hint)
		plan.Reason = err.Message
		return plan, err
	}

	c, o := best.m, best.o
	plan.Candidate = c.key
	plan.CatchUp = o.steps
	why := catchUpSummary(c, o, ms)
	if len(cands) == 1 {
		why = "the only eligible replica; " + why
	} else {
		why += "; " + decider(best.r, cands[1].r)
	}
	if c.rule == dbpilot.PromotePreferNot {
		why += "; prefer_not, but no other replica can be made complete"
	}
	plan.Reason = why

	for _, p := range ms {
		if p == c {
			continue
		}
		if r := canFollow(p, c, o); r != "" {
			plan.Lost = append(plan.Lost, Lost{Key: p.key, Reason: r})
			continue
		}
		plan.Repoint = append(plan.Repoint, p.key)
	}
	return plan, nil
}

// scored is an eligible candidate with its outlook and rank.
type scored struct {
	m *member
	o outlook
	r rank
}

// rankCandidates checks every known direct replica of the dead primary
// (eligibility, version against the followers, notes) and returns the
// eligible ones best first.
func rankCandidates(ms []*member, instances []*dbpilot.Instance, followers []*member) []scored {
	var cands []scored
	for _, m := range ms {
		if !m.known {
			continue
		}
		m.checkEligible()
		m.checkVersion(followers)
		m.channelNotes()
		m.belowNotes(instances)
		if !m.eligible() {
			continue
		}
		var o outlook
		if m.mysql() {
			o = mysqlOutlook(m, ms)
		} else {
			o = mariaOutlook(m, ms)
		}
		cands = append(cands, scored{m, o, rank{key: m.key, rule: m.rule, complete: o.complete, fetchable: o.fetchable,
			ahead: o.ahead, missing: o.missing, backlog: m.backlog}})
	}
	slices.SortStableFunc(cands, func(a, b scored) int { return compareRank(a.r, b.r) })
	return cands
}

// candidateOf is m as the plan lists it, with its outlook o (nil: not
// eligible).
func candidateOf(m *member, o *outlook) Candidate {
	c := Candidate{Key: m.key, Eligible: m.eligible(), Rule: m.rule, Position: m.position()}
	c.Notes = append(c.Notes, m.why...)
	if o != nil {
		switch {
		case o.complete:
			c.Notes = append(c.Notes, "received every transaction any reachable replica received")
		default:
			c.Notes = append(c.Notes, o.lacks...)
			if !o.fetchable {
				for _, s := range o.short {
					c.Notes = append(c.Notes, "cannot fetch "+s)
				}
			}
		}
	}
	if m.known && m.backlog > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("relay backlog: %d transactions received, not applied yet", m.backlog))
	}
	c.Notes = append(c.Notes, m.notes...)
	return c
}

// catchUpSummary says in one phrase what c has, or fetches from whom.
func catchUpSummary(c *member, o outlook, ms []*member) string {
	if o.complete {
		return "received every transaction any reachable replica received"
	}
	var from []string
	for _, s := range o.steps {
		if len(s.Domains) == 0 {
			from = append(from, s.From.String())
			continue
		}
		word := "domain"
		if len(s.Domains) > 1 {
			word = "domains"
		}
		from = append(from, fmt.Sprintf("%s %s from %s", word, joinDomains(s.Domains), s.From))
	}
	// Say why a source holding more is not promoted instead.
	var why []string
	for _, s := range o.steps {
		for _, m := range ms {
			if m.key == s.From && !m.eligible() {
				why = append(why, fmt.Sprintf("%s cannot be promoted: %s", m.key, strings.Join(m.why, ", ")))
			}
		}
	}
	tail := ""
	if len(why) > 0 {
		tail = "; " + strings.Join(why, "; ")
	}
	if c.mysql() {
		return fmt.Sprintf("lacks %d transactions, fetched from %s%s", o.missing, strings.Join(from, ", then "), tail)
	}
	var top []uint32
	for _, g := range c.recv {
		if !slices.ContainsFunc(o.steps, func(s CatchUp) bool { return slices.Contains(s.Domains, g.Domain) }) {
			top = append(top, g.Domain)
		}
	}
	held := ""
	if len(top) > 0 && o.domains > 1 {
		held = fmt.Sprintf("holds the most in domain(s) %s; ", joinDomains(top))
	}
	return fmt.Sprintf("%scatches up %s (%d transactions)%s", held, strings.Join(from, ", "), o.missing, tail)
}

// joinDomains formats domains as "1,2".
func joinDomains(ds []uint32) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.FormatUint(uint64(d), 10)
	}
	return strings.Join(s, ",")
}
