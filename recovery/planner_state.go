package recovery

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// member is one direct replica of the old primary as the planner sees it.
type member struct {
	inst *dbpilot.Instance
	key  dbpilot.InstanceKey // as observed, for output
	nkey dbpilot.InstanceKey // normalized, for comparisons
	rule dbpilot.PromotionRule
	ch   *dbpilot.ReplicationChannel // the channel from the old primary
	fam  bool                        // IsMySQLFamily of its flavor

	// known: reachable, of the cluster's flavor family and with a readable
	// GTID state. Only known members count when deciding who has what.
	known bool
	// why lists the reasons it cannot be promoted; notes other remarks.
	why   []string
	notes []string
	// lost is set when it cannot follow any candidate.
	lost string

	// MariaDB. recv is what it received, one GTID per domain, errant
	// transactions left out; raw is as observed. applied is
	// gtid_current_pos. hist holds, per (domain, server), the last
	// transaction it has in any form (binlog state, slave/current pos,
	// received): a source can serve a position only when it holds it.
	recv, raw, applied, hist gtid.MariaList
	// errant holds transactions written on this replica that no other
	// replica has; errantIn the domains they are in.
	errant   gtid.MariaList // the last errant GTID of each (domain, server)
	errantIn map[uint32]bool
	// diverged maps a domain to why its position there conflicts with
	// another replica's (it is the one holding errant transactions).
	diverged map[uint32]string

	// MySQL: received (retrieved ∪ executed) without errant transactions,
	// as observed, executed and purged.
	recvSet, rawSet, execSet, purged gtid.MySQLSet
	errantSet                        gtid.MySQLSet

	// backlog is the number of received transactions not applied yet.
	backlog uint64
}

func (m *member) mysql() bool { return m.fam }

func (m *member) eligible() bool { return len(m.why) == 0 }

// position is the received position shown to people.
func (m *member) position() string {
	if !m.known {
		return ""
	}
	if m.mysql() {
		return m.rawSet.String()
	}
	return m.raw.String()
}

// compareKeys orders keys by normalized host, then port.
func compareKeys(a, b dbpilot.InstanceKey) int {
	a, b = a.Normalized(), b.Normalized()
	return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
}

// findInstance returns the instance with key k, or nil.
func findInstance(instances []*dbpilot.Instance, k dbpilot.InstanceKey) *dbpilot.Instance {
	for _, in := range instances {
		if in != nil && in.Key.Equal(k) {
			return in
		}
	}
	return nil
}

// directReplicas returns a member for every instance with a channel from
// source, sorted by key; an instance listed twice counts once. An
// unreachable instance of which nothing is known (no channels) counts too,
// unless another instance reports it as its replica: it is presumably a
// replica of source, and will be lost as unreachable.
func directReplicas(source dbpilot.InstanceKey, instances []*dbpilot.Instance, rules Rules) []*member {
	below := map[dbpilot.InstanceKey]bool{}
	for _, in := range instances {
		if in != nil && in.Reachable && !in.Key.Equal(source) {
			for _, r := range in.Replicas {
				below[r.Normalized()] = true
			}
		}
	}
	var out []*member
	for _, in := range instances {
		if in == nil || in.Key.Equal(source) {
			continue
		}
		ch := in.Channel(source)
		if ch == nil && (in.Reachable || len(in.Channels) > 0 || below[in.Key.Normalized()]) {
			continue
		}
		if slices.ContainsFunc(out, func(m *member) bool { return m.nkey == in.Key.Normalized() }) {
			continue
		}
		out = append(out, &member{
			inst: in, key: in.Key, nkey: in.Key.Normalized(), ch: ch,
			rule: rules.Rule(in.Key), fam: in.Flavor.IsMySQLFamily(),
			errantIn: map[uint32]bool{}, diverged: map[uint32]string{},
		})
	}
	slices.SortFunc(out, func(a, b *member) int { return compareKeys(a.key, b.key) })
	return out
}

// clusterFlavor returns the flavor of the old primary if it was observed,
// else the flavor of the first reachable replica that has one.
func clusterFlavor(primary *dbpilot.Instance, ms []*member) dbpilot.Flavor {
	if primary != nil && primary.Flavor != "" {
		return primary.Flavor
	}
	for _, m := range ms {
		if m.inst.Reachable && m.inst.Flavor != "" {
			return m.inst.Flavor
		}
	}
	return dbpilot.FlavorMariaDB
}

