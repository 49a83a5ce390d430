package main

import (
	"fmt"
	"strings"

	"github.com/dbpilot/dbpilot/topology"
	"github.com/spf13/cobra"
)

func (a *app) analyzeCommand() *cobra.Command {
	var cf crawlFlags
	cmd := &cobra.Command{
		Use:   "analyze HOST:PORT | --sandbox NAME | --server URL [CLUSTER...]",
		Short: "Discover a topology and list the problems found, per cluster and per server",
		Long: `Discover a topology like 'dbpilot topology' and analyze it (with --server: the
problems a running serve found in the clusters it watches). Problems:

  DeadPrimary            a primary dbpilot cannot read whose reachable replicas
                         all lost it too: serve fails it over
  UnreachablePrimary     a primary dbpilot cannot read that a replica still
                         replicates from, or whose replicas cannot be read: not
                         confirmed dead, no failover
  Unreachable            a server cannot be read (the error is shown)
  ReplicationIOStopped   a channel's IO thread is stopped or failing to connect
  ReplicationSQLStopped  a channel's SQL thread is stopped (with the last error)
  ReplicaLagging         Seconds_Behind_Master above --lag-threshold
  ErrantGTID             a replica has GTIDs its sources lack (MariaDB: from
                         gtid_binlog_state; MySQL: gtid_executed)
  ReplicaNotReadOnly     a replica accepts writes
  PrimaryReadOnly        a primary with replicas is read_only
  NoBinlog               a replica without log_bin (cannot be promoted)
  NoLogReplicaUpdates    a replica without log_slave_updates (its replicas would
                         miss transactions after a promotion)
  SemiSyncNoReplicas     semi-sync is on at a primary but no replica acknowledges
  SemiSyncPrimaryOnReplica  a leaf replica's semi-sync primary side is on: applied commits may wait its timeout
  SlowFailureDetection   heartbeat / slave_net_timeout settings that delay
                         noticing a dead source beyond --max-detection
  NoGTID                 a channel that does not replicate with GTID
  MultipleWritable       two writable servers in one cluster (a writable old
                         primary beside the new one, a ring with two writers)
  FencedOldPrimary       a former primary back after a failover, read_only and
                         outside the cluster: warning; critical when it has
                         errant transactions (GTIDs the primary lacks), which
                         'dbpilot rejoin --reclone' discards

Advice (info: not a problem for the exit code; with --server only, from
serve's metrics of the last minute):
  SmallCommitGroups      replicas lag while the primary's binlog groups carry
                         about one commit each: what binlog_commit_wait_count
                         and _usec would buy (groups of min(N, 1 + R·U)
                         commits at the measured R commits/s) and cost (up
                         to U added to each commit)
  OptimisticRetries      a replica's optimistic parallel apply retries many
                         transactions (Slave_retried_transactions):
                         slave_parallel_mode=conservative does not retry

Galera clusters (one group of writers, not a tree):
  NonPrimaryComponent    a node lost quorum (non-Primary): it refuses queries
  ClusterSizeMismatch    the Primary component has fewer members than the
                         cluster (wsrep_cluster_address, nodes seen before)
  NodeDesynced           a node desynced with wsrep_desync=ON, for how long,
                         with its receive queue
  DesyncLeftOn           wsrep_desync=ON with no state transfer or known backup
  SSTInProgress          a node receives (joiner) or donates (donor) a state
                         transfer
  NodeNotSynced          a node Joined, catching up, or otherwise not Synced
  FlowControlActive      flow control paused the cluster beyond 10% of the
                         time, on the node that sends it
  RecvQueueGrowing       a node's receive queue above gcs.fc_limit's default
                         (16) and growing` + exitHelp,
		Example: `  dbpilot analyze --sandbox demo
  dbpilot analyze 10.0.0.5:3306 --lag-threshold 30s --json
  dbpilot analyze --server http://127.0.0.1:7070 main`,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := cf.crawl(cmd.Context(), args)
			if err != nil {
				return err
			}
			var health []topology.ClusterHealth
			for _, c := range r.clusters {
				health = append(health, topology.Summarize(c, r.problems))
			}
			if cf.asJSON {
				if health == nil {
					health = []topology.ClusterHealth{}
				}
				err = writeJSON(a.stdout, map[string]any{"clusters": health, "healthy": !r.unhealthy()})
			} else {
				err = printAnalysis(a, health)
			}
			return r.outcome(err)
		},
	}
	cf.register(cmd)
	return cmd
}

func printAnalysis(a *app, health []topology.ClusterHealth) error {
	for i, h := range health {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		var prim []string
		for _, p := range h.Primaries {
			prim = append(prim, p.String())
		}
		state := "healthy"
		if !h.Healthy {
			state = "PROBLEMS"
		}
		if g := h.Galera; g != nil {
			name := g.Name
			if name == "" {
				name = h.Name
			}
			comp := fmt.Sprintf("%d of %d nodes in the Primary component", g.Size, max(g.Configured, len(g.Nodes)))
			if !g.Primary {
				comp = "no node in a Primary component"
			}
			fmt.Fprintf(a.stdout, "cluster %s: %s (%d instances, galera %s: %s)\n", h.Name, state, h.Instances, name, comp)
		} else {
			fmt.Fprintf(a.stdout, "cluster %s: %s (%d instances, primary %s)\n", h.Name, state, h.Instances, strings.Join(prim, ", "))
		}
		if len(h.Problems) == 0 {
			fmt.Fprintln(a.stdout, "  no problems found")
		}
		for _, p := range h.Problems {
			where := p.Instance.String()
			if p.Channel != "" {
				where += " [" + p.Channel + "]"
			}
			fmt.Fprintf(a.stdout, "  %-8s %-22s %-21s %s\n", p.Severity, where, p.Code, p.Message)
		}
	}
	return nil
}
