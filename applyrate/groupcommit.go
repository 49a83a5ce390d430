package applyrate

import "github.com/dbpilot/dbpilot"

// GroupCommitOf returns a primary's group commit figures from the
// per-second rates of its counters over the last minute: Binlog_commits,
// Binlog_group_commits and the Binlog_group_commit_trigger_count,
// _timeout and _lock_wait (the settings and Key are the caller's to set).
func GroupCommitOf(commits, groups, triggerCount, triggerTimeout, triggerLockWait float64) dbpilot.GroupCommit {
	gc := dbpilot.GroupCommit{CommitRate: commits, GroupRate: groups,
		TriggerCountRate: triggerCount, TriggerTimeoutRate: triggerTimeout, TriggerLockWaitRate: triggerLockWait,
		WaitCount: -1, WaitUsec: -1}
	if groups > 0 {
		gc.CommitsPerGroup = commits / groups
	}
	return gc
}
