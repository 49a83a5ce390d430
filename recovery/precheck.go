package recovery

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// precheckApplier decides whether inst (just inspected), replicating from
// source, is ready (CheckApplier with Opt.MaxLag). With a backlog that one
// reading does not refuse, it is read again PrecheckSample later, its
// applier threads with it when the controller reads them. It changes
// nothing; the error is a failed reading.
func (r *execRun) precheckApplier(ctx context.Context, inst *dbpilot.Instance, source dbpilot.InstanceKey) (Readiness, error) {
	first := &ApplierSample{Inst: inst}
	rd := CheckApplier(source, first, nil, r.opt.MaxLag)
	if rd.Backlog == 0 || rd.Refusal != "" {
		return rd, nil
	}
	first.Threads = r.applierThreads(ctx, inst.Key)
	if err := r.sleep(ctx, PrecheckSample); err != nil {
		return rd, err
	}
	again, err := r.e.Ctl.Inspect(ctx, inst.Key)
	if err != nil {
		return rd, err
	}
	return CheckApplier(source, first, &ApplierSample{Inst: again, Threads: r.applierThreads(ctx, inst.Key)}, r.opt.MaxLag), nil
}

// applierThreads reads key's applier threads when the controller can
// (dbpilot.ApplierInspector); nil otherwise or when the reading fails.
func (r *execRun) applierThreads(ctx context.Context, key dbpilot.InstanceKey) []dbpilot.ApplierThread {
	ai, ok := r.e.Ctl.(dbpilot.ApplierInspector)
	if !ok {
		return nil
	}
	threads, err := ai.ApplierThreads(ctx, key)
	if err != nil {
		slog.Warn("read applier threads", "instance", key.String(), "err", err)
		return nil
	}
	return threads
}

// describeLeft says what key, replicating through channel, still has to
// apply to reach target, and what its applier waits for: " with 3
// transactions left to apply (its applier waits for a lock: ...)", or ""
// when it cannot be read.
func (r *execRun) describeLeft(ctx context.Context, key dbpilot.InstanceKey, channel, target string) string {
	inst, err := r.e.Ctl.Inspect(ctx, key)
	if err != nil {
		return ""
	}
	var left uint64
	if inst.Flavor.IsMySQLFamily() {
		t, err1 := gtid.ParseMySQLSet(target)
		e, err2 := gtid.ParseMySQLSet(inst.GTID.Executed)
		if err1 != nil || err2 != nil {
			return ""
		}
		left = t.Subtract(e).Count()
	} else {
		t, err1 := gtid.ParseMariaList(target)
		have, err2 := posMax(inst.GTID.BinlogPos, inst.GTID.SlavePos)
		h, err3 := gtid.ParseMariaList(have)
		if err1 != nil || err2 != nil || err3 != nil {
			return ""
		}
		left = mariaBacklog(t, h)
	}
	s := fmt.Sprintf(" with %s left to apply", transactions(left))
	if ch := execChannelNamed(inst, channel); ch != nil {
		if w := applierWait(ch, r.applierThreads(ctx, key)); w != "" {
			s += fmt.Sprintf(" (its applier waits for a lock: %s)", w)
		}
	}
	return s
}
