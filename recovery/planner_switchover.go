package recovery

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// PlanSwitchover plans replacing a live primary by `to` (zero: the best candidate).
//
// The primary must be reachable and replicate from nobody. The candidate
// must be a direct replica, eligible as for a failover (reachable, not
// must_not, log_bin and log_slave_updates on, GTID replication, not a newer
// release series than another replica that will follow it), replicating
// from the primary right now (both threads running), and hold no errant
// transactions: nothing in its gtid_binlog_state (MariaDB) or gtid_executed
// (MySQL) that the primary lacks, the primary's own recent writes aside.
// A candidate asked for by name that is not eligible is refused with the
// reasons. Otherwise the best eligible replica wins: prefer before neutral
// before prefer_not, then the fewest transactions left to apply to reach the
// primary, then the key.
//
// A replica that cannot apply what it has left within opt.MaxLag is not
// eligible either (CheckApplier on this one observation: its SQL thread
// stopped with a backlog, an applier waiting for a lock, or
// Seconds_Behind_Master beyond the bound); the executor checks again,
// with two readings, before it changes anything.
//
// TargetPosition is the primary's position (MariaDB gtid_binlog_pos, MySQL
// gtid_executed) as observed; the executor refreshes it once the primary is
// read-only. The other direct replicas are repointed to the candidate and
// the old primary becomes its replica.
func PlanSwitchover(cluster string, primary *dbpilot.Instance, instances []*dbpilot.Instance, to dbpilot.InstanceKey, rules Rules, opt SwitchoverOptions) (*Plan, error) {
	if primary == nil {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "switchover of cluster %s: no primary given", cluster)
	}
	pk := primary.Key
	if !primary.Reachable {
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "cannot switch over %s: it is unreachable (%s); a dead primary needs a failover", pk, orUnknown(primary.LastError))
	}
	if primary.IsReplica() {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "cannot switch over %s: it replicates from %s (ring, multi-source or intermediate); switchover replaces a primary without a source", pk, primary.Channels[0].Source)
	}
	if !to.IsZero() && to.Equal(pk) {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "cannot switch over %s to itself", pk)
	}
	ms := directReplicas(pk, instances, rules)
	if len(ms) == 0 {
		return nil, dbpilot.Errorf(dbpilot.ENOTFOUND, "cannot switch over %s: no replica replicates from it", pk)
	}
	flavor := clusterFlavor(primary, ms)
	ref, err := loadPrimary(primary, flavor)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "cannot switch over %s: its GTID state is unreadable", pk)
	}
	for _, m := range ms {
		m.load(flavor)
	}
	var followers []*member
	for _, m := range ms {
		if m.known {
			followers = append(followers, m)
		}
	}
	behind := checkSwitchoverMembers(ms, followers, ref, primary, instances, opt)

	var eligible []*member
	for _, m := range ms {
		if m.known && m.eligible() {
			eligible = append(eligible, m)
		}
	}
	less := func(a, b *member) int {
		return cmp.Or(cmp.Compare(ruleOrder(a.rule), ruleOrder(b.rule)), cmp.Compare(behind[a], behind[b]), compareKeys(a.key, b.key))
	}
	slices.SortStableFunc(eligible, less)

	cand, reason, err := chooseSwitchoverCandidate(cluster, pk, to, ms, eligible, behind, instances)
	if err != nil {
		return nil, err
	}
	state := "has applied everything the primary has"
	if behind[cand] > 0 {
		state = fmt.Sprintf("applies %d transactions to reach the primary's position", behind[cand])
	}
	if reason == "requested" {
		reason += "; " + state
	} else {
		reason = state + "; " + reason
	}

	plan := &Plan{Kind: dbpilot.RecoverySwitchover, Cluster: cluster, OldPrimary: pk, Candidate: cand.key, Reason: reason, TargetPosition: ref.position}
	order := []*member{cand}
	for _, m := range eligible {
		if m != cand {
			order = append(order, m)
		}
	}
	for _, m := range ms {
		if !m.eligible() && m != cand {
			order = append(order, m)
		}
	}
	for _, m := range order {
		c := Candidate{Key: m.key, Eligible: m.eligible(), Rule: m.rule, Position: m.position()}
		c.Notes = append(c.Notes, m.why...)
		if m.known {
			if b := behind[m]; b > 0 {
				c.Notes = append(c.Notes, fmt.Sprintf("%d transactions behind the primary", b))
			} else {
				c.Notes = append(c.Notes, "has applied everything the primary has")
			}
		}
		c.Notes = append(c.Notes, m.notes...)
		plan.Candidates = append(plan.Candidates, c)
	}
	for _, p := range ms {
		if p == cand {
			continue
		}
		if r := ref.canFollow(p, cand); r != "" {
			plan.Lost = append(plan.Lost, Lost{Key: p.key, Reason: r})
			continue
		}
		plan.Repoint = append(plan.Repoint, p.key)
	}
	return plan, nil
}

