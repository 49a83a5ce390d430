package recovery

import (
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Prechecks of planned operations: is a switchover's candidate, or a
// relocation's target, close enough to its source, and is its applier
// moving? Pure: readings of the replica in, a finding out. The executor
// takes the readings (PrecheckSample apart) before it changes anything.

// Defaults of the planned operations' bounds.
const (
	// DefaultMaxLag is switchover.max_lag's default.
	DefaultMaxLag = 10 * time.Second
	// DefaultDrainTimeout is switchover.drain_timeout's default.
	DefaultDrainTimeout = 5 * time.Second
	// PrecheckSample is the time between the two readings of an applier
	// that has transactions to apply.
	PrecheckSample = 500 * time.Millisecond
)

// The settings refusals name.
const (
	MaxLagSetting       = "switchover.max_lag"
	DrainTimeoutSetting = "switchover.drain_timeout"
)

// ApplierSample is one reading of a replica for CheckApplier.
type ApplierSample struct {
	// Inst is the replica as inspected (ObservedAt dates the reading).
	Inst *dbpilot.Instance
	// Threads are its applier threads, when the controller reads them
	// (dbpilot.ApplierInspector); nil otherwise.
	Threads []dbpilot.ApplierThread
}

// Readiness is what CheckApplier found of a replica's applier.
type Readiness struct {
	// Backlog counts the transactions received and not applied at the
	// last reading.
	Backlog uint64 `json:"backlog"`
	// Lag is Seconds_Behind_Master at the last reading; nil when unknown.
	Lag *time.Duration `json:"lag_ns,omitempty"`
	// Applied counts the transactions applied between the two readings,
	// Interval apart (zero with one reading).
	Applied  uint64        `json:"applied"`
	Interval time.Duration `json:"interval_ns"`
	// Estimate is how long applying Backlog takes at the sampled rate
	// (zero when not estimated).
	Estimate time.Duration `json:"estimate_ns"`
	// Wait names the lock an applier thread waits for ("" none).
	Wait string `json:"wait,omitempty"`
	// Refusal says in one phrase, without the replica's name, why it is
	// not ready; "" when it is.
	Refusal string `json:"refusal,omitempty"`
}

// CheckApplier decides whether a replica, replicating from source, is ready
// to take over from it (a switchover's candidate) or to feed another
// replica (a relocation's target): whether it can apply what it has left
// within maxLag (zero: DefaultMaxLag). first is a reading; second, when
// not nil, a later one (PrecheckSample apart), which the decision is about.
//
// A replica with nothing left to apply (no transaction received and not
// applied: MariaDB Gtid_IO_Pos against gtid_slave_pos/gtid_current_pos,
// MySQL Retrieved_Gtid_Set against gtid_executed) is ready, whatever its
// SQL thread's state. One with a backlog is refused when its SQL thread is
// stopped; when an applier thread waits for a lock (Slave_SQL_Running_State
// or a thread's state naming a lock, or an InnoDB lock wait); when
// Seconds_Behind_Master exceeds maxLag; and, given two readings, when it
// applied nothing between them, or when applying its backlog at the rate
// it showed would take longer than maxLag.
func CheckApplier(source dbpilot.InstanceKey, first, second *ApplierSample, maxLag time.Duration) Readiness {
	if maxLag <= 0 {
		maxLag = DefaultMaxLag
	}
	last := first
	if second != nil {
		last = second
	}
	var rd Readiness
	ch := last.Inst.Channel(source)
	if ch == nil {
		rd.Refusal = fmt.Sprintf("no replication channel from %s", source)
		return rd
	}
	m, err := applierMember(last.Inst, ch)
	if err != nil {
		rd.Refusal = "cannot read its GTID state: " + err.Error()
		return rd
	}
	rd.Backlog = m.backlog
	if ch.SecondsBehind != nil {
		lag := time.Duration(*ch.SecondsBehind) * time.Second
		rd.Lag = &lag
	}
	rd.Wait = applierWait(ch, last.Threads)
	if second != nil {
		if f := first.Inst.Channel(source); f != nil {
			if m0, err := applierMember(first.Inst, f); err == nil {
				rd.Applied = appliedSince(m0, m)
			}
		}
		rd.Interval = second.Inst.ObservedAt.Sub(first.Inst.ObservedAt)
		if rd.Interval <= 0 {
			rd.Interval = PrecheckSample
		}
	}
	if rd.Backlog == 0 {
		return rd
	}
	within := fmt.Sprintf("%s (%s)", MaxLagSetting, maxLag)
	switch {
	case !ch.SQLRunning:
		rd.Refusal = fmt.Sprintf("%s received but not applied and its SQL thread is stopped: it cannot catch up within %s", transactions(rd.Backlog), within)
	case rd.Wait != "":
		rd.Refusal = fmt.Sprintf("%s to apply and its applier waits for a lock (%s): it cannot catch up within %s", transactions(rd.Backlog), rd.Wait, within)
	case rd.Lag != nil && *rd.Lag > maxLag:
		rd.Refusal = fmt.Sprintf("%s behind its source (Seconds_Behind_Master) with %s to apply: over %s", *rd.Lag, transactions(rd.Backlog), within)
	case second == nil:
	case rd.Applied == 0:
		state := ""
		if ch.SQLStateText != "" {
			state = fmt.Sprintf(" (SQL thread: %s)", ch.SQLStateText)
		}
		rd.Refusal = fmt.Sprintf("%s to apply and none applied in %s%s: its applier is not progressing, so it cannot catch up within %s", transactions(rd.Backlog), rd.Interval.Round(time.Millisecond), state, within)
	default:
		rate := float64(rd.Applied) / rd.Interval.Seconds()
		rd.Estimate = time.Duration(float64(rd.Backlog) / rate * float64(time.Second))
		if rd.Estimate > maxLag {
			rd.Refusal = fmt.Sprintf("%s to apply at %.0f/s, about %s: over %s", transactions(rd.Backlog), rate, roundEstimate(rd.Estimate), within)
		}
	}
	return rd
}

// applierMember loads what a replica received and applied through ch.
func applierMember(inst *dbpilot.Instance, ch *dbpilot.ReplicationChannel) (*member, error) {
	m := &member{inst: inst, key: inst.Key, ch: ch, fam: inst.Flavor.IsMySQLFamily()}
	if m.mysql() {
		return m, m.loadMySQL()
	}
	return m, m.loadMariaDB()
}

// appliedSince counts the transactions b applied that a had not.
func appliedSince(a, b *member) uint64 {
	if b.mysql() {
		return b.execSet.Subtract(a.execSet).Count()
	}
	return mariaBacklog(b.applied, a.applied)
}

// applierWait names the lock the channel's SQL thread or an applier thread
// waits for, or "".
func applierWait(ch *dbpilot.ReplicationChannel, threads []dbpilot.ApplierThread) string {
	if dbpilot.LockWaitState(ch.SQLStateText) {
		return ch.SQLStateText
	}
	for _, t := range threads {
		if t.Wait != "" {
			return t.Wait
		}
	}
	return ""
}

func roundEstimate(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Millisecond)
}

// transactions is "1 transaction", "2 transactions".
func transactions(n uint64) string {
	if n == 1 {
		return "1 transaction"
	}
	return fmt.Sprintf("%d transactions", n)
}
