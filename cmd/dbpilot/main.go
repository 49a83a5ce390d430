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
		Use:   "dbpilot",
		Short: "Deploy, discover, watch, heal and back up MySQL and MariaDB replication",
		Long: `dbpilot deploys local MariaDB/MySQL sandboxes, reads any server and draws its
replication tree with the problems found (GTID-aware, MariaDB multi-domain
included).

Connection credentials come from, in order: --user/--password flags, the
DBPILOT_USER and DBPILOT_PASSWORD environment variables, a credentials file
(--credentials-file, my.cnf style [client] user=/password=, mode 0600), or a
sandbox descriptor (--sandbox NAME).` + exitHelp,
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
		a.failoverCommand(),
		a.switchoverCommand(),
		a.relocateCommand(),
		a.relocateReplicasCommand(),
		a.rejoinCommand(),
		a.ackCommand(),
		a.recoveriesCommand(),
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
	)
	return root
}
