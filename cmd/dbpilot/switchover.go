package main

import (
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
the new one. If the candidate cannot catch up in time, the old primary is
made writable again and nothing else changes.

Without --to the best candidate is chosen as for a failover.` + exitHelp,
		Example: `  dbpilot switchover demo --sandbox demo --to 127.0.0.1:28142
  dbpilot switchover main --server http://127.0.0.1:7070 --dry-run`,
		Args: exactArgs(1, "CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	return cmd
}