// checkSwitchoverMembers checks every known direct replica of the primary
// for a switchover (eligibility, version, errant transactions, a working
// and timely applier, release series) and returns how many transactions
// each is behind the primary.
func checkSwitchoverMembers(ms, followers []*member, ref *primaryRef, primary *dbpilot.Instance, instances []*dbpilot.Instance, opt SwitchoverOptions) map[*member]uint64 {
	pk := primary.Key
	behind := map[*member]uint64{}
	for _, m := range ms {
		if !m.known {
			continue
		}
		m.checkEligible()
		m.checkVersion(followers)
		if e := ref.errant(m); e != "" {
			m.why = append(m.why, fmt.Sprintf("errant transactions: it has %s, which the primary %s does not have; reconcile them first", e, pk))
		}
		// A receiving replica with transactions it cannot apply in time
		// is refused for that; one that does not receive, for that.
		rd := CheckApplier(pk, &ApplierSample{Inst: m.inst}, nil, opt.MaxLag)
		switch {
		case rd.Refusal != "" && m.ch.IORunning == dbpilot.IORunning:
			m.why = append(m.why, rd.Refusal)
		case !m.ch.Healthy():
			m.why = append(m.why, fmt.Sprintf("not replicating from the primary (IO thread %s, SQL thread %s): start replication first", orUnknown(string(m.ch.IORunning)), yesNo(m.ch.SQLRunning)))
		case rd.Refusal != "":
			m.why = append(m.why, rd.Refusal)
		}
		behind[m] = ref.behind(m)
		m.belowNotes(instances)
		if v, pv := m.inst.Version, primary.Version; v.Major != 0 && pv.Major != 0 && seriesOf(pv).Compare(seriesOf(v)) < 0 {
			m.notes = append(m.notes, fmt.Sprintf("the old primary runs %s, an older release series: upgrade it, since it will replicate from this one", pv))
		}
	}
	return behind
}

// chooseSwitchoverCandidate returns the candidate of a switchover — the
// one requested (to), or the best eligible one — and why, in a phrase.
func chooseSwitchoverCandidate(cluster string, pk, to dbpilot.InstanceKey, ms, eligible []*member, behind map[*member]uint64, instances []*dbpilot.Instance) (cand *member, reason string, err error) {
	if !to.IsZero() {
		i := slices.IndexFunc(ms, func(m *member) bool { return m.key.Equal(to) })
		if i < 0 {
			if in := findInstance(instances, to); in != nil {
				src := "nothing"
				if len(in.Channels) > 0 {
					src = in.Channels[0].Source.String()
				}
				return nil, "", dbpilot.Errorf(dbpilot.EINVALID, "cannot switch over %s to %s: it is not a direct replica of %s (it replicates from %s); relocate it below %s first", pk, to, pk, src, pk)
			}
			return nil, "", dbpilot.Errorf(dbpilot.ENOTFOUND, "cannot switch over %s to %s: no such instance observed in cluster %s", pk, to, cluster)
		}
		cand = ms[i]
		if !cand.eligible() {
			code := dbpilot.ECONFLICT
			if !cand.inst.Reachable {
				code = dbpilot.EUNAVAIL
			}
			return nil, "", dbpilot.Errorf(code, "cannot switch over %s to %s: %s", pk, to, strings.Join(cand.why, "; "))
		}
		reason = "requested"
	} else {
		if len(eligible) == 0 {
			var parts []string
			for _, m := range ms {
				parts = append(parts, fmt.Sprintf("%s: %s", m.key, strings.Join(m.why, ", ")))
			}
			return nil, "", dbpilot.Errorf(dbpilot.ECONFLICT, "cannot switch over %s: no replica can be promoted: %s", pk, strings.Join(parts, "; "))
		}
		cand = eligible[0]
		switch {
		case len(eligible) == 1:
			reason = "the only eligible replica"
		default:
			r := eligible[1]
			switch {
			case ruleOrder(cand.rule) != ruleOrder(r.rule):
				reason = fmt.Sprintf("promotion rule %s beats %s of %s", cand.rule, r.rule, r.key)
			case behind[cand] != behind[r]:
				reason = fmt.Sprintf("closest to the primary: %s has %d transactions to apply", r.key, behind[r])
			default:
				reason = fmt.Sprintf("ties with %s; the lower key wins", r.key)
			}
		}
	}
	return cand, reason, nil
}

