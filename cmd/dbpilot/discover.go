package main

import (
	"context"
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
	f.Var(durationFlag(&c.timeout, 10*time.Second), "timeout", "bound on the whole discovery crawl")
	f.IntVar(&c.concurrency, "concurrency", topology.DefaultConcurrency, "servers inspected at once")
	f.Var(durationFlag(&c.lagThreshold, 10*time.Second), "lag-threshold", "ReplicaLagging above this Seconds_Behind_Master")
	f.Var(durationFlag(&c.maxDetection, 10*time.Second), "max-detection", "SlowFailureDetection when a replica would notice a dead source later than this")
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

// outcome turns a rendering error and the analysis into the command's result:
// errProblemsFound (exit 1) when a critical or warning problem was found.
func (r *crawlResult) outcome(err error) error {
	if err != nil {
		return err
	}
	if r.unhealthy() {
		return errProblemsFound
	}
	return nil
}
