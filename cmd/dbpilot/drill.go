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
	var gopt drill.GaleraOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "drill failover|switchover|galera-node-loss --sandbox NAME [--rounds K] [--rate R]",
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
cluster).

galera-node-loss runs on a Galera sandbox (sandbox deploy --topology
galera): a client per node (or one, --through NODE) writes numbered rows at
--rate in all, one node (--victim, or a different one each round) is killed
with SIGKILL, and after --after it is started again. Each round measures,
from the surviving nodes' clients:

  write stall        the longest time one of them went without an
                     acknowledged write (the dead member's eviction)
  first ack          the kill to the first write sent after it and
                     acknowledged (the slowest survivor's)
  failed writes      on the surviving nodes
  rejoin             the restart to the node being Synced again, and
                     whether it caught up by IST or needed a full SST

and checks that every acknowledged row is on every node.

Exits 1 when a round failed or lost an acknowledged write.` + exitHelp,
		Example: `  dbpilot drill failover --sandbox demo --rounds 10 --rate 100
  dbpilot drill switchover --sandbox demo --rounds 5 --json
  dbpilot drill galera-node-loss --sandbox gal --rounds 10 --rate 100`,
		Args: exactArgs(1, "failover|switchover|galera-node-loss"),
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
			if opt.Mode == drill.ModeGaleraNodeLoss {
				gopt.Sandbox, gopt.Rounds, gopt.Rate, gopt.Before, gopt.Log = opt.Sandbox, opt.Rounds, opt.Rate, opt.Before, opt.Log
				return a.galeraDrill(cmd, gopt, asJSON)
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
	f.StringVar(&opt.Sandbox, "sandbox", "", "the sandbox to drill (required)")
	f.IntVar(&opt.Rounds, "rounds", 1, "rounds")
	f.IntVar(&opt.Rate, "rate", 50, "writes per second")
	f.Var(durationFlag(&opt.Before, 2*time.Second), "warmup", "writing before each kill")
	f.Var(durationFlag(&opt.PollInterval, time.Second), "poll-interval", "the daemon's poll interval")
	f.BoolVar(&asJSON, "json", false, "print one JSON object: rounds and summary")
	f.StringVar(&gopt.Through, "through", "", "galera-node-loss: write through this node only (default: every node)")
	f.StringVar(&gopt.Victim, "victim", "", "galera-node-loss: the node to kill (default: a different one each round)")
	f.Var(durationFlag(&gopt.After, 10*time.Second), "after", "galera-node-loss: how long the node stays dead before its restart")
	return cmd
}

// galeraDrill runs the Galera node-loss drill and prints its rounds and
// summary.
func (a *app) galeraDrill(cmd *cobra.Command, opt drill.GaleraOptions, asJSON bool) error {
	res, err := drill.RunGalera(cmd.Context(), opt)
	if err != nil {
		return err
	}
	s := res.Summary
	if asJSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "summary: galera-node-loss, %d rounds (%d failed): write stall p50 %.3fs max %.3fs; first ack p50 %.3fs max %.3fs; rejoin p50 %.3fs max %.3fs (%d by IST); failed writes on survivors %d; lost acknowledged writes %d\n",
			s.Rounds, s.Failed, s.StallP50, s.StallMax, s.FirstAckP50, s.FirstAckMax, s.RejoinP50, s.RejoinMax, s.IST, s.FailedWrites, s.LostAcked)
	}
	if s.Failed > 0 || s.LostAcked > 0 {
		return errProblemsFound
	}
	return nil
}