// SwitchoverOptions bound a switchover's plan.
type SwitchoverOptions struct {
	// MaxLag is the most a candidate may lag (switchover.max_lag); zero:
	// DefaultMaxLag.
	MaxLag time.Duration
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// primaryRef is the live primary's GTID state, for a switchover.
type primaryRef struct {
	inst     *dbpilot.Instance
	mysql    bool
	pos      gtid.MariaList // gtid_binlog_pos
	state    gtid.MariaList // gtid_binlog_state
	executed gtid.MySQLSet
	position string
}

func loadPrimary(p *dbpilot.Instance, flavor dbpilot.Flavor) (*primaryRef, error) {
	r := &primaryRef{inst: p, mysql: flavor.IsMySQLFamily()}
	var err error
	if r.mysql {
		if r.executed, err = gtid.ParseMySQLSet(p.GTID.Executed); err != nil {
			return nil, fmt.Errorf("gtid_executed: %w", err)
		}
		r.position = r.executed.String()
		return r, nil
	}
	if r.pos, err = gtid.ParseMariaList(p.GTID.BinlogPos); err != nil {
		return nil, fmt.Errorf("gtid_binlog_pos: %w", err)
	}
	if r.state, err = gtid.ParseMariaList(p.GTID.BinlogState); err != nil {
		return nil, fmt.Errorf("gtid_binlog_state: %w", err)
	}
	r.position = r.pos.String()
	return r, nil
}

// errant returns the transactions m has that the primary lacks, leaving out
// the primary's own writes (m may have been observed after the primary).
func (r *primaryRef) errant(m *member) string {
	if r.mysql {
		e := gtid.ErrantMySQL(m.execSet, r.executed)
		var keep gtid.MySQLSet
		for _, c := range gtid.CompareMySQLSets(e, gtid.MySQLSet{}) {
			if !strings.EqualFold(c.UUID, r.inst.ServerUUID) {
				keep = keep.Union(c.OnlyA)
			}
		}
		return keep.String()
	}
	state, _ := gtid.ParseMariaList(m.inst.GTID.BinlogState)
	var keep gtid.MariaList
	for _, g := range gtid.ErrantMariaDB(state, r.state) {
		if g.Server != r.inst.ServerID {
			keep = append(keep, g)
		}
	}
	return keep.String()
}

// behind counts the transactions m has still to apply to reach the primary.
func (r *primaryRef) behind(m *member) uint64 {
	if r.mysql {
		return r.executed.Subtract(m.execSet).Count()
	}
	return mariaBacklog(r.pos, m.applied)
}

// canFollow says why p cannot replicate from the candidate c once c has
// everything the primary has, or "".
func (r *primaryRef) canFollow(p, c *member) string {
	if p.lost != "" {
		return p.lost
	}
	if r.mysql {
		if !strings.EqualFold(p.inst.GTID.Mode, "ON") {
			return fmt.Sprintf("gtid_mode=%s: it cannot be repointed by GTID auto-positioning", orUnknown(p.inst.GTID.Mode))
		}
		if gone := r.executed.Subtract(p.recvSet).Intersect(c.purged); !gone.IsEmpty() {
			return fmt.Sprintf("needs %s, which %s purged from its binary log", gone, c.key)
		}
	}
	return ""
}