// load reads what m holds. It sets m.known, or m.why and m.lost.
func (m *member) load(flavor dbpilot.Flavor) {
	in := m.inst
	switch {
	case !in.Reachable:
		why := "unreachable"
		if in.LastError != "" {
			why += ": " + in.LastError
		}
		m.why = append(m.why, why)
		m.lost = "unreachable"
		return
	case in.Flavor != "" && in.Flavor.IsMySQLFamily() != flavor.IsMySQLFamily():
		m.why = append(m.why, fmt.Sprintf("flavor %s: the cluster is %s", in.Flavor, flavor))
		m.lost = fmt.Sprintf("flavor %s cannot replicate from a %s primary", in.Flavor, flavor)
		return
	}
	m.fam = flavor.IsMySQLFamily()
	var err error
	if m.mysql() {
		err = m.loadMySQL()
	} else {
		err = m.loadMariaDB()
	}
	if err != nil {
		m.why = append(m.why, "cannot read its GTID state: "+err.Error())
		m.lost = "GTID state unreadable: " + err.Error()
		return
	}
	m.known = true
}

func (m *member) loadMariaDB() error {
	g := m.inst.GTID
	var io, cur, slave, state, binpos gtid.MariaList
	for _, f := range []struct {
		name string
		text string
		dst  *gtid.MariaList
	}{
		{"Gtid_IO_Pos", m.ch.GTIDIOPos, &io},
		{"gtid_current_pos", g.CurrentPos, &cur},
		{"gtid_slave_pos", g.SlavePos, &slave},
		{"gtid_binlog_state", g.BinlogState, &state},
		{"gtid_binlog_pos", g.BinlogPos, &binpos},
	} {
		l, err := gtid.ParseMariaList(f.text)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = l
	}
	m.raw = gtid.HighestPerDomain(io, cur)
	m.recv = m.raw
	m.applied = gtid.HighestPerDomain(cur, slave)
	m.hist = state.Union(slave).Union(cur).Union(io).Union(binpos)
	m.backlog = mariaBacklog(m.recv, m.applied)
	return nil
}

func (m *member) loadMySQL() error {
	retr, err := gtid.ParseMySQLSet(m.ch.RetrievedGTIDSet)
	if err != nil {
		return fmt.Errorf("Retrieved_Gtid_Set: %w", err)
	}
	if m.execSet, err = gtid.ParseMySQLSet(m.inst.GTID.Executed); err != nil {
		return fmt.Errorf("gtid_executed: %w", err)
	}
	if m.purged, err = gtid.ParseMySQLSet(m.inst.GTID.Purged); err != nil {
		return fmt.Errorf("gtid_purged: %w", err)
	}
	m.rawSet = retr.Union(m.execSet)
	m.recvSet = m.rawSet
	m.backlog = m.rawSet.Subtract(m.execSet).Count()
	return nil
}

// mariaBacklog counts the transactions received and not applied, by
// sequence numbers (contiguous within a domain written by one primary).
func mariaBacklog(recv, applied gtid.MariaList) uint64 {
	var n uint64
	for _, r := range recv {
		a, ok := applied.DomainSeq(r.Domain)
		switch {
		case !ok:
			n += r.Seq
		case r.Seq > a.Seq:
			n += r.Seq - a.Seq
		}
	}
	return n
}

// holds reports whether hist has transaction g: an entry of g's domain and
// server with at least g's sequence number.
func holds(hist gtid.MariaList, g gtid.MariaGTID) bool {
	return hist.Contains(gtid.MariaList{g})
}

// markErrant finds, among known members, transactions written on a replica
// that no other replica has: a replica's own writes are errant unless they
// went round (a former primary's writes, which the others replicated).
// Their transactions are left out of what the replica counts as received.
func markErrant(ms []*member) {
	for _, m := range ms {
		if !m.known {
			continue
		}
		var others, otherPos gtid.MariaList
		var otherSet gtid.MySQLSet
		n := 0
		for _, o := range ms {
			if o == m || !o.known {
				continue
			}
			n++
			others = others.Union(o.hist)
			otherPos = gtid.HighestPerDomain(otherPos, o.raw)
			otherSet = otherSet.Union(o.rawSet)
		}
		if n == 0 {
			continue
		}
		if m.mysql() {
			m.markErrantMySQL(otherSet)
		} else {
			m.markErrantMariaDB(others, otherPos)
		}
	}
}

