package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/loadgen"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
	"github.com/spf13/cobra"
)

// benchFlags are the flags every bench verb shares: where, as whom, which
// workload and data.
type benchFlags struct {
	target   targetFlags
	svc      serviceFlags
	cluster  string
	db       string
	workload string
	prep     loadgen.PrepareOptions
	// sizeGiven: --tables, --table-size or --nodes was given (run then
	// takes them instead of reading the data's size).
	sizeGiven bool
}

func (b *benchFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&b.target.user, "user", "u", "", "user name (default $DBPILOT_USER, the credentials file, or root; with --sandbox an application account is made)")
	f.StringVarP(&b.target.password, "password", "p", "", "password (prefer $DBPILOT_PASSWORD or --credentials-file: flags show in ps)")
	f.StringVar(&b.target.credentials, "credentials-file", "", "my.cnf-style file with user= and password= under [client] or [dbpilot]; must be mode 0600")
	f.Var(durationFlag(&b.target.connectTimeout, mysql.DefaultConnectTimeout), "connect-timeout", "bound on connecting: TCP connect, greeting and authentication (a bare number is seconds)")
	f.Var(durationFlag(&b.target.queryTimeout, 60*time.Second), "query-timeout", "timeout of each statement (a stall longer than this fails the transaction)")
	f.StringVar(&b.svc.sandbox, "sandbox", "", "run against this sandbox's primary (found again after a failover)")
	f.StringVar(&b.svc.server, "server", "", "follow the primary of --cluster through a running 'dbpilot serve' at this URL")
	f.StringVar(&b.svc.token, "token", "", "API token for --server (default $DBPILOT_TOKEN, or the sandbox's token)")
	serverCAFlag(f, &b.svc.ca)
	f.StringVar(&b.cluster, "cluster", "", "with --server: the cluster (default the sandbox's name)")
	f.StringVar(&b.db, "db", "sbtest", "database of the benchmark's tables (sysbench's default, so its data can be reused)")
	f.StringVar(&b.workload, "workload", "oltp_read_write", "workload: "+strings.Join(loadgen.Workloads(), ", "))
	f.IntVar(&b.prep.Tables, "tables", 1, "oltp_*: tables sbtest1..N")
	f.IntVar(&b.prep.TableSize, "table-size", 10000, "oltp_*: rows per table")
	f.IntVar(&b.prep.Nodes, "nodes", 100000, "linkbench: nodes")
	registerTLSFlags(cmd, &b.target.ssl)
}

// benchAppUser is the account the bench uses on a sandbox: like an
// application it has no privilege that bypasses read_only, so a write sent
// to a demoted primary fails instead of leaving an errant transaction.
var benchAppUser = mysql.Credentials{User: "dbpilot_bench", Password: "bench-client-pw"}

// benchPrepareTimeout bounds one statement of prepare and cleanup (a
// multi-row INSERT, an index build on a large table).
const benchPrepareTimeout = time.Hour

// resolve builds the router: the server or cluster, the credentials and
// the database.
func (b *benchFlags) resolve(ctx context.Context, a *app, args []string, poolSize int) (*benchRouter, error) {
	if err := benchDatabase(b.db); err != nil {
		return nil, err
	}
	r := &benchRouter{poolSize: poolSize}
	creds, err := b.target.credentialsFromFlags()
	if err != nil {
		return nil, err
	}
	switch {
	case len(args) > 1:
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "bench: one server, not %d", len(args))
	case len(args) == 1 && (b.svc.sandbox != "" || b.svc.server != ""):
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "bench: give HOST:PORT, --sandbox NAME or --server URL --cluster NAME, not several")
	case len(args) == 1:
		k, err := dbpilot.ParseInstanceKey(args[0])
		if err != nil {
			return nil, err
		}
		r.fixed = k
	case b.svc.sandbox == "" && b.svc.server == "":
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "bench: name the server as HOST:PORT, or --sandbox NAME, or --server URL --cluster NAME")
	}
	if b.svc.sandbox != "" {
		d, err := sandbox.Load(b.svc.sandbox)
		if err != nil {
			return nil, err
		}
		r.sandbox = d
		if creds.User == "" {
			creds = benchAppUser
		}
		if b.cluster == "" {
			b.cluster = d.Name
		}
	}
	if b.svc.server != "" {
		if b.cluster == "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "bench: --server needs --cluster NAME")
		}
		svc, _, err := b.svc.open(ctx, a, true)
		if err != nil {
			return nil, err
		}
		r.api, r.cluster = svc, b.cluster
	}
	if creds.User == "" {
		creds.User = "root"
	}
	t, err := b.target.tls(r.sandbox)
	if err != nil {
		return nil, err
	}
	r.opts = mysql.Options{Credentials: creds, ConnectTimeout: b.target.connectTimeout, QueryTimeout: b.target.queryTimeout, Database: b.db, TLS: t}
	return r, nil
}

