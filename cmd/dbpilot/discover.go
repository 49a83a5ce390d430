package main

import (
	"context"
	"fmt"
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

	server, token string // --server: serve's view instead of a crawl
	serverCA      string // --server-ca
}

func (c *crawlFlags) register(cmd *cobra.Command) {
	c.targetFlags.register(cmd)
	f := cmd.Flags()
	f.BoolVar(&c.asJSON, "json", false, "print JSON")
	f.Var(durationFlag(&c.timeout, 10*time.Second), "timeout", "bound on the whole discovery crawl")
	f.IntVar(&c.concurrency, "concurrency", topology.DefaultConcurrency, "servers inspected at once")
	f.Var(durationFlag(&c.lagThreshold, 10*time.Second), "lag-threshold", "ReplicaLagging above this Seconds_Behind_Master")
	f.Var(durationFlag(&c.maxDetection, 10*time.Second), "max-detection", "SlowFailureDetection when a replica would notice a dead source later than this")
	f.StringVar(&c.server, "server", "", "show what a running 'dbpilot serve' at this URL sees (its clusters, or those named as arguments: members, fenced old primaries, problems) instead of crawling")
	f.StringVar(&c.token, "token", "", "API token for --server when serve needs one for reads (default $DBPILOT_TOKEN, or the sandbox's token)")
	serverCAFlag(f, &c.serverCA)
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
	if c.server != "" {
		return c.fromServer(ctx, args)
	}
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
	// An old primary started again after a failover is a lone server:
	// drawn below the cluster it left, fenced or not, with its errant GTIDs.
	clusters, detached := topology.Detach(topology.Clusters(instances))
	return &crawlResult{instances: instances, clusters: clusters, problems: append(problems, detached...)}, nil
}

// fromServer reads the clusters a running serve watches (all, or those
// named; with --sandbox and no name, the sandbox's) with serve's analysis:
// its problems, its detached servers and fenced old primaries.
func (c *crawlFlags) fromServer(ctx context.Context, names []string) (*crawlResult, error) {
	if c.node != "" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "--node reads a server directly: it does not go with --server")
	}
	cl := (&serviceFlags{server: c.server, token: c.token, sandbox: c.sandbox, ca: c.serverCA}).client()
	if len(names) == 0 && c.sandbox != "" {
		names = []string{c.sandbox}
	}
	var sts []*dbpilot.ClusterStatus
	if len(names) == 0 {
		all, err := cl.Clusters(ctx)
		if err != nil {
			return nil, err
		}
		sts = all
	}
	for _, n := range names {
		st, err := cl.ClusterStatus(ctx, n)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	r := &crawlResult{}
	for _, st := range sts {
		comps := topology.Clusters(st.Instances)
		if len(comps) == 0 {
			comps = []*dbpilot.Cluster{{}}
		}
		home := comps[0] // the one holding the primary gets the detached servers
		for i, comp := range comps {
			comp.Name = st.Name
			if len(comps) > 1 {
				comp.Name = fmt.Sprintf("%s (part %d)", st.Name, i+1)
			}
			if comp.Instance(st.Primary) != nil {
				home = comp
			}
		}
		home.Detached, home.Fenced = st.Detached, st.Fenced
		r.clusters = append(r.clusters, comps...)
		r.instances = append(r.instances, st.Instances...)
		r.problems = append(r.problems, st.Problems...)
	}
	return r, nil
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
