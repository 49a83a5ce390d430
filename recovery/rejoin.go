package recovery

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/topology"
)

// RejoinOptions qualify a rejoin.
type RejoinOptions struct {
	// Reclone re-provisions the server from Source through the executor's
	// Recloner before attaching it: its data, binary log and errant
	// transactions are discarded (the errant GTIDs are audited first).
	Reclone bool
	// Source is the server a reclone copies (RecloneSource chooses it).
	Source dbpilot.InstanceKey
}

// CheckRejoin explains why old, a server outside the cluster (a fenced
// former primary), cannot be attached as it is below primary, or returns
// nil. It has errant transactions (topology.Errant: GTIDs it has that
// primary lacks): ECONFLICT naming them, with what to do (--reclone). Or
// it cannot replicate from primary for another reason CheckRelocate
// gives (unreachable, flavors, release series, no binary log, purged
// transactions it needs).
func CheckRejoin(old, primary *dbpilot.Instance) error {
	if old == nil || primary == nil {
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: the server and the primary are both needed")
	}
	if old.Key.Equal(primary.Key) {
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: %s is the cluster's primary", old.Key)
	}
	if !old.Reachable {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "rejoin: %s is unreachable (%s); it is fenced when it answers: start it, then rejoin it", old.Key, orUnknown(old.LastError))
	}
	if !primary.Reachable {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "rejoin: the primary %s is unreachable (%s): nothing to attach %s to", primary.Key, orUnknown(primary.LastError), old.Key)
	}
	errant, err := topology.Errant(old, primary)
	if err != nil {
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: cannot compare the GTIDs of %s and %s: %v", old.Key, primary.Key, err)
	}
	if errant != "" {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "rejoin: %s has errant transactions the primary %s lacks: %s; nothing changed: re-provision it with 'dbpilot rejoin %s --reclone' (they are discarded, and recorded in the audit)",
			old.Key, primary.Key, errant, old.Key)
	}
	return checkBelow("rejoin", old, primary, []*dbpilot.Instance{old, primary})
}

// RecloneSource chooses the server a reclone of old copies: the replica
// of primary (among instances) that replicates from it with both threads
// running and the least lag (then by key), so that the copy loads no
// primary; the primary itself when it has no such replica (replica false).
func RecloneSource(old, primary dbpilot.InstanceKey, instances []*dbpilot.Instance) (source dbpilot.InstanceKey, replica bool) {
	var best *dbpilot.Instance
	lag := func(in *dbpilot.Instance) int64 {
		if s := in.Channel(primary).SecondsBehind; s != nil {
			return *s
		}
		return 1 << 40
	}
	for _, in := range instances {
		ch := in.Channel(primary)
		if !in.Reachable || in.Key.Equal(old) || len(in.Channels) != 1 || ch == nil || !ch.Healthy() || !in.LogBin {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(lag(in), lag(best)), strings.Compare(in.Key.String(), best.Key.String())) < 0 {
			best = in
		}
	}
	if best == nil {
		return primary, false
	}
	return best.Key, true
}

// RejoinPlan is the human-readable plan of a rejoin of old below primary:
// with reclone, the copy from source and the errant GTIDs discarded.
func RejoinPlan(old, primary, source dbpilot.InstanceKey, errant string, reclone, semiSync bool) string {
	var b strings.Builder
	if reclone {
		what := "a replica of the cluster"
		if source.Equal(primary) {
			what = "the primary: the cluster has no replica that replicates well"
		}
		fmt.Fprintf(&b, "re-provision %s from %s (%s): its replication removed, its databases replaced by a consistent copy (dump and restore), its binary log reset\n", old, source, what)
		if errant != "" {
			fmt.Fprintf(&b, "discard its errant transactions %s (recorded in the audit first)\n", errant)
		} else {
			b.WriteString("it has no errant transactions: nothing of its own is discarded but its data\n")
		}
	} else if errant != "" {
		fmt.Fprintf(&b, "refused: %s has errant transactions %s lacks: %s (--reclone discards them)\n", old, primary, errant)
	}
	semi := ""
	if semiSync {
		semi = ", semi-sync replica side on"
	}
	fmt.Fprintf(&b, "attach %s below the primary %s: read_only kept, CHANGE MASTER with GTID positioning%s, replication started and verified\n", old, primary, semi)
	return b.String()
}