// setup creates the database (and, on a sandbox, the application account)
// on the primary with the sandbox's admin account.
func (b *benchFlags) setup(ctx context.Context, r *benchRouter) error {
	primary, _, err := r.locate(ctx)
	if err != nil {
		return err
	}
	opts := r.opts
	opts.Database = ""
	if r.sandbox != nil {
		opts = r.sandbox.AdminOptions()
	}
	db, err := mysql.Open(ctx, primary, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	stmts := []string{"CREATE DATABASE IF NOT EXISTS `" + b.db + "`"}
	if r.sandbox != nil && r.opts.User == benchAppUser.User {
		for _, h := range []string{"127.0.0.1", "localhost"} {
			stmts = append(stmts,
				fmt.Sprintf("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", mysql.Quote(benchAppUser.User), mysql.Quote(h), mysql.Quote(benchAppUser.Password)),
				fmt.Sprintf("GRANT ALL ON `%s`.* TO %s@%s", b.db, mysql.Quote(benchAppUser.User), mysql.Quote(h)))
		}
	}
	return db.Exec(ctx, stmts...)
}

func (a *app) benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench prepare|run|cleanup",
		Short: "Load-test a server or a cluster with honest (open-loop) latency",
		Long: `Open-loop load with latency measured from each transaction's intended start:
a stalled server shows in the percentiles and in the backlog, instead of
silently lowering the load as a closed-loop client does (coordinated
omission). Workloads: sysbench's oltp_* (same schema and statements, so a
sysbench-prepared dataset in --db sbtest is reused) and LinkBench's social
graph (linkbench).

  dbpilot bench prepare   create and load the tables (refused when they exist, unless --force)
  dbpilot bench run       run the load; live line per interval; summary, JSON, CSV, HTML report
  dbpilot bench cleanup   drop what prepare created (nothing else: a marker table lists it)` + exitHelp,
	}
	cmd.AddCommand(a.benchPrepareCommand(), a.benchRunCommand(), a.benchCleanupCommand())
	return cmd
}

func (a *app) benchPrepareCommand() *cobra.Command {
	var b benchFlags
	cmd := &cobra.Command{
		Use:   "prepare [HOST:PORT] [--sandbox NAME | --server URL --cluster NAME] --workload W",
		Short: "Create and load the benchmark's tables",
		Example: `  dbpilot bench prepare --sandbox demo --workload oltp_read_write --tables 4 --table-size 100000
  dbpilot bench prepare 127.0.0.1:3306 -u bench --workload linkbench --nodes 1000000 --parallel 8`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := loadgen.NewWorkload(b.workload)
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINVALID, err, "bench")
			}
			ctx := cmd.Context()
			r, err := b.resolve(ctx, a, args, b.prep.Parallel+1)
			if err != nil {
				return err
			}
			defer r.close()
			// Loading and indexing a large table takes longer than a
			// transaction's timeout.
			r.opts.QueryTimeout = max(r.opts.QueryTimeout, benchPrepareTimeout)
			if err := b.setup(ctx, r); err != nil {
				return err
			}
			primary, p, err := r.primaryPool(ctx)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := w.Prepare(ctx, p.SQL(), b.prep); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "prepared %s in %s.%s on %s in %s\n", w.Name(), primary, b.db, r.describe(), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	b.register(cmd)
	cmd.Flags().IntVar(&b.prep.Parallel, "parallel", 4, "connections loading data")
	cmd.Flags().BoolVar(&b.prep.Force, "force", false, "drop and recreate tables that exist")
	return cmd
}

