package main

import (
	"github.com/dbpilot/dbpilot/topology"
	"github.com/spf13/cobra"
)

func (a *app) topologyCommand() *cobra.Command {
	var cf crawlFlags
	cmd := &cobra.Command{
		Use:   "topology HOST:PORT | --sandbox NAME | --server URL [CLUSTER...]",
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
Unreachable servers are shown with their error.

A Galera cluster (found through wsrep_incoming_addresses) is one group, not a
tree: a line "galera NAME [Primary,size N/M]", then each node as

  = host:port [state, Primary|non-Primary, size, recvq, sendq, fc paused %,
               fc_sent, fc_recv, cdd (cert deps distance), version, rw|ro, binlog format]

with its asynchronous replicas drawn under it.

Below a cluster's tree come the servers seen beside it but outside it, one
line each, "- host:port [...]": an old primary started again after a
failover is "former primary, fenced, errant: GTIDS" ("none" when it has no
transactions the primary lacks: 'dbpilot rejoin' attaches it; with errant
ones, 'dbpilot rejoin --reclone'), or "NOT fenced: writable" while it still
takes writes. Crawling directly, a lone server whose own transactions are in
a cluster's primary's history is taken for that cluster's former primary.
With --server, the tree is what serve sees, with serve's problems and the
old primaries it fenced (the JSON carries them as "detached" and "fenced").` + exitHelp,
		Example: `  dbpilot topology 127.0.0.1:3306 --user orchestrator
  dbpilot topology --sandbox demo
  dbpilot topology --server http://127.0.0.1:7070 main
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
			return r.outcome(err)
		},
	}
	cf.register(cmd)
	return cmd
}