// Rejoin attaches old, a server outside the cluster (a fenced former
// primary), below primary as a replica: read_only set (kept), any
// replication it has removed, on MariaDB its gtid_slave_pos taken from its
// binary log (its own transactions are not asked for again), CHANGE MASTER
// with GTID positioning, the semi-sync replica side as Opt.SemiSync says,
// replication started and verified for Opt.RepointVerify. Without
// opt.Reclone a server with errant transactions is refused, nothing
// changed (CheckRejoin). With it, the errant GTIDs are audited, then the
// server is re-provisioned from opt.Source through Recloner (its data and
// binary log replaced) and attached. A server that does not replicate
// from primary in time has its replication removed again: it stays
// read_only and detached. rec receives Success, Error, Ended.
func (e *Executor) Rejoin(ctx context.Context, old, primary dbpilot.InstanceKey, opt RejoinOptions, rec *dbpilot.Recovery) error {
	cluster := ""
	if rec != nil {
		cluster = rec.Cluster
	}
	r := e.newRun(cluster, "rejoin", rec)
	r.subject = old
	detail := map[string]string{"instance": old.String(), "primary": primary.String(), "reclone": fmt.Sprint(opt.Reclone)}
	return r.finish(ctx, r.rejoin(ctx, old, primary, opt, detail), detail)
}

func (r *execRun) rejoin(ctx context.Context, old, primary dbpilot.InstanceKey, opt RejoinOptions, detail map[string]string) error {
	ctl := r.e.Ctl
	switch {
	case ctl == nil:
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: no controller")
	case old.IsZero() || primary.IsZero():
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: a server and a primary are needed")
	case old.Equal(primary):
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: %s is the cluster's primary", old)
	case opt.Reclone && r.e.Recloner == nil:
		return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "rejoin --reclone: this dbpilot cannot re-provision servers (no recloner)")
	case opt.Reclone && (opt.Source.IsZero() || opt.Source.Equal(old)):
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin --reclone: no server to copy %s from", old)
	}
	inst, err := ctl.Inspect(ctx, old)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin: %s unreachable, nothing changed", old)
	}
	p, err := ctl.Inspect(ctx, primary)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin: the primary %s unreachable, nothing changed", primary)
	}
	if p.IsReplica() {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "rejoin: %s replicates from %s: it is not the cluster's primary, nothing changed", primary, p.Channels[0].Source)
	}
	if len(inst.Channels) > 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "rejoin: %s has %d replication channels; rejoin attaches servers with at most one: remove them first (RESET SLAVE ALL), nothing changed", old, len(inst.Channels))
	}
	start := r.now()
	if opt.Reclone {
		if err := r.reclone(ctx, inst, p, opt.Source, detail); err != nil {
			return err
		}
		if inst, err = ctl.Inspect(ctx, old); err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin: %s unreachable after its re-provisioning", old)
		}
	} else {
		if err := CheckRejoin(inst, p); err != nil {
			return err
		}
		if err := ctl.SetReadOnly(ctx, old, true); err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin: cannot keep %s read_only, nothing changed", old)
		}
		if ch := inst.Channels; len(ch) == 1 && !ch[0].Source.Equal(primary) {
			// It replicated from a server outside the cluster (the dead
			// primary of an older tree): that replication goes.
			if err := r.unattach(ctx, old); err != nil {
				return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin: cannot remove the replication of %s from %s", old, ch[0].Source)
			}
			detail["old_source"] = ch[0].Source.String()
			if inst, err = ctl.Inspect(ctx, old); err != nil {
				return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin: %s unreachable", old)
			}
		}
	}
	attached, reason := r.demoteAttach(ctx, inst, primary)
	if reason == "" {
		reason = r.verify(ctx, old, "", primary)
	}
	if reason != "" {
		// Not half attached: it stays fenced, read_only, outside.
		if uerr := r.unattach(context.WithoutCancel(ctx), old); uerr != nil {
			reason += "; removing its replication again failed too: " + uerr.Error()
		}
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "rejoin: %s does not replicate from %s (%s); it stays read_only outside the cluster", old, primary, reason)
	}
	for k, v := range attached {
		detail[k] = v
	}
	detail["elapsed_ms"] = execMillis(r.since(start))
	r.rec.NewPrimary = primary
	how := "its own data"
	if opt.Reclone {
		how = "re-provisioned from " + opt.Source.String()
	}
	r.audit(ctx, old, dbpilot.AuditRejoin, fmt.Sprintf("%s rejoined the cluster (%s): a read_only replica of %s", old, how, primary), detail)
	return nil
}