// markErrantMariaDB marks the replica's own writes that no other replica
// holds (others: their histories) as errant when they are recent: the
// replica's position in their domain, or beyond every other replica's
// position there (otherPos). Older ones, below what the others replicated
// since, may be a former primary's writes that a replica provisioned later
// never logged: they are only noted.
func (m *member) markErrantMariaDB(others, otherPos gtid.MariaList) {
	id := m.inst.ServerID
	if id == 0 {
		return
	}
	state, _ := gtid.ParseMariaList(m.inst.GTID.BinlogState)
	binpos, _ := gtid.ParseMariaList(m.inst.GTID.BinlogPos)
	var local gtid.MariaList
	for _, g := range state.Union(m.applied).Union(binpos) {
		if g.Server == id {
			local = append(local, g)
		}
	}
	var old gtid.MariaList
	for _, g := range gtid.ErrantMariaDB(local, others) {
		tip, _ := m.raw.DomainSeq(g.Domain)
		top, ok := otherPos.DomainSeq(g.Domain)
		if tip == g || !ok || g.Seq > top.Seq {
			m.errant = append(m.errant, g)
		} else {
			old = append(old, g)
		}
	}
	if len(old) > 0 {
		m.notes = append(m.notes, fmt.Sprintf("has %s, written on this replica (server_id %d), which no other replica has: old errant transactions, or written when it was primary", old, id))
	}
	if len(m.errant) == 0 {
		return
	}
	for _, g := range m.errant {
		m.errantIn[g.Domain] = true
	}
	// What it received from elsewhere in those domains still counts.
	io, _ := gtid.ParseMariaList(m.ch.GTIDIOPos)
	slave, _ := gtid.ParseMariaList(m.inst.GTID.SlavePos)
	isErrant := func(g gtid.MariaGTID) bool { return slices.Contains(m.errant, g) }
	clean := gtid.HighestPerDomain(slices.DeleteFunc(io, isErrant), slices.DeleteFunc(slave, isErrant))
	var recv gtid.MariaList
	for _, g := range m.raw {
		if slices.Contains(m.errant, g) {
			if c, ok := clean.DomainSeq(g.Domain); ok {
				recv = append(recv, c)
			}
			continue
		}
		recv = append(recv, g)
	}
	m.recv = gtid.NewMariaList(recv...)
	m.why = append(m.why, fmt.Sprintf("errant transactions: it has %s, written on this replica (server_id %d), which no other replica has", m.errant, id))
	m.lost = fmt.Sprintf("errant transactions: it has %s, written on this replica (server_id %d), which the new primary will not have; reconcile the data or rebuild it", m.errant, id)
}

func (m *member) markErrantMySQL(others gtid.MySQLSet) {
	uuid := strings.ToLower(m.inst.ServerUUID)
	if uuid == "" {
		return
	}
	var errant gtid.MySQLSet
	for _, c := range gtid.CompareMySQLSets(m.rawSet, others) {
		if c.UUID == uuid {
			errant = errant.Union(c.OnlyA)
		}
	}
	if errant.IsEmpty() {
		return
	}
	m.errantSet = errant
	m.recvSet = m.rawSet.Subtract(errant)
	m.why = append(m.why, fmt.Sprintf("errant transactions: it has %s, written on this replica, which no other replica has", errant))
	m.lost = fmt.Sprintf("errant transactions: it has %s, written on this replica, which the new primary will not have; reconcile the data or rebuild it", errant)
}

// deadServerID is the server_id of the old primary: observed, or as its
// replicas' channels report it (the most common value).
func deadServerID(primary *dbpilot.Instance, ms []*member) uint32 {
	if primary != nil && primary.ServerID != 0 {
		return primary.ServerID
	}
	count := map[uint32]int{}
	var best uint32
	for _, m := range ms {
		if m.ch == nil {
			continue
		}
		id := m.ch.SourceServerID
		if id == 0 {
			continue
		}
		count[id]++
		if count[id] > count[best] || (count[id] == count[best] && id < best) {
			best = id
		}
	}
	return best
}

// markDiverged compares the MariaDB positions of known members pairwise.
// In a domain, two positions conflict when they have the same sequence
// number from different servers, or when the one behind is not in the
// history of the one ahead (it cannot replicate from it). The side whose
// last transaction there was not written by the old primary is blamed; when
// that does not tell, both are.
func markDiverged(ms []*member, deadID uint32) {
	for i, a := range ms {
		for _, b := range ms[i+1:] {
			if !a.known || !b.known || a.mysql() || b.mysql() {
				continue
			}
			for _, ga := range a.recv {
				gb, ok := b.recv.DomainSeq(ga.Domain)
				if !ok || conflictFree(ga, a.hist, gb, b.hist) {
					continue
				}
				d := ga.Domain
				fromA, fromB := deadID != 0 && ga.Server == deadID, deadID != 0 && gb.Server == deadID
				blameA, blameB := !fromA || fromB, !fromB || fromA
				both := blameA && blameB
				if blameA {
					a.blame(d, ga, b, gb, both)
				}
				if blameB {
					b.blame(d, gb, a, ga, both)
				}
			}
		}
	}
}

