package recovery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// PlanRelocate is the one place a relocation is checked before it runs:
// on one fresh reading of the cluster's members, replica and target must
// both be members of cluster and the move must pass CheckRelocate; with
// oneReading (a dry run) a target that is itself a replica must also be
// ready on that reading (CheckApplier within maxLag). A real relocation
// leaves that to Executor.Relocate, which reads the target twice when it
// has a backlog. It returns the plan's text.
func PlanRelocate(cluster string, replica, target dbpilot.InstanceKey, fresh []*dbpilot.Instance, maxLag time.Duration, oneReading bool) (string, error) {
	find := func(k dbpilot.InstanceKey) *dbpilot.Instance {
		for _, i := range fresh {
			if i.Key.Equal(k) {
				return i
			}
		}
		return nil
	}
	r, t := find(replica), find(target)
	if r == nil {
		return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "relocate: %s is not part of cluster %s", replica, cluster)
	}
	if t == nil {
		return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "relocate: target %s is not part of cluster %s", target, cluster)
	}
	if err := CheckRelocate(r, t, fresh); err != nil {
		return "", err
	}
	if oneReading {
		// What one reading tells; the relocation itself reads the target
		// twice when it has a backlog.
		for _, ch := range t.Channels {
			if rd := CheckApplier(ch.Source, &ApplierSample{Inst: t}, nil, maxLag); rd.Refusal != "" {
				return "", dbpilot.Errorf(dbpilot.ECONFLICT, "relocate: target %s is not ready: %s; let it catch up, or choose another target", target, rd.Refusal)
			}
		}
	}
	return fmt.Sprintf("relocate %s below %s (GTID auto-positioning)", replica, target), nil
}

// CheckRelocate explains why replica cannot move below target, or returns nil.
//
// Moving is refused when: either server is unreachable; target is replica
// itself or replicates from it, directly or through others (a cycle; the
// walk follows the target's sources through instances); they are of
// different flavors; target runs a newer release series than replica;
// target has no binary log, or, being a replica itself, log_slave_updates
// off; on MySQL, either has gtid_mode other than ON; replica has
// transactions target lacks: on MariaDB its position in a domain
// (gtid_binlog_state, gtid_current_pos) ahead of what target received
// there, not in target's history, or writes of its own target does not
// have; on MySQL gtid_executed not within target's gtid_executed ∪ its
// retrieved sets, or transactions it needs that target purged.
//
// A replica already replicating from target can move there: nil.
// The error is a *dbpilot.Error: EINVALID, EUNAVAIL, EUNSUPPORTED or ECONFLICT.
func CheckRelocate(replica, target *dbpilot.Instance, instances []*dbpilot.Instance) error {
	return checkBelow("relocate", replica, target, instances)
}

