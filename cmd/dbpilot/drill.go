package main

import (
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/drill"
	"github.com/spf13/cobra"
)

func (a *app) drillCommand() *cobra.Command {
	var opt drill.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "drill failover|switchover --sandbox NAME [--rounds K] [--rate R]",
		Short: "Prove recovery with a real kill and count lost writes",
		Long: `Run failover (SIGKILL of the primary) or switchover drills on a replication
sandbox. A writer commits uniquely numbered rows at --rate per second as an
application account (no privilege bypasses read_only) to whichever server is
primary, finding the new one by probing. Each round measures

  write-unavailable  the kill (or the switchover request) to the first
                     acknowledged write on the new primary
  detection          the kill to dbpilot declaring the primary dead

and checks that every acknowledged row exists on the new primary and that
every surviving replica replicates from it. Between rounds the killed node is
started again: dbpilot fences it and, with no errant transactions, rejoins it
as a replica; otherwise the sandbox is redeployed.

The drill runs dbpilot's daemon in-process with the sandbox's state file:
stop a 'dbpilot serve --sandbox NAME' first (two daemons must not recover one
cluster). Exits 1 when a round failed or lost an acknowledged write.` + exitHelp,
		Example: `  dbpilot drill failover --sandbox demo --rounds 10 --rate 100
  dbpilot drill switchover --sandbox demo --rounds 5 --json`,
		Args: exactArgs(1, "failover|switchover"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt.Mode = args[0]
			if opt.Sandbox == "" {
				return dbpilot.Errorf(dbpilot.EINVALID, "drill needs --sandbox NAME")
			}
			if !asJSON {
				opt.Log = a.stdout
			} else {
				opt.Log = a.stderr
			}
			opt.Verbose = a.verbose
			res, err := drill.Run(cmd.Context(), opt)
			if err != nil {
				return err
			}
			s := res.Summary
			if asJSON {
				if err := writeJSON(a.stdout, res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "summary: %s drill, semi-sync %s, %d rounds (%d failed): write-unavailable p50 %.3fs p95 %.3fs max %.3fs; detection p50 %.3fs; lost acknowledged writes %d\n",
					s.Mode, onOff(s.SemiSync), s.Rounds, s.Failed, s.P50S, s.P95S, s.MaxS, s.DetectP50S, s.LostAcked)
			}
			if s.Failed > 0 || s.LostAcked > 0 {
				return errProblemsFound
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Sandbox, "sandbox", "", "the replication sandbox to drill (required)")
	f.IntVar(&opt.Rounds, "rounds", 1, "rounds")
	f.IntVar(&opt.Rate, "rate", 50, "writes per second")
	f.DurationVar(&opt.Before, "warmup", 2*time.Second, "writing before each kill")
	f.DurationVar(&opt.PollInterval, "poll-interval", time.Second, "the daemon's poll interval")
	f.BoolVar(&asJSON, "json", false, "print one JSON object: rounds and summary")
	return cmd
}
