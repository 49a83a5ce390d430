package main

import (
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) switchoverCommand() *cobra.Command {
	var sf serviceFlags
	var opt dbpilot.OperationOptions
	var to string
	cmd := &cobra.Command{
		Use:   "switchover CLUSTER [--to HOST:PORT]",
		Short: "Replace a live primary with a replica (planned, no lost writes)",
		Long: `Planned primary change: set the old primary read_only, end lingering writer
connections after a grace period, wait until the candidate has applied the
old primary's last GTID (MASTER_GTID_WAIT / WAIT_FOR_EXECUTED_GTID_SET),
promote it, repoint the other replicas, and make the old primary a replica of
the new one.

Before anything changes the candidate is checked: one that cannot apply what
it has left within --max-lag (switchover.max_lag, default 10s) is refused,
in one line naming it, its lag or backlog and the setting: its
Seconds_Behind_Master beyond the bound; transactions received but not
applied while its SQL thread is stopped or an applier thread waits for a
lock (a session on the replica holding a table or row lock); nothing applied
in 500ms; or its backlog at the rate it applies taking longer than the
bound. A candidate with nothing left to apply passes.

Writes stay refused on the old primary at most --drain-timeout
(switchover.drain_timeout, default 5s, kill_grace included) while the
candidate applies its last transactions; then the old primary is made
writable again, nothing else changes, and the switchover fails with one
message naming switchover.drain_timeout (audited).

Without --to the best candidate is chosen as for a failover, among those
within the bound.` + exitHelp,
		Example: `  dbpilot switchover demo --sandbox demo --to 127.0.0.1:28142
  dbpilot switchover main --server http://127.0.0.1:7070 --dry-run`,
		Args: exactArgs(1, "CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := notNegative("--max-lag", opt.MaxLag); err != nil {
				return err
			}
			if err := notNegative("--drain-timeout", opt.DrainTimeout); err != nil {
				return err
			}
			if to != "" {
				k, err := dbpilot.ParseInstanceKey(to)
				if err != nil {
					return err
				}
				opt.To = k
			}
			svc, done, err := sf.open(cmd.Context(), a, false)
			if err != nil {
				return err
			}
			defer done()
			rec, err := svc.Switchover(cmd.Context(), args[0], opt)
			if rec != nil {
				printRecovery(a.stdout, rec, opt.DryRun)
			}
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the replica to promote (default: the best candidate)")
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "print the plan; change nothing")
	cmd.Flags().Var(durationFlag(&opt.MaxLag, 0), "max-lag", "refuse a candidate that cannot catch up within this (default: switchover.max_lag, 10s)")
	cmd.Flags().Var(durationFlag(&opt.DrainTimeout, 0), "drain-timeout", "roll back when the candidate has not caught up this long after writes stopped (default: switchover.drain_timeout, 5s)")
	return cmd
}

// notNegative refuses a negative duration flag.
func notNegative(flag string, d time.Duration) error {
	if d < 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "%s %s is negative: give a positive duration such as 10s, or leave it out for the configured setting", flag, d)
	}
	return nil
}