func (a *app) benchCleanupCommand() *cobra.Command {
	var b benchFlags
	cmd := &cobra.Command{
		Use:   "cleanup [HOST:PORT] [--sandbox NAME | --server URL --cluster NAME] --workload W",
		Short: "Drop the tables prepare created (as its marker table lists them)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, err := loadgen.NewWorkload(b.workload)
			if err != nil {
				return dbpilot.WrapError(dbpilot.EINVALID, err, "bench")
			}
			ctx := cmd.Context()
			r, err := b.resolve(ctx, a, args, 2)
			if err != nil {
				return err
			}
			defer r.close()
			r.opts.QueryTimeout = max(r.opts.QueryTimeout, benchPrepareTimeout)
			primary, p, err := r.primaryPool(ctx)
			if err != nil {
				return err
			}
			// The run's ledger table is in the marker table too.
			if err := w.Cleanup(ctx, p.SQL()); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "cleaned up %s in %s.%s\n", w.Name(), primary, b.db)
			return nil
		},
	}
	b.register(cmd)
	return cmd
}

// benchRunFlags are run's own flags.
type benchRunFlags struct {
	rate, ramp, arrival string
	maxConc, threads    int
	duration, interval  time.Duration
	seed                int64
	asJSON              bool
	csv, out            string
	readFrom            string
	during              string
	at                  time.Duration
	io                  string
}

// benchBlockingMax is the most connections --io auto reads with blocking
// system calls (a thread each); more go through Go's network poller.
const benchBlockingMax = 256

// blockingIO resolves --io for a run of conns connections.
func (rf *benchRunFlags) blockingIO(conns int) (bool, error) {
	switch rf.io {
	case "auto":
		return mysql.BlockingIOSupported && conns <= benchBlockingMax, nil
	case "blocking":
		return mysql.BlockingIOSupported, nil
	case "poll":
		return false, nil
	}
	return false, dbpilot.Errorf(dbpilot.EINVALID, "bench: --io %q: give auto, blocking or poll", rf.io)
}

