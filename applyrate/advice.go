package applyrate

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dbpilot/dbpilot"
)

// Thresholds of the advice.
const (
	// SmallGroups: commits per group below it are "about one".
	SmallGroups = 1.5
	// MaxWaitUsec is the largest binlog_commit_wait_usec advised (100 ms,
	// MariaDB's default for it).
	MaxWaitUsec = 100000
	// RetryShare: retries above this share of the transactions applied
	// (or above RetryRate a second) are "a lot".
	RetryShare = 0.05
	RetryRate  = 1.0
	// defaultGroup is the group size aimed at when the lagging replica's
	// workers are not known.
	defaultGroup = 4
)

// Advise returns the advice, as info problems with their evidence, that
// a cluster's group commit figures (nil: none) and its replicas' apply
// figures support:
//
//   - SmallCommitGroups, on the primary: a replica lags (catching up or
//     falling behind) while groups carry fewer than SmallGroups commits.
//     At R commits/s, waiting up to U µs or N commits
//     (binlog_commit_wait_usec, binlog_commit_wait_count) gives groups of
//     about min(N, 1 + R·U/1e6) commits, at the cost of up to U µs added
//     to each commit. N is the lagging replica's parallel workers (4 when
//     unknown), U the time R takes to bring N−1 more commits, at most
//     MaxWaitUsec.
//   - OptimisticRetries, on a replica in optimistic or aggressive mode
//     whose retries exceed RetryShare of what it applies or RetryRate a
//     second: conservative mode applies in parallel only what the primary
//     committed together, and does not retry.
func Advise(gc *dbpilot.GroupCommit, apply []dbpilot.ReplicaApply) []dbpilot.Problem {
	var out []dbpilot.Problem
	if gc != nil && gc.CommitRate > 0 && gc.GroupRate > 0 && gc.CommitsPerGroup < SmallGroups {
		var lagging *dbpilot.ReplicaApply
		for i := range apply {
			a := &apply[i]
			if a.State != dbpilot.CatchUpCatching && a.State != dbpilot.CatchUpFalling {
				continue
			}
			if lagging == nil || a.State == dbpilot.CatchUpFalling && lagging.State != dbpilot.CatchUpFalling ||
				a.State == lagging.State && a.BacklogTransactions > lagging.BacklogTransactions {
				lagging = a
			}
		}
		if lagging != nil {
			out = append(out, smallGroups(gc, lagging))
		}
	}
	for _, a := range apply {
		if a.ParallelMode != "optimistic" && a.ParallelMode != "aggressive" || a.RetryRate <= 0 {
			continue
		}
		applied := a.ApplyRate
		if a.RateSeconds == 0 {
			applied = a.CommitRate
		}
		share := 0.0
		if applied > 0 {
			share = a.RetryRate / applied
		}
		if a.RetryRate < RetryRate && share < RetryShare {
			continue
		}
		out = append(out, dbpilot.Problem{Code: dbpilot.ProblemOptimisticRetries, Severity: dbpilot.SeverityInfo, Instance: a.Key,
			Message: fmt.Sprintf("%s parallel apply retried %s transactions/s (%s%% of the %s applied/s) over the last minute: transactions applied in parallel conflict and are rolled back and applied again; slave_parallel_mode=conservative applies in parallel only what the primary committed together and does not retry",
				a.ParallelMode, num(a.RetryRate), num(100*share), num(applied)),
			Detail: map[string]string{"parallel_mode": a.ParallelMode, "retry_rate": num(a.RetryRate), "apply_rate": num(applied), "advice": "slave_parallel_mode=conservative"}})
	}
	return out
}

// smallGroups is the SmallCommitGroups advice for lagging a replica.
func smallGroups(gc *dbpilot.GroupCommit, lagging *dbpilot.ReplicaApply) dbpilot.Problem {
	n := defaultGroup
	if lagging.WorkersTotal > 1 {
		n = lagging.WorkersTotal
	}
	// The wait that brings n-1 more commits at the measured rate.
	u := math.Ceil(float64(n-1) / gc.CommitRate * 1e6)
	u = math.Min(u, MaxWaitUsec)
	group := math.Min(float64(n), 1+gc.CommitRate*u/1e6)
	behind := "catches up in " + strconv.FormatFloat(math.Round(lagging.CatchUpSeconds), 'f', 0, 64) + " s"
	if lagging.State == dbpilot.CatchUpFalling {
		behind = "falls behind by " + num(lagging.FallingBehindBy) + " tx/s"
	}
	workers := fmt.Sprintf("its %d parallel workers", lagging.WorkersTotal)
	if lagging.WorkersTotal <= 1 {
		workers = fmt.Sprintf("%d parallel workers (slave_parallel_threads; it has %d)", n, lagging.WorkersTotal)
	}
	msg := fmt.Sprintf("groups carry %s commits each (%s commits/s in %s groups/s) while %s lags (backlog %d tx, %s): binlog_commit_wait_count=%d binlog_commit_wait_usec=%d would make groups of about %s commits (min(%d, 1 + %s/s × %s ms)) for %s to apply at once; the cost is up to %s ms added to each commit's latency (now: binlog_commit_wait_count=%d, _usec=%d)",
		num(gc.CommitsPerGroup), num(gc.CommitRate), num(gc.GroupRate), lagging.Key, lagging.BacklogTransactions, behind,
		n, int64(u), num(group), n, num(gc.CommitRate), num(u/1000), workers, num(u/1000), gc.WaitCount, gc.WaitUsec)
	return dbpilot.Problem{Code: dbpilot.ProblemSmallCommitGroups, Severity: dbpilot.SeverityInfo, Instance: gc.Key, Message: msg,
		Detail: map[string]string{
			"commits_per_group": num(gc.CommitsPerGroup), "commit_rate": num(gc.CommitRate), "lagging": lagging.Key.String(),
			"binlog_commit_wait_count": strconv.Itoa(n), "binlog_commit_wait_usec": strconv.FormatInt(int64(u), 10),
			"expected_commits_per_group": num(group), "added_latency_ms": num(u / 1000)}}
}

// num formats a figure with up to 2 decimals.
func num(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
