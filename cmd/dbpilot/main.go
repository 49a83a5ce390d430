// Command dbpilot deploys, discovers, watches, heals, backs up and load-tests
// MySQL and MariaDB replication. See `dbpilot --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/spf13/cobra"
)

// Exit statuses, documented in --help.
const (
	exitOK       = 0
	exitProblems = 1 // analysis found problems; a command's check failed
	exitError    = 2 // usage, connection or other error
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const exitHelp = `
Exit status:
  0  success (analyze: healthy)
  1  problems found (analyze, topology with problems)
  2  usage error, connection error, or failure`

// app holds what every command shares.
type app struct {
	stdout, stderr io.Writer
	log            *slog.Logger
	verbose        bool
}

func main() {
	mysql.SilenceDriverLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	atExit()
	os.Exit(code)
}

// atExit runs before the process exits (the pprof build stops its CPU profile there).
var atExit = func() {}

// problemsFound is returned by commands that ran fine but found problems.
var errProblemsFound = errors.New("problems found")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errProblemsFound):
		return exitProblems
	}
	fmt.Fprintln(stderr, "dbpilot: "+oneLine(err))
	return exitError
}

// oneLine keeps the first line of an error and, when it goes on, the
// indented detail (e.g. an error log tail) that follows it.
func oneLine(err error) string {
	return strings.TrimRight(err.Error(), "\n")
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "dbpilot",
		Short:         "Deploy, discover, watch, heal and back up MySQL and MariaDB replication",
		Long:          rootHelp + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			level := slog.LevelWarn
			if a.verbose {
				level = slog.LevelDebug
			}
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
		},
	}
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log debug detail to stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "usage")
	})
	root.AddCommand(
		a.sandboxCommand(),
		a.galeraCommand(),
		a.inspectCommand(),
		a.topologyCommand(),
		a.analyzeCommand(),
		a.gtidCommand(),
		a.serveCommand(),
		a.tokenCommand(),
		a.failoverCommand(),
		a.switchoverCommand(),
		a.relocateCommand(),
		a.relocateReplicasCommand(),
		a.rejoinCommand(),
		a.ackCommand(),
		a.recoveriesCommand(),
		a.reportCommand(),
		a.drillCommand(),
		a.benchCommand(),
		a.alertsCommand(),
		a.topCommand(),
		a.dumpCommand(),
		a.restoreCommand(),
		a.verifyCommand(),
		a.cloneCommand(),
		a.copyCommand(),
		a.queriesCommand(),
		a.watchdogCommand(),
		a.binlogCommand(),
		a.replayCommand(),
	)
	groupCommands(root)
	return root
}

// rootHelp is `dbpilot --help`: the whole tool, group by group (the groups
// of commandGroups, in the same order).
const rootHelp = `dbpilot is one binary that deploys, discovers, watches, heals, backs up and
load-tests MySQL and MariaDB replication (GTID-aware, MariaDB multi-domain
included; Galera too).

Sandboxes: 'sandbox' deploys real local topologies on 127.0.0.1 (single,
primary and replicas, ring, multi-source, Galera) and starts, stops, kills,
queries and destroys them.

Reading servers: 'inspect' shows one server's replication state; 'topology'
discovers a replication tree from any member and draws it; 'analyze' names
the problems (broken or lagging replication, errant GTIDs, writable
replicas, unpromotable replicas, semi-sync without acknowledgers); 'gtid'
computes with GTID sets.

The daemon: 'serve' keeps discovering the configured clusters, samples every
instance every second into an embedded time-series store (PromQL,
/metrics, remote write), evaluates alerts, detects a dead primary and fails
over automatically (fencing the old one, anti-flapping, hooks, an audit of
every step), runs the query watchdog and binary log backups, and serves the
HTTP API and the web console (http://127.0.0.1:7070/, HTTPS with
http_tls). Several serves coordinate through etcd. 'top', 'alerts' and
'recoveries' read it; 'report' writes a recovery's incident report (one
HTML page); 'token' makes API tokens with a role (viewer, operator, admin).

Topology changes: 'failover', 'switchover', 'relocate', 'relocate-replicas',
'rejoin' and 'ack' act directly (--config FILE or --sandbox NAME) or through
a running serve (--server URL); --dry-run prints the plan.

Proving it: 'drill' kills a primary (or a Galera node) for real and counts
the writes lost and the time without writes; 'bench' runs open-loop load
with honest latency, failovers under load included.

Backup and copy: 'dump', 'restore', 'verify' and 'clone' make a parallel,
consistent logical backup with its GTID position, load it, check it, and
provision replicas; 'binlog' archives binary logs continuously, which
'restore --until-gtid|--until-time' replays (point-in-time recovery); 'copy'
keeps a copy of databases current on another server until cut-over; 'replay'
applies an archive into a scratch server once per parallel replication
setting and recommends the fastest that keeps the data identical.

Galera: 'galera' bootstraps a cluster from its most advanced node and
restarts it node by node.

Queries: 'queries' lists the top queries by digest (performance_schema or the
slow query log); 'watchdog' matches sessions by rules and logs or kills them.

Connection credentials come from, in order: --user/--password flags, the
DBPILOT_USER and DBPILOT_PASSWORD environment variables, a credentials file
(--credentials-file, my.cnf style [client] user=/password=, mode 0600), or a
sandbox descriptor (--sandbox NAME). Every command has --help; read commands
take --json. Documentation: README.md and docs/ in dbpilot's source tree
(docs/config-reference.md lists every key of serve's configuration).
`

// commandGroups sorts the commands of --help into the groups rootHelp
// describes; a command in none is listed under "Additional Commands".
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"sandbox", "Sandboxes:", []string{"sandbox"}},
	{"read", "Reading servers:", []string{"inspect", "topology", "analyze", "gtid"}},
	{"serve", "The daemon:", []string{"serve", "token", "top", "alerts", "recoveries", "report"}},
	{"change", "Topology changes:", []string{"failover", "switchover", "relocate", "relocate-replicas", "rejoin", "ack"}},
	{"prove", "Proving it:", []string{"drill", "bench"}},
	{"backup", "Backup and copy:", []string{"dump", "restore", "verify", "clone", "binlog", "copy", "replay"}},
	{"galera", "Galera:", []string{"galera"}},
	{"queries", "Queries:", []string{"queries", "watchdog"}},
}

func groupCommands(root *cobra.Command) {
	group := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.commands {
			group[c] = g.id
		}
	}
	for _, c := range root.Commands() {
		c.GroupID = group[c.Name()]
	}
}
