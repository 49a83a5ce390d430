package main

import (
	"fmt"
	"os/user"

	"github.com/spf13/cobra"
)

func (a *app) ackCommand() *cobra.Command {
	var sf serviceFlags
	var comment, by string
	cmd := &cobra.Command{
		Use:   "ack CLUSTER [--comment TEXT]",
		Short: "Acknowledge a cluster's recoveries, unblocking automatic recovery",
		Long: `After a recovery, automatic recovery of the cluster is blocked for
block_period (default 10 minutes) so that a flapping cluster is not failed
over again and again. Acknowledging the recoveries lifts the block.` + exitHelp,
		Example: "  dbpilot ack demo --sandbox demo --comment 'checked, old primary rebuilt'",
		Args:    exactArgs(1, "CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if by == "" {
				by = "unknown"
				if u, err := user.Current(); err == nil {
					by = u.Username
				}
			}
			svc, done, err := sf.open(cmd.Context(), a, false)
			if err != nil {
				return err
			}
			defer done()
			n, err := svc.Ack(cmd.Context(), args[0], by, comment)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "cluster %s: %d recoveries acknowledged; automatic recovery unblocked\n", args[0], n)
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&comment, "comment", "", "why (kept in the audit log)")
	cmd.Flags().StringVar(&by, "by", "", "who acknowledges (default: the OS user)")
	return cmd
}