// reclone audits the errant GTIDs of old (compared with the primary p)
// that a reclone discards, removes old's replication, keeps it read_only,
// and re-provisions it from source: old then replicates from source.
func (r *execRun) reclone(ctx context.Context, old, p *dbpilot.Instance, source dbpilot.InstanceKey, detail map[string]string) error {
	ctl := r.e.Ctl
	errant := "unknown"
	if e, err := topology.Errant(old, p); err == nil {
		errant = e
	}
	detail["clone_source"] = source.String()
	detail["errant"] = errant
	msg := fmt.Sprintf("re-provisioning %s from %s: its errant transactions %s are discarded with its data and binary log", old.Key, source, errant)
	if errant == "" {
		msg = fmt.Sprintf("re-provisioning %s from %s: no errant transactions; its data and binary log are replaced", old.Key, source)
	}
	// Recorded before anything is discarded: nothing goes silently.
	r.audit(ctx, old.Key, dbpilot.AuditReclone, msg, map[string]string{"errant": errant, "source": source.String(), "primary": p.Key.String(),
		"gtid_binlog_state": old.GTID.BinlogState, "gtid_executed": old.GTID.Executed})
	if err := ctl.SetReadOnly(ctx, old.Key, true); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin --reclone: cannot keep %s read_only, nothing changed", old.Key)
	}
	if err := r.unattach(ctx, old.Key); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "rejoin --reclone: cannot remove the replication of %s, nothing copied", old.Key)
	}
	res, err := r.e.Recloner.Reclone(ctx, source, old.Key)
	if err != nil {
		return dbpilot.WrapError(dbpilot.ErrorCode(err), err, "rejoin --reclone: copying %s into %s failed; %s stays read_only outside the cluster, its data possibly partial: run 'dbpilot rejoin %s --reclone' again", source, old.Key, old.Key, old.Key)
	}
	d := map[string]string{"source": source.String(), "position": res.Position, "tables": fmt.Sprint(res.Tables), "rows": fmt.Sprint(res.Rows)}
	msg = fmt.Sprintf("%s re-provisioned from %s at GTID position %s (%d tables, %d rows)", old.Key, source, execOrNone(res.Position), res.Tables, res.Rows)
	if len(res.Dropped) > 0 {
		dropped := slices.Clone(res.Dropped)
		slices.Sort(dropped)
		d["dropped_databases"] = strings.Join(dropped, ",")
		msg += fmt.Sprintf("; databases %s does not have were dropped: %s", source, strings.Join(dropped, ", "))
	}
	detail["position"] = res.Position
	r.audit(ctx, old.Key, dbpilot.AuditReclone, msg, d)
	return nil
}

// unattach stops and removes every replication channel of key.
func (r *execRun) unattach(ctx context.Context, key dbpilot.InstanceKey) error {
	if err := r.e.Ctl.StopReplica(ctx, key); err != nil {
		return err
	}
	return r.e.Ctl.ResetReplicaAll(ctx, key)
}
