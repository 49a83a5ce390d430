package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/topology"
	"github.com/spf13/cobra"
)

// crawlFlags are shared by topology and analyze.
type crawlFlags struct {
	targetFlags
	asJSON       bool
	timeout      time.Duration
	concurrency  int
	lagThreshold time.Duration
	maxDetection time.Duration
}

func (c *crawlFlags) register(cmd *cobra.Command) {
	c.targetFlags.register(cmd)
	f := cmd.Flags()
	f.BoolVar(&c.asJSON, "json", false, "print JSON")
	f.DurationVar(&c.timeout, "timeout", 10*time.Second, "bound on the whole discovery crawl")
	f.IntVar(&c.concurrency, "concurrency", topology.DefaultConcurrency, "servers inspected at once")
	f.DurationVar(&c.lagThreshold, "lag-threshold", 10*time.Second, "ReplicaLagging above this Seconds_Behind_Master")
	f.DurationVar(&c.maxDetection, "max-detection", 10*time.Second, "SlowFailureDetection when a replica would notice a dead source later than this")
}

// crawlResult is one discovery and analysis.
type crawlResult struct {
	instances []*dbpilot.Instance
	clusters  []*dbpilot.Cluster
	problems  []dbpilot.Problem
}

// unhealthy reports whether a critical or warning problem was found.
func (r *crawlResult) unhealthy() bool {
	for _, p := range r.problems {
		if p.Severity == dbpilot.SeverityCritical || p.Severity == dbpilot.SeverityWarning {
			return true
		}
	}
	return false
}

// crawl discovers every server reachable from the targets and analyzes them.
// It fails with a connection error when no server at all could be read.
func (c *crawlFlags) crawl(ctx context.Context, args []string) (*crawlResult, error) {
	seeds, opts, err := c.resolve(args)
	if err != nil {
		return nil, err
	}
	topt := topology.Options{Concurrency: c.concurrency, Timeout: c.timeout}
	if err := topt.Validate(); err != nil {
		return nil, err
	}
	if c.lagThreshold <= 0 || c.maxDetection <= 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "--lag-threshold and --max-detection must be positive")
	}
	in := mysql.NewInspector(opts)
	defer in.Close()
	instances, err := topology.Discover(ctx, in, seeds, topt)
	if err != nil {
		return nil, err
	}
	reachable := 0
	var firstErr string
	for _, i := range instances {
		if i.Reachable {
			reachable++
		} else if firstErr == "" {
			firstErr = i.LastError
		}
	}
	if reachable == 0 {
		if len(seeds) == 1 {
			return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "%s", firstErr)
		}
		return nil, dbpilot.Errorf(dbpilot.EUNAVAIL, "no server reachable (%s)", firstErr)
	}
	problems := topology.Analyze(instances, topology.AnalyzeOptions{LagThreshold: c.lagThreshold, MaxDetection: c.maxDetection})
	return &crawlResult{instances: instances, clusters: topology.Clusters(instances), problems: problems}, nil
}

func (a *app) topologyCommand() *cobra.Command {
	var cf crawlFlags
	cmd := &cobra.Command{
		Use:   "topology HOST:PORT | --sandbox NAME",
		Short: "Discover a replication topology from any member and draw it as a tree",
		Long: `Discover every server connected to the given one — up through its replication
sources and down through SHOW SLAVE HOSTS / SHOW REPLICAS (falling back to the
processlist's Binlog Dump threads) — concurrently, each server once, so rings
and co-primaries terminate. Then draw each cluster as a tree, one line per
server:

  host:port [lag, replication ok|broken, version, rw|ro, binlog format, GTID, semi-sync role] problems

Lag is "-" for a primary and "null" when the server does not know it. A ring
is drawn from its lowest key with the closing edge marked "(ring → KEY)"; a
multi-source replica appears under each of its sources with its channel name.
Unreachable servers are shown with their error.` + exitHelp,
		Example: `  dbpilot topology 127.0.0.1:3306 --user orchestrator
  dbpilot topology --sandbox demo
  dbpilot topology --sandbox demo --json | jq '.clusters[0].edges'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := cf.crawl(cmd.Context(), args)
			if err != nil {
				return err
			}
			if cf.asJSON {
				err = topology.RenderJSON(a.stdout, r.clusters, r.problems)
			} else {
				err = topology.RenderText(a.stdout, r.clusters, r.problems)
			}
			if err != nil {
				return err
			}
			if r.unhealthy() {
				return errProblemsFound
			}
			return nil
		},
	}
	cf.register(cmd)
	return cmd
}

func (a *app) analyzeCommand() *cobra.Command {
	var cf crawlFlags
	cmd := &cobra.Command{
		Use:   "analyze HOST:PORT | --sandbox NAME",
		Short: "Discover a topology and list the problems found, per cluster and per server",
		Long: `Discover a topology like 'dbpilot topology' and analyze it. Problems:

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
  SlowFailureDetection   heartbeat / slave_net_timeout settings that delay
                         noticing a dead source beyond --max-detection
  NoGTID                 a channel that does not replicate with GTID` + exitHelp,
		Example: `  dbpilot analyze --sandbox demo
  dbpilot analyze 10.0.0.5:3306 --lag-threshold 30s --json`,
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
			if err != nil {
				return err
			}
			if r.unhealthy() {
				return errProblemsFound
			}
			return nil
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
		fmt.Fprintf(a.stdout, "cluster %s: %s (%d instances, primary %s)\n", h.Name, state, h.Instances, strings.Join(prim, ", "))
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
