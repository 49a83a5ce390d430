package applyrate

import (
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestAdvise(t *testing.T) {
	primary := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}
	replica := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3307}
	// Recorded from TestCatchUpPrediction's primary: 46 commits/s, 1.01 a
	// group, MariaDB's defaults (wait count 0, usec 100000).
	small := &dbpilot.GroupCommit{Key: primary, CommitRate: 46, GroupRate: 45.4, CommitsPerGroup: 1.0132, WaitCount: 0, WaitUsec: 100000}
	big := &dbpilot.GroupCommit{Key: primary, CommitRate: 800, GroupRate: 200, CommitsPerGroup: 4, WaitCount: 4, WaitUsec: 5000}
	falling := dbpilot.ReplicaApply{Key: replica, State: dbpilot.CatchUpFalling, BacklogTransactions: 5000, ApplyRate: 40, RateSeconds: 30,
		CommitRate: 46, FallingBehindBy: 6, WorkersTotal: 4, WorkersBusy: 1, ParallelMode: "conservative"}
	caught := dbpilot.ReplicaApply{Key: replica, State: dbpilot.CatchUpCaughtUp, CommitRate: 46, WorkersTotal: 4}
	retrying := dbpilot.ReplicaApply{Key: replica, State: dbpilot.CatchUpCaughtUp, CommitRate: 300, ParallelMode: "optimistic", RetryRate: 21, WorkersTotal: 8}
	fewRetries := dbpilot.ReplicaApply{Key: replica, State: dbpilot.CatchUpCaughtUp, CommitRate: 300, ParallelMode: "optimistic", RetryRate: 0.5, WorkersTotal: 8}
	cases := []struct {
		name  string
		gc    *dbpilot.GroupCommit
		apply []dbpilot.ReplicaApply
		codes []dbpilot.ProblemCode
		want  []string // in the first message
		// detail of the first problem
		detail map[string]string
	}{
		{
			// 4 workers: wait for 3 more commits at 46/s = 65218 µs.
			name: "lagging replica, groups of one", gc: small, apply: []dbpilot.ReplicaApply{falling},
			codes: []dbpilot.ProblemCode{dbpilot.ProblemSmallCommitGroups},
			want: []string{"1.01 commits each", "falls behind by 6 tx/s", "binlog_commit_wait_count=4 binlog_commit_wait_usec=65218",
				"about 4 commits", "up to 65.22 ms added", "now: binlog_commit_wait_count=0, _usec=100000"},
			detail: map[string]string{"binlog_commit_wait_usec": "65218", "expected_commits_per_group": "4", "lagging": replica.String()},
		},
		{
			// At 5 commits/s the wait is capped at 100 ms: groups of 1.5.
			name: "slow primary: the wait capped", gc: &dbpilot.GroupCommit{Key: primary, CommitRate: 5, GroupRate: 5, CommitsPerGroup: 1},
			apply: []dbpilot.ReplicaApply{{Key: replica, State: dbpilot.CatchUpCatching, CatchUpSeconds: 900, BacklogTransactions: 900, WorkersTotal: 0}},
			codes: []dbpilot.ProblemCode{dbpilot.ProblemSmallCommitGroups},
			want:  []string{"binlog_commit_wait_count=4 binlog_commit_wait_usec=100000", "about 1.5 commits", "catches up in 900 s", "4 parallel workers (slave_parallel_threads; it has 0)"},
		},
		{name: "no lag: no advice", gc: small, apply: []dbpilot.ReplicaApply{caught}},
		{name: "big groups already", gc: big, apply: []dbpilot.ReplicaApply{falling}},
		{name: "no group commit figures (MySQL, no metrics)", gc: nil, apply: []dbpilot.ReplicaApply{falling}},
		{
			name: "optimistic retries 7%", gc: big, apply: []dbpilot.ReplicaApply{retrying},
			codes: []dbpilot.ProblemCode{dbpilot.ProblemOptimisticRetries},
			want:  []string{"optimistic parallel apply retried 21 transactions/s (7% of the 300 applied/s)", "slave_parallel_mode=conservative"},
		},
		{name: "a few retries", gc: big, apply: []dbpilot.ReplicaApply{fewRetries}},
		{name: "retries in conservative mode are not optimistic's", gc: big, apply: []dbpilot.ReplicaApply{func() dbpilot.ReplicaApply { r := retrying; r.ParallelMode = "conservative"; return r }()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Advise(c.gc, c.apply)
			var codes []dbpilot.ProblemCode
			for _, p := range got {
				codes = append(codes, p.Code)
				if p.Severity != dbpilot.SeverityInfo {
					t.Errorf("%s: severity %s, want info (advice)", p.Code, p.Severity)
				}
			}
			if len(codes) != len(c.codes) || (len(codes) > 0 && codes[0] != c.codes[0]) {
				t.Fatalf("codes %v, want %v", codes, c.codes)
			}
			for _, w := range c.want {
				if !strings.Contains(got[0].Message, w) {
					t.Errorf("message lacks %q:\n%s", w, got[0].Message)
				}
			}
			for k, v := range c.detail {
				if got[0].Detail[k] != v {
					t.Errorf("detail %s = %q, want %q", k, got[0].Detail[k], v)
				}
			}
		})
	}
}

func TestGroupCommitOf(t *testing.T) {
	gc := GroupCommitOf(120, 40, 10, 20, 10)
	if gc.CommitsPerGroup != 3 || gc.WaitCount != -1 || gc.WaitUsec != -1 || gc.TriggerTimeoutRate != 20 {
		t.Errorf("%+v", gc)
	}
	if gc := GroupCommitOf(0, 0, 0, 0, 0); gc.CommitsPerGroup != 0 {
		t.Errorf("no groups: %+v", gc)
	}
}