// checkBelow is CheckRelocate for an operation named verb ("relocate",
// "rejoin"), which starts its messages.
func checkBelow(verb string, replica, target *dbpilot.Instance, instances []*dbpilot.Instance) error {
	if replica == nil || target == nil {
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: replica and target are both needed", verb)
	}
	rk, tk := replica.Key, target.Key
	fail := func(code, format string, args ...any) error {
		return dbpilot.Errorf(code, "cannot %s %s below %s: %s", verb, rk, tk, fmt.Sprintf(format, args...))
	}
	if rk.Equal(tk) {
		return fail(dbpilot.EINVALID, "a server cannot replicate from itself")
	}
	if !replica.Reachable {
		return fail(dbpilot.EUNAVAIL, "%s is unreachable (%s)", rk, orUnknown(replica.LastError))
	}
	if !target.Reachable {
		return fail(dbpilot.EUNAVAIL, "the target is unreachable (%s)", orUnknown(target.LastError))
	}
	if path := sourcePath(target, rk, instances); path != nil {
		return fail(dbpilot.ECONFLICT, "the target replicates from %s (%s): that would make a replication cycle", rk, strings.Join(path, " → "))
	}
	if replica.Flavor.IsMySQLFamily() != target.Flavor.IsMySQLFamily() {
		return fail(dbpilot.EUNSUPPORTED, "different flavors (%s below %s)", orUnknown(string(replica.Flavor)), orUnknown(string(target.Flavor)))
	}
	if replica.Channel(tk) != nil {
		return nil
	}

	var why []string
	code := ""
	add := func(c, format string, args ...any) {
		if code == "" {
			code = c
		}
		why = append(why, fmt.Sprintf(format, args...))
	}
	if v, tv := replica.Version, target.Version; v.Major != 0 && tv.Major != 0 && seriesOf(tv).Compare(seriesOf(v)) > 0 {
		add(dbpilot.EUNSUPPORTED, "the target runs %s, a newer release series than %s on the replica: replication from a newer to an older series is not supported", tv, v)
	}
	if !target.LogBin {
		add(dbpilot.ECONFLICT, "the target has no binary log (log_bin=OFF): nothing to replicate from")
	} else if target.IsReplica() && !target.LogReplicaUpdates {
		add(dbpilot.ECONFLICT, "the target has log_slave_updates=OFF: its binary log lacks what it replicates")
	}
	if replica.Flavor.IsMySQLFamily() {
		for _, in := range []*dbpilot.Instance{replica, target} {
			if !strings.EqualFold(in.GTID.Mode, "ON") {
				add(dbpilot.EUNSUPPORTED, "%s has gtid_mode=%s: relocation uses GTID auto-positioning, which needs ON", in.Key, orUnknown(in.GTID.Mode))
			}
		}
		if r, err := relocateMySQL(replica, target); err != nil {
			add(dbpilot.EINVALID, "%v", err)
		} else if r != "" {
			add(dbpilot.ECONFLICT, "%s", r)
		}
	} else {
		if r, err := relocateMariaDB(replica, target); err != nil {
			add(dbpilot.EINVALID, "%v", err)
		} else if r != "" {
			add(dbpilot.ECONFLICT, "%s", r)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fail(code, "%s", strings.Join(why, "; "))
}

// sourcePath returns the chain from target up to replica through the
// sources of observed instances ("t → a → replica"), or nil when target
// does not replicate from replica.
func sourcePath(target *dbpilot.Instance, replica dbpilot.InstanceKey, instances []*dbpilot.Instance) []string {
	type step struct {
		in   *dbpilot.Instance
		path []string
	}
	seen := map[dbpilot.InstanceKey]bool{target.Key.Normalized(): true}
	queue := []step{{target, []string{target.Key.String()}}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, ch := range s.in.Channels {
			path := append(append([]string(nil), s.path...), ch.Source.String())
			if ch.Source.Equal(replica) {
				return path
			}
			n := ch.Source.Normalized()
			if seen[n] {
				continue
			}
			seen[n] = true
			if next := findInstance(instances, ch.Source); next != nil {
				queue = append(queue, step{next, path})
			}
		}
	}
	return nil
}

// relocateMariaDB says which transactions of replica target lacks, or "".
func relocateMariaDB(replica, target *dbpilot.Instance) (string, error) {
	parse := func(in *dbpilot.Instance, name, text string) (gtid.MariaList, error) {
		l, err := gtid.ParseMariaList(text)
		if err != nil {
			return nil, fmt.Errorf("%s of %s is unreadable: %w", name, in.Key, err)
		}
		return l, nil
	}
	var lists [2][4]gtid.MariaList
	for i, in := range []*dbpilot.Instance{replica, target} {
		for j, f := range []struct{ name, text string }{
			{"gtid_binlog_state", in.GTID.BinlogState},
			{"gtid_current_pos", in.GTID.CurrentPos},
			{"gtid_slave_pos", in.GTID.SlavePos},
			{"gtid_binlog_pos", in.GTID.BinlogPos},
		} {
			l, err := parse(in, f.name, f.text)
			if err != nil {
				return "", err
			}
			lists[i][j] = l
		}
	}
	r, t := lists[0], lists[1]
	// The replica's history and position; the target's history and what
	// it received (its channels' Gtid_IO_Pos included).
	rHist := r[0].Union(r[1]).Union(r[2]).Union(r[3])
	rPos := gtid.HighestPerDomain(r[1], r[0], r[2])
	tHist := t[0].Union(t[1]).Union(t[2]).Union(t[3])
	tRecv := []gtid.MariaList{t[1], t[0], t[2]}
	for _, ch := range target.Channels {
		io, err := parse(target, "Gtid_IO_Pos", ch.GTIDIOPos)
		if err != nil {
			return "", err
		}
		tHist = tHist.Union(io)
		tRecv = append(tRecv, io)
	}
	tPos := gtid.HighestPerDomain(tRecv...)

	var why []string
	// Writes of the replica's own that the target does not have.
	var own gtid.MariaList
	for _, g := range rHist {
		if g.Server == replica.ServerID && replica.ServerID != 0 {
			own = append(own, g)
		}
	}
	if e := gtid.ErrantMariaDB(own, tHist); len(e) > 0 {
		why = append(why, fmt.Sprintf("errant transactions: the replica has %s, written on it (server_id %d), which the target lacks", e, replica.ServerID))
	}
	for _, g := range rPos {
		tg, ok := tPos.DomainSeq(g.Domain)
		switch {
		case g.Server == replica.ServerID && !holds(tHist, g):
			// Reported above.
		case !ok:
			why = append(why, fmt.Sprintf("the replica has %s in domain %d, where the target has nothing", g, g.Domain))
		case g.Seq > tg.Seq:
			why = append(why, fmt.Sprintf("the replica is ahead in domain %d: it has %s, the target received only %s; wait for the target to catch up", g.Domain, g, tg))
		case g.Seq == tg.Seq && g.Server != tg.Server:
			why = append(why, fmt.Sprintf("diverged in domain %d: the replica has %s, the target %s", g.Domain, g, tg))
		case !holds(tHist, g):
			why = append(why, fmt.Sprintf("the replica's position %s in domain %d is not in the target's history (it is at %s): diverged", g, g.Domain, tg))
		}
	}
	return strings.Join(why, "; "), nil
}

// relocateMySQL says which transactions of replica target lacks or purged,
// or "".
func relocateMySQL(replica, target *dbpilot.Instance) (string, error) {
	parse := func(in *dbpilot.Instance, name, text string) (gtid.MySQLSet, error) {
		s, err := gtid.ParseMySQLSet(text)
		if err != nil {
			return gtid.MySQLSet{}, fmt.Errorf("%s of %s is unreadable: %w", name, in.Key, err)
		}
		return s, nil
	}
	rExec, err := parse(replica, "gtid_executed", replica.GTID.Executed)
	if err != nil {
		return "", err
	}
	tAll, err := parse(target, "gtid_executed", target.GTID.Executed)
	if err != nil {
		return "", err
	}
	tPurged, err := parse(target, "gtid_purged", target.GTID.Purged)
	if err != nil {
		return "", err
	}
	for _, ch := range target.Channels {
		s, err := parse(target, "Retrieved_Gtid_Set", ch.RetrievedGTIDSet)
		if err != nil {
			return "", err
		}
		tAll = tAll.Union(s)
	}
	var why []string
	if extra := rExec.Subtract(tAll); !extra.IsEmpty() {
		origin := ""
		for _, c := range gtid.CompareMySQLSets(extra, gtid.MySQLSet{}) {
			if strings.EqualFold(c.UUID, replica.ServerUUID) {
				origin = " (some written on the replica itself: errant)"
			}
		}
		why = append(why, fmt.Sprintf("the replica has %s, which the target lacks%s", extra, origin))
	}
	if gone := tAll.Subtract(rExec).Intersect(tPurged); !gone.IsEmpty() {
		why = append(why, fmt.Sprintf("the replica needs %s, which the target purged from its binary log", gone))
	}
	return strings.Join(why, "; "), nil
}

// Relocate moves a single-channel replica under target: stop, change
// source, start, verify for Opt.RepointVerify. A target that replicates is
// checked first as a switchover's candidate is (CheckApplier with
// Opt.MaxLag, two readings when it has a backlog): one that cannot apply
// what it has left within Opt.MaxLag is refused (ECONFLICT), nothing
// changed. When the replica does not
// replicate from target in time it is pointed back at its former source.
// Multi-source replicas are refused (EINVALID). rec receives Success, Error,
// Ended, and LostReplicas when the replica could not be put back.
func (e *Executor) Relocate(ctx context.Context, replica, target dbpilot.InstanceKey, rec *dbpilot.Recovery) error {
	cluster := ""
	if rec != nil {
		cluster = rec.Cluster
	}
	r := e.newRun(cluster, "relocate", rec)
	r.subject = replica
	detail := map[string]string{"replica": replica.String(), "target": target.String()}
	return r.finish(ctx, r.relocate(ctx, replica, target, detail), detail)
}

// relocate checks the move (controller, keys, both servers reachable, a
// single channel, no loop, a target ready to feed it; a replica of target
// already is left as is), then moves the replica and verifies it; when it does not replicate from
// target it is pointed back at its former source.
func (r *execRun) relocate(ctx context.Context, replica, target dbpilot.InstanceKey, detail map[string]string) error {
	ctl := r.e.Ctl
	switch {
	case ctl == nil:
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: no controller")
	case replica.IsZero() || target.IsZero():
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: a replica and a target are needed")
	case replica.Equal(target):
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: %s cannot replicate from itself", replica)
	}
	inst, err := ctl.Inspect(ctx, replica)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: %s unreachable, nothing changed", replica)
	}
	if len(inst.Channels) != 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: %s has %d replication channels; relocate moves single-channel replicas only", replica, len(inst.Channels))
	}
	ch := inst.Channels[0]
	detail["old_source"] = ch.Source.String()
	if ch.Source.Equal(target) {
		r.audit(ctx, replica, dbpilot.AuditRelocate, fmt.Sprintf("%s already replicates from %s", replica, target), nil)
		return nil
	}
	t, err := ctl.Inspect(ctx, target)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: target %s unreachable, nothing changed", target)
	}
	if t.Channel(replica) != nil {
		return dbpilot.Errorf(dbpilot.EINVALID, "relocate: %s replicates from %s; moving %s below it would make a loop", target, replica, replica)
	}
	// A target that is itself a replica passes its lag on: it must be
	// able to apply what it has left within Opt.MaxLag.
	for _, tch := range t.Channels {
		rd, err := r.precheckApplier(ctx, t, tch.Source)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: target %s unreachable, nothing changed", target)
		}
		if rd.Refusal != "" {
			return dbpilot.Errorf(dbpilot.ECONFLICT, "relocate: target %s is not ready, nothing changed: %s; let it catch up, or choose another target", target, rd.Refusal)
		}
	}
	start := r.now()
	if err := ctl.StopReplica(ctx, replica); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "relocate: cannot stop replication on %s", replica)
	}
	var reason string
	if err := ctl.ChangeSource(ctx, replica, target, dbpilot.ChangeSourceOptions{Channel: ch.Name}); err != nil {
		reason = "change source: " + err.Error()
	} else if err := ctl.StartReplica(ctx, replica); err != nil {
		reason = "start replication: " + err.Error()
	} else {
		reason = r.verify(ctx, replica, ch.Name, target)
	}
	if reason == "" {
		detail["elapsed_ms"] = execMillis(r.since(start))
		r.audit(ctx, replica, dbpilot.AuditRelocate, fmt.Sprintf("%s replicates from %s (was %s)", replica, target, ch.Source), detail)
		return nil
	}
	// Put it back where it was.
	rctx := context.WithoutCancel(ctx)
	back := ctl.StopReplica(rctx, replica)
	if back == nil {
		back = ctl.ChangeSource(rctx, replica, ch.Source, dbpilot.ChangeSourceOptions{Channel: ch.Name})
	}
	if back == nil {
		back = ctl.StartReplica(rctx, replica)
	}
	if back != nil {
		r.lose(ctx, replica, reason+"; putting it back failed: "+back.Error())
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "relocate: %s does not replicate from %s (%s), and pointing it back at %s failed: %v", replica, target, reason, ch.Source, back)
	}
	r.audit(ctx, replica, dbpilot.AuditRollback, fmt.Sprintf("%s points at %s again", replica, ch.Source), map[string]string{"reason": reason})
	return dbpilot.Errorf(dbpilot.EUNAVAIL, "relocate: %s does not replicate from %s (%s); pointed it back at %s", replica, target, reason, ch.Source)
}