func (a *app) benchRunCommand() *cobra.Command {
	var (
		b  benchFlags
		rf benchRunFlags
	)
	cmd := &cobra.Command{
		Use:   "run [HOST:PORT] [--sandbox NAME | --server URL --cluster NAME] --workload W (--rate R | --ramp A..B:D | --threads N)",
		Short: "Run the load and report latency from each transaction's intended start",
		Long: `Run a workload open loop (--rate or --ramp: transactions scheduled at their
intended start times, executed by up to --max-concurrency connections,
latency from the intended start, backlog reported) or closed loop
(--threads N without a rate, as sysbench runs, for comparison).

--rate takes a rate, or a schedule of steps: 1000:60s,5000:60s. --ramp
100..10000:5m raises the rate linearly to find the knee. --arrival poisson
draws exponential gaps instead of constant ones.

--during failover|switchover|kill-primary --at 30s changes the topology
mid-run through serve (--server, or --sandbox with a serve running for it):
switchover and failover ask serve; kill-primary sends SIGKILL to the
sandbox's primary (serve's automatic failover recovers it); failover kills
it and asks serve to fail over at once. The writer follows the primary, and
the report gives what clients saw: the write-unavailability window (first
failed to first successful write), failed transactions, latency before,
during and after, and acknowledged writes missing on the new primary (each
write transaction records a unique id in ` + loadgen.LedgerTable + `).

A line per interval goes to the terminal (stderr with --json); Ctrl-C stops
the run and prints and writes the summary so far. Exits 1 when an
acknowledged write was lost.` + exitHelp,
		Example: `  dbpilot bench run --sandbox demo --workload oltp_read_write --rate 1000 --duration 60s
  dbpilot bench run --sandbox demo --workload oltp_point_select --ramp 100..20000:2m --out /tmp/knee
  dbpilot bench run --sandbox demo --server http://127.0.0.1:7070 --rate 500 --during kill-primary --at 20s --duration 60s
  dbpilot bench run 127.0.0.1:3306 -u bench --workload oltp_point_select --threads 8 --duration 30s --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			b.sizeGiven = f.Changed("tables") || f.Changed("table-size") || f.Changed("nodes")
			return a.benchRun(cmd.Context(), &b, &rf, args)
		},
	}
	b.register(cmd)
	f := cmd.Flags()
	f.StringVar(&rf.rate, "rate", "", "transactions/s, or steps RATE:DURATION,... (open loop)")
	f.StringVar(&rf.ramp, "ramp", "", "linear ramp FROM..TO:DURATION (open loop)")
	f.StringVar(&rf.arrival, "arrival", "constant", "arrivals: constant or poisson")
	f.IntVar(&rf.maxConc, "max-concurrency", 64, "open loop: connections at most")
	f.IntVar(&rf.threads, "threads", 0, "closed loop: connections running back to back (no --rate)")
	f.Var(durationFlag(&rf.duration, 60*time.Second), "duration", "run time (a --rate schedule or --ramp sets its own)")
	f.Var(durationFlag(&rf.interval, time.Second), "interval", "reporting interval")
	f.Int64Var(&rf.seed, "seed", 1, "random seed (same seed, same transactions)")
	f.BoolVar(&rf.asJSON, "json", false, "print the summary and intervals as one JSON object")
	f.StringVar(&rf.csv, "csv", "", "write the intervals as CSV to this file")
	f.StringVar(&rf.out, "out", "", "write an HTML report with charts (one self-contained index.html) to this directory")
	f.StringVar(&rf.readFrom, "read-from", "primary", "read-only transactions go to: primary or replicas")
	f.StringVar(&rf.during, "during", "", "a topology change mid-run: failover, switchover or kill-primary")
	f.Var(durationFlag(&rf.at, 30*time.Second), "at", "with --during: when, from the start")
	f.StringVar(&rf.io, "io", "auto", "how connections wait for the server: blocking (a thread each, least CPU per\n"+
		"statement), poll (Go's network poller), auto (blocking up to 256 connections, Linux only)")
	return cmd
}

// benchRun runs the load.
func (a *app) benchRun(ctx context.Context, b *benchFlags, rf *benchRunFlags, args []string) error {
	w, err := loadgen.NewWorkload(b.workload)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "bench")
	}
	opt, err := rf.options(b, w)
	if err != nil {
		return err
	}
	pool := max(rf.maxConc, rf.threads) + 2
	r, err := b.resolve(ctx, a, args, pool)
	if err != nil {
		return err
	}
	defer r.close()
	primary, err := b.prepareRun(ctx, rf, r, &opt)
	if err != nil {
		return err
	}

	live := a.stdout
	if rf.asJSON {
		live = a.stderr
	}
	pusher := newBenchPusher(r, w.Name(), opt.Ledger, func(err error) {
		fmt.Fprintf(a.stderr, "bench: intervals not written to serve's metrics (the run goes on): %v\n", err)
	})
	var runStart time.Time
	opt.OnInterval = func(iv loadgen.Interval) {
		if runStart.IsZero() {
			runStart = iv.Start
		}
		end := iv.Start.Add(time.Duration(iv.Seconds * float64(time.Second)))
		fmt.Fprintln(live, loadgen.FormatLineAt(end.Sub(runStart), iv))
		pusher.push(ctx, iv)
	}

	// Ctrl-C ends the run; the summary so far is still printed and written.
	runCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	eventErr := make(chan error, 1)
	if rf.during != "" {
		go func() { eventErr <- a.benchEvent(runCtx, b, r, rf, primary) }()
	}
	mode := "closed loop"
	if opt.Rate != nil {
		mode = "open loop"
	}
	fmt.Fprintf(live, "bench: %s on %s (%s.%s), %s, %s\n", w.Name(), r.describe(), primary, b.db, mode, opt.Duration)
	res, err := loadgen.Run(runCtx, opt)
	if err != nil {
		return err
	}
	res.Summary.Target = r.describe()
	if rf.during != "" {
		a.benchEventReport(ctx, rf, r, res, opt.Ledger, primary, eventErr, pusher)
	}
	return a.benchOutput(res, rf, live)
}

// options checks the run's flags and turns them into the load's options
// (without the connections and callbacks, which need the servers).
func (rf *benchRunFlags) options(b *benchFlags, w loadgen.Workload) (loadgen.RunOptions, error) {
	opt := loadgen.RunOptions{Workload: w, Duration: rf.duration, Interval: rf.interval, Seed: rf.seed,
		MaxConcurrency: rf.maxConc, Threads: rf.threads}
	switch {
	case rf.rate != "" && rf.ramp != "":
		return opt, dbpilot.Errorf(dbpilot.EINVALID, "bench: give --rate or --ramp, not both")
	case rf.rate != "":
		s, err := loadgen.ParseRate(rf.rate)
		if err != nil {
			return opt, dbpilot.WrapError(dbpilot.EINVALID, err, "bench")
		}
		opt.Rate = &s
	case rf.ramp != "":
		s, err := loadgen.ParseRamp(rf.ramp)
		if err != nil {
			return opt, dbpilot.WrapError(dbpilot.EINVALID, err, "bench")
		}
		opt.Rate = &s
	case rf.threads <= 0:
		return opt, dbpilot.Errorf(dbpilot.EINVALID, "bench: give --rate R (open loop) or --threads N (closed loop)")
	}
	if opt.Rate != nil && rf.threads > 0 {
		return opt, dbpilot.Errorf(dbpilot.EINVALID, "bench: --threads is the closed loop; with --rate use --max-concurrency")
	}
	if opt.Rate != nil {
		if d := opt.Rate.Duration(); d > 0 {
			opt.Duration = d
		}
	}
	switch loadgen.Arrival(rf.arrival) {
	case loadgen.ArrivalConstant, loadgen.ArrivalPoisson:
		opt.Arrival = loadgen.Arrival(rf.arrival)
	default:
		return opt, dbpilot.Errorf(dbpilot.EINVALID, "bench: --arrival %q: want constant or poisson", rf.arrival)
	}
	if _, err := rf.blockingIO(0); err != nil {
		return opt, err
	}
	if rf.readFrom != "primary" && rf.readFrom != "replicas" {
		return opt, dbpilot.Errorf(dbpilot.EINVALID, "bench: --read-from %q: want primary or replicas", rf.readFrom)
	}
	if opt.Duration <= 0 || rf.interval <= 0 {
		return opt, dbpilot.Errorf(dbpilot.EINVALID, "bench: --duration and --interval must be positive")
	}
	return opt, rf.checkDuring(b, opt.Duration)
}

// checkDuring checks --during and the flags it needs, in a run of duration d.
func (rf *benchRunFlags) checkDuring(b *benchFlags, d time.Duration) error {
	switch rf.during {
	case "":
		return nil
	case "failover", "switchover", "kill-primary":
	default:
		return dbpilot.Errorf(dbpilot.EINVALID, "bench: --during %q: want failover, switchover or kill-primary", rf.during)
	}
	if b.svc.server == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "bench: --during acts through serve: give --server URL (and --sandbox NAME or --cluster NAME)")
	}
	if rf.during != "switchover" && b.svc.sandbox == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "bench: --during %s kills the primary's process: it needs --sandbox NAME", rf.during)
	}
	if rf.at <= 0 || rf.at >= d {
		return dbpilot.Errorf(dbpilot.EINVALID, "bench: --at %s must fall inside the run (--duration %s)", rf.at, d)
	}
	return nil
}

// prepareRun readies the servers behind r for the load: the sandbox set up,
// the workload told the data's size, the connections (and with --during
// the ledger of acknowledged writes) in opt. It returns the primary.
func (b *benchFlags) prepareRun(ctx context.Context, rf *benchRunFlags, r *benchRouter, opt *loadgen.RunOptions) (dbpilot.InstanceKey, error) {
	w := opt.Workload
	// The server must answer at start (exit 2 otherwise).
	if r.sandbox != nil {
		if err := b.setup(ctx, r); err != nil {
			return dbpilot.InstanceKey{}, err
		}
	}
	primary, pp, err := r.primaryPool(ctx)
	if err != nil {
		return primary, err
	}
	// The clients pick rows within the prepared data: its size as given, or
	// as read from the server (sysbench's or LinkBench's data too).
	if c, ok := w.(loadgen.Configurer); ok {
		if b.sizeGiven {
			c.Configure(b.prep)
		} else if _, err := c.Detect(ctx, pp.SQL()); err != nil {
			return primary, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "bench: the data of %s in %s.%s (run bench prepare first)", w.Name(), primary, b.db)
		}
	}

	conns := rf.threads
	if opt.Rate != nil {
		conns = rf.maxConc
		if conns <= 0 {
			conns = loadgen.DefaultMaxConcurrency
		}
	}
	if rf.readFrom == "replicas" {
		conns *= 2
	}
	if r.blockingIO, err = rf.blockingIO(conns); err != nil {
		return primary, err
	}
	opt.Connect = r.writer
	if rf.readFrom == "replicas" {
		opt.ConnectRead = r.reader
	}
	opt.OnReconnect = r.invalidate
	if rf.during != "" {
		if err := pp.Exec(ctx, loadgen.LedgerCreateSQL, "DELETE FROM "+loadgen.LedgerTable); err != nil {
			return primary, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "bench: create %s on %s", loadgen.LedgerTable, primary)
		}
		if err := loadgen.MarkTable(ctx, pp.SQL(), w.Name(), loadgen.LedgerTable); err != nil {
			return primary, dbpilot.WrapError(dbpilot.EUNAVAIL, err, "bench: record %s in %s", loadgen.LedgerTable, loadgen.MarkerTable)
		}
		opt.Ledger = &loadgen.Ledger{}
		opt.EventAt = rf.at
	}
	return primary, nil
}

// benchEventReport completes the summary of a run with --during: the
// event's outcome as benchEvent reported it on eventErr, the new primary,
// and the acknowledged writes (in ledger) missing on it, which pusher
// also writes to serve's metrics.
func (a *app) benchEventReport(ctx context.Context, rf *benchRunFlags, r *benchRouter, res *loadgen.Result, ledger *loadgen.Ledger, primary dbpilot.InstanceKey, eventErr <-chan error, pusher *benchPusher) {
	ev := res.Summary.Event
	if ev == nil {
		ev = &loadgen.EventReport{}
		res.Summary.Event = ev
	}
	ev.Kind, ev.OldPrimary = rf.during, primary.String()
	select {
	case err := <-eventErr:
		if err != nil {
			fmt.Fprintf(a.stderr, "bench: %s: %v\n", rf.during, err)
		}
	default:
		fmt.Fprintf(a.stderr, "bench: the run ended before the %s finished\n", rf.during)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	db, now, err := r.primaryDB(lctx)
	if err == nil {
		ev.NewPrimary = now.String()
		ev.AckedWrites = ledger.Acked()
		var sample []uint64
		ev.LostWrites, sample, err = ledger.Lost(lctx, db.SQL())
		db.Close()
		if ev.LostWrites > 0 {
			fmt.Fprintf(a.stderr, "bench: %d acknowledged writes missing on %s, e.g. ids %v\n", ev.LostWrites, now, sample)
		}
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "bench: lost-write check not done: %v\n", err)
	}
	pusher.pushLedger(ctx, ledger.Acked(), ev.LostWrites, err)
}

// benchOutput prints and writes the results.
func (a *app) benchOutput(res *loadgen.Result, rf *benchRunFlags, live interface{ Write([]byte) (int, error) }) error {
	var errs []error
	if rf.csv != "" {
		if err := writeFileWith(rf.csv, func(f *os.File) error { return loadgen.WriteCSV(f, res.Intervals) }); err != nil {
			errs = append(errs, err)
		}
	}
	if rf.out != "" {
		index, err := loadgen.WriteReport(rf.out, res.Summary, res.Intervals)
		if err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(live, "report: %s\n", index)
		}
	}
	if rf.asJSON {
		if err := loadgen.WriteJSON(a.stdout, res); err != nil {
			errs = append(errs, err)
		}
	} else {
		fmt.Fprint(a.stdout, loadgen.FormatSummary(res.Summary))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ev := res.Summary.Event; ev != nil && ev.LostWrites > 0 {
		return errProblemsFound
	}
	return nil
}

// writeFileWith creates path and writes it with fn.
func writeFileWith(path string, fn func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}

// benchEvent waits until --at and changes the topology through serve.
func (a *app) benchEvent(ctx context.Context, b *benchFlags, r *benchRouter, rf *benchRunFlags, primary dbpilot.InstanceKey) error {
	t := time.NewTimer(rf.at)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	switch rf.during {
	case "switchover":
		_, err := r.api.Switchover(ctx, b.cluster, dbpilot.OperationOptions{})
		return err
	case "kill-primary", "failover":
		node := ""
		for _, n := range r.sandbox.Nodes {
			if n.Key().Equal(primary) {
				node = n.Name
			}
		}
		if node == "" {
			return dbpilot.Errorf(dbpilot.ENOTFOUND, "bench: the primary %s is not a node of sandbox %s", primary, r.sandbox.Name)
		}
		if err := sandbox.Kill(r.sandbox, node); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "bench: killed %s (%s) at %s\n", node, primary, rf.at)
		if rf.during == "failover" {
			// serve must see the primary dead before it fails over; with
			// auto_failover on, its own recovery may come first.
			deadline := time.Now().Add(10 * time.Second)
			for {
				if st, err := r.api.ClusterStatus(ctx, b.cluster); err == nil && !st.Primary.IsZero() && !st.Primary.Equal(primary) {
					fmt.Fprintf(a.stderr, "bench: serve had already failed over to %s\n", st.Primary)
					return nil
				}
				_, err := r.api.Failover(ctx, b.cluster, dbpilot.OperationOptions{})
				if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
					return err
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	return nil
}

// benchPusher writes each interval into serve's metrics (with --server),
// so that the console shows the load beside the servers' metrics and the
// incident report of a recovery what clients saw of it. A failure is
// reported once and the run goes on.
type benchPusher struct {
	api interface {
		WriteBenchMetrics(context.Context, dbpilot.Batch) error
	}
	instance dbpilot.InstanceKey
	cluster  string
	workload string
	warned   bool
	warn     func(error)
	// errorsBy counts the run's errors by class so far (a counter per
	// class); ledger is the run's ledger of acknowledged writes (nil: the
	// run numbers no write).
	errorsBy map[string]int64
	ledger   *loadgen.Ledger
	// next is the end of the interval after the last pushed: the run's
	// series hold their last values until then.
	next time.Time
}

func newBenchPusher(r *benchRouter, workload string, ledger *loadgen.Ledger, warn func(error)) *benchPusher {
	p := &benchPusher{cluster: r.cluster, workload: workload, warn: warn, errorsBy: map[string]int64{}, ledger: ledger}
	if w, ok := r.api.(interface {
		WriteBenchMetrics(context.Context, dbpilot.Batch) error
	}); ok {
		p.api = w
		p.instance = r.primary
	}
	return p
}

// Bench metrics the incident report reads (docs/bench.md lists them all).
const (
	benchErrorsTotal  = "dbpilot_bench_errors_total"        // counter by class: the run's errors so far
	benchWriteStall   = "dbpilot_bench_write_stall_seconds" // loadgen.Interval.WriteStallMS
	benchLedgerAcked  = "dbpilot_bench_ledger_acknowledged" // writes acknowledged so far (with a ledger)
	benchLedgerFound  = "dbpilot_bench_ledger_found"        // at the end: acknowledged writes the new primary has
	benchLedgerLost   = "dbpilot_bench_ledger_lost"         // at the end: acknowledged writes it lacks
	benchLedgerFailed = "dbpilot_bench_ledger_check_failed" // at the end: 1 when the check could not be made
)

func (p *benchPusher) sample(name string, v float64, extra ...dbpilot.Label) dbpilot.Sample {
	return dbpilot.Sample{Name: name, Type: dbpilot.Gauge, Value: v, Labels: append(extra, dbpilot.Label{Name: "workload", Value: p.workload})}
}

func (p *benchPusher) push(ctx context.Context, iv loadgen.Interval) {
	if p.api == nil || p.warned {
		return
	}
	g := p.sample
	q := func(quantile string, ms float64) dbpilot.Sample {
		return g("dbpilot_bench_latency_seconds", ms/1000, dbpilot.Label{Name: "quantile", Value: quantile})
	}
	end := iv.Start.Add(time.Duration(iv.Seconds * float64(time.Second)))
	p.next = end.Add(end.Sub(iv.Start))
	b := dbpilot.Batch{Instance: p.instance, Cluster: p.cluster, Time: end,
		Samples: []dbpilot.Sample{
			g("dbpilot_bench_rate_target", iv.RateTarget),
			g("dbpilot_bench_rate", iv.Rate),
			g("dbpilot_bench_errors_per_second", float64(iv.Errors)/max(iv.Seconds, 1e-9)),
			g("dbpilot_bench_busy_connections", float64(iv.Busy)),
			g("dbpilot_bench_backlog", float64(iv.Backlog)),
			q("0.5", iv.P50), q("0.9", iv.P90), q("0.99", iv.P99), q("0.999", iv.P999), q("1", iv.Max),
		}}
	if iv.WriteStallMS > 0 {
		b.Samples = append(b.Samples, g(benchWriteStall, iv.WriteStallMS/1000))
	}
	// Errors by class: a counter per class from its first error on (its
	// first sample marked FromZero, so that the store puts a 0 before it
	// and the increase over a span counts those errors too).
	for c, n := range iv.ErrorsBy {
		if _, ok := p.errorsBy[c]; !ok && n > 0 {
			p.errorsBy[c] = 0 // its first errors: FromZero below
		}
	}
	for _, c := range slices.Sorted(maps.Keys(p.errorsBy)) {
		first := p.errorsBy[c] == 0
		p.errorsBy[c] += iv.ErrorsBy[c]
		b.Samples = append(b.Samples, dbpilot.Sample{Name: benchErrorsTotal, Type: dbpilot.Counter, Value: float64(p.errorsBy[c]), FromZero: first,
			Labels: []dbpilot.Label{{Name: "class", Value: c}, {Name: "workload", Value: p.workload}}})
	}
	if p.ledger != nil {
		b.Samples = append(b.Samples, g(benchLedgerAcked, float64(p.ledger.Acked())))
	}
	p.write(ctx, b)
}

// pushLedger writes, at the end of a run with a ledger, the check of the
// acknowledged writes on the new primary: acknowledged, found there and
// lost; failed when the check could not be made (err). The batch ends the
// run's other series (the store marks them stale): it is stamped no
// earlier than an interval after the last one, so that a reader sampling
// each second still finds the last interval's values.
func (p *benchPusher) pushLedger(ctx context.Context, acked, lost int64, err error) {
	if p.api == nil || p.warned || p.ledger == nil {
		return
	}
	at := time.Now()
	if at.Before(p.next) {
		at = p.next
	}
	b := dbpilot.Batch{Instance: p.instance, Cluster: p.cluster, Time: at,
		Samples: []dbpilot.Sample{p.sample(benchLedgerAcked, float64(acked))}}
	if err != nil {
		b.Samples = append(b.Samples, p.sample(benchLedgerFailed, 1))
	} else {
		b.Samples = append(b.Samples, p.sample(benchLedgerFound, float64(acked-lost)), p.sample(benchLedgerLost, float64(lost)))
	}
	p.write(ctx, b)
}

func (p *benchPusher) write(ctx context.Context, b dbpilot.Batch) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := p.api.WriteBenchMetrics(pctx, b); err != nil {
		p.warned = true
		p.warn(err)
	}
}
