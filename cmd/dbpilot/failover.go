package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) failoverCommand() *cobra.Command {
	var sf serviceFlags
	var opt dbpilot.OperationOptions
	cmd := &cobra.Command{
		Use:   "failover CLUSTER",
		Short: "Recover a cluster whose primary is dead (manual failover)",
		Long: `Recover a cluster whose primary is dead: choose the replica that received the
most in every GTID domain (honouring promotion rules), catch it up from
other replicas where it lacks something, wait for it to apply its relay log,
promote it, and repoint every other replica to it. A replica that cannot
follow is reported, never dropped silently.

It refuses when the primary is alive, when it answers but refuses dbpilot's
user (a locked or rotated account, too many connections: it is alive), or
when dbpilot cannot reach it but its replicas still replicate from it (use
'dbpilot switchover' for planned changes). --force overrides that refusal when
you know the primary is down or fenced; it is audited. It ignores the anti-flapping block: you asked. --dry-run prints the
plan with the reason for each decision and changes nothing.` + exitHelp,
		Example: `  dbpilot failover demo --sandbox demo --dry-run
  dbpilot failover main --server http://127.0.0.1:7070`,
		Args: exactArgs(1, "CLUSTER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, done, err := sf.open(cmd.Context(), a, false)
			if err != nil {
				return err
			}
			defer done()
			rec, err := svc.Failover(cmd.Context(), args[0], opt)
			if rec != nil {
				printRecovery(a.stdout, rec, opt.DryRun)
			}
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "print the plan; change nothing")
	cmd.Flags().BoolVar(&opt.Force, "force", false, "fail over although the primary is not confirmed dead (it refuses dbpilot's user, or only dbpilot cannot reach it): you vouch that it is down or fenced; audited")
	cmd.Flags().BoolVar(&opt.ForceWithoutCoordination, "force-without-coordination", false, "with coordinated serves (--server): fail over even though etcd is unavailable (audited; another serve might act too)")
	return cmd
}

// printRecovery prints a recovery (or a dry run's plan) for people.
func printRecovery(w io.Writer, r *dbpilot.Recovery, dryRun bool) {
	if dryRun {
		fmt.Fprintf(w, "dry run: %s of cluster %s (nothing changed)\n", r.Kind, r.Cluster)
	} else {
		state := "succeeded"
		if !r.Success {
			state = "FAILED"
		}
		took := ""
		if !r.Ended.IsZero() {
			took = " in " + r.Ended.Sub(r.Started).Round(time.Millisecond).String()
		}
		fmt.Fprintf(w, "recovery %d: %s of cluster %s %s%s\n", r.ID, r.Kind, r.Cluster, state, took)
	}
	if !r.OldPrimary.IsZero() {
		fmt.Fprintf(w, "  from: %s\n", r.OldPrimary)
	}
	if !r.NewPrimary.IsZero() {
		fmt.Fprintf(w, "  to:   %s\n", r.NewPrimary)
	}
	for _, k := range r.LostReplicas {
		fmt.Fprintf(w, "  lost replica: %s\n", k)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	if r.Plan != "" {
		fmt.Fprintln(w, "  plan:")
		for _, l := range strings.Split(strings.TrimRight(r.Plan, "\n"), "\n") {
			fmt.Fprintln(w, "    "+l)
		}
	}
}