// conflictFree reports whether positions a and b of one domain are on one
// line of history.
func conflictFree(a gtid.MariaGTID, histA gtid.MariaList, b gtid.MariaGTID, histB gtid.MariaList) bool {
	switch {
	case a == b:
		return true
	case a.Seq == b.Seq:
		return false
	case a.Seq < b.Seq:
		return holds(histB, a)
	default:
		return holds(histA, b)
	}
}

func (m *member) blame(d uint32, mine gtid.MariaGTID, other *member, theirs gtid.MariaGTID, both bool) {
	if _, done := m.diverged[d]; done {
		return
	}
	var r string
	switch {
	case both:
		r = fmt.Sprintf("diverged from %s in domain %d: %s here, %s there; cannot tell which holds errant transactions", other.key, d, mine, theirs)
	case mine.Seq == theirs.Seq:
		r = fmt.Sprintf("diverged from %s in domain %d: %s here, %s (from the old primary) there: errant transaction", other.key, d, mine, theirs)
	default:
		r = fmt.Sprintf("diverged from %s in domain %d: %s here is not in the history of %s there: errant transactions", other.key, d, mine, theirs)
	}
	m.diverged[d] = r
	m.why = append(m.why, r)
	if m.lost == "" {
		m.lost = r
	}
}

// seriesOf returns the release series (major.minor) of v.
func seriesOf(v dbpilot.Version) dbpilot.Version {
	return dbpilot.Version{Major: v.Major, Minor: v.Minor}
}

// checkVersion excludes m when another replica that would follow it runs
// an older release series: replication from a newer to an older series is
// not supported. Patch releases of one series replicate both ways.
func (m *member) checkVersion(followers []*member) {
	v := m.inst.Version
	if v.Major == 0 {
		return
	}
	for _, o := range followers {
		ov := o.inst.Version
		if o == m || ov.Major == 0 {
			continue
		}
		if seriesOf(v).Compare(seriesOf(ov)) > 0 {
			m.why = append(m.why, fmt.Sprintf("version %s is a newer release series than %s of %s, which could not replicate from it", v, ov, o.key))
			return
		}
	}
}

// checkEligible adds the reasons a known member cannot be promoted.
func (m *member) checkEligible() {
	in := m.inst
	if m.rule == dbpilot.PromoteMustNot {
		m.why = append(m.why, "promotion rule must_not")
	}
	if !in.LogBin {
		m.why = append(m.why, "no binary log (log_bin=OFF): the other replicas could not replicate from it")
	} else if !in.LogReplicaUpdates {
		m.why = append(m.why, "log_slave_updates=OFF: its binary log lacks the replicated transactions the other replicas need")
	}
	if m.mysql() {
		if !strings.EqualFold(in.GTID.Mode, "ON") {
			m.why = append(m.why, fmt.Sprintf("gtid_mode=%s: GTID positioning needs ON", orUnknown(in.GTID.Mode)))
		}
		if !strings.EqualFold(m.ch.UsingGTID, "Auto_Position") {
			m.why = append(m.why, "replicates without GTID auto-positioning (Auto_Position=0)")
		}
	} else if u := strings.ToLower(m.ch.UsingGTID); u != "slave_pos" && u != "current_pos" {
		m.why = append(m.why, fmt.Sprintf("replicates without GTID (Using_Gtid=%s)", orUnknown(m.ch.UsingGTID)))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// channelNotes adds remarks on the replication channel from the old primary.
func (m *member) channelNotes() {
	c := m.ch
	switch {
	case !c.SQLRunning && c.LastSQLErrno != 0:
		m.notes = append(m.notes, fmt.Sprintf("SQL thread stopped on error %d: %s", c.LastSQLErrno, c.LastSQLError))
	case !c.SQLRunning:
		m.notes = append(m.notes, "SQL thread stopped")
	}
	if c.SQLDelay > 0 {
		m.notes = append(m.notes, fmt.Sprintf("delayed replica (SQL_Delay=%ds)", c.SQLDelay))
	}
}

// belowNotes notes the replicas of m, which stay below it.
func (m *member) belowNotes(instances []*dbpilot.Instance) {
	var below []string
	for _, in := range instances {
		if in != nil && !in.Key.Equal(m.key) && in.Channel(m.key) != nil {
			below = append(below, in.Key.String())
		}
	}
	if len(below) > 0 {
		slices.Sort(below)
		below = slices.Compact(below)
		m.notes = append(m.notes, fmt.Sprintf("intermediate: its replicas %s stay below it", strings.Join(below, ", ")))
	}
}
