package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) rejoinCommand() *cobra.Command {
	var sf serviceFlags
	var opt dbpilot.OperationOptions
	var cluster string
	cmd := &cobra.Command{
		Use:   "rejoin HOST:PORT [--cluster NAME] [--reclone] [--dry-run]",
		Short: "Attach a fenced old primary (or another detached server) below the cluster's primary",
		Long: `Attach a server seen beside a cluster but outside its replication tree — an
old primary that came back after a failover, which serve set read_only
(fenced) — below the cluster's current primary as a replica: read_only is
kept, CHANGE MASTER with GTID positioning (MariaDB: its gtid_slave_pos taken
from its binary log first, so it does not ask for its own transactions
again), the semi-sync replica side on when the cluster uses semi-sync, then
replication is started and verified. 'dbpilot topology' and the status
(GET /api/clusters/NAME: fenced) show a fenced old primary with its errant
GTIDs: the transactions it has that the primary lacks, written on it before
it was fenced, that no replica received.

A server with errant transactions is refused, naming them: attached as it
is, it would keep them and diverge. --reclone re-provisions it instead from
a replica of the cluster (the primary when there is none), through the
clone path ('dbpilot clone'): its replication is removed, its databases the
replica lacks are dropped, its binary log is reset (RESET MASTER: the errant
transactions are discarded), the replica's data is copied in (dump and
restore), then it is attached below the primary. Nothing is discarded
silently: the errant GTIDs are written to the audit log ('dbpilot recoveries
--audit') before anything changes, and printed here. --dry-run prints the
plan and changes nothing.

After a rejoin serve no longer treats the server as a fenced old primary:
it is a replica like the others. The cluster is found from the server
(--cluster names it when several clusters are watched). Through serve
(--server), the API token is needed: POST /api/clusters/NAME/rejoin.` + exitHelp,
		Example: `  dbpilot rejoin 127.0.0.1:28141 --sandbox demo
  dbpilot rejoin 127.0.0.1:28141 --sandbox demo --reclone --dry-run
  dbpilot rejoin 10.0.0.5:3306 --cluster main --server http://127.0.0.1:7070 --reclone`,
		Args: exactArgs(1, "HOST:PORT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := dbpilot.ParseInstanceKey(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			svc, done, err := sf.open(ctx, a, false)
			if err != nil {
				return err
			}
			defer done()
			if cluster == "" {
				if cluster, err = clusterBeside(ctx, svc, key); err != nil {
					return err
				}
			}
			if opt.Reclone && !opt.DryRun {
				// What is discarded is said before the copy starts.
				plan, err := svc.Rejoin(ctx, cluster, key, dbpilot.OperationOptions{DryRun: true, Reclone: true})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "re-provisioning %s (cluster %s); the plan:\n", key, cluster)
				for _, l := range strings.Split(strings.TrimRight(plan.Plan, "\n"), "\n") {
					fmt.Fprintln(a.stdout, "  "+l)
				}
			}
			rec, err := svc.Rejoin(ctx, cluster, key, opt)
			if rec != nil {
				printRecovery(a.stdout, rec, opt.DryRun)
			}
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster to attach it to (default: the one it is seen beside)")
	cmd.Flags().BoolVar(&opt.Reclone, "reclone", false, "re-provision it from a replica first (its data, binary log and errant transactions discarded; the errant GTIDs audited)")
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "check and print the plan; change nothing")
	return cmd
}

// clusterBeside names the watched cluster that key is seen beside: a
// fenced old primary of it, or a server discovered outside its tree; a
// member's cluster too (the service then says there is nothing to rejoin).
// With one cluster watched, that one.
func clusterBeside(ctx context.Context, svc dbpilot.ClusterService, key dbpilot.InstanceKey) (string, error) {
	all, err := svc.Clusters(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range all {
		for _, f := range c.Fenced {
			if f.Key.Equal(key) {
				return c.Name, nil
			}
		}
	}
	for _, c := range all {
		for _, i := range append(append([]*dbpilot.Instance(nil), c.Detached...), c.Instances...) {
			if i.Key.Equal(key) {
				return c.Name, nil
			}
		}
	}
	if len(all) == 1 {
		return all[0].Name, nil
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	return "", dbpilot.Errorf(dbpilot.ENOTFOUND, "rejoin: %s is not seen beside any watched cluster (%s): name one with --cluster NAME", key, strings.Join(names, ", "))
}
