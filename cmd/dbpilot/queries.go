package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/spf13/cobra"
)

// queriesReport is `dbpilot queries --json`.
type queriesReport struct {
	Source    string            `json:"source"` // performance_schema
	Mode      string            `json:"mode"`   // interval | since_start
	IntervalS float64           `json:"interval_s,omitempty"`
	By        string            `json:"by"`
	Instances []queriesInstance `json:"instances"`
	Queries   []queryRow        `json:"queries"`
}

// queriesInstance is the header of one server's digest table.
type queriesInstance struct {
	Instance string `json:"instance"`
	// Source is where its statements were read: performance_schema,
	// slow_log_table or slow_log_file (SourceDetail is then the file);
	// SourceNote says why, and what a slow log sees (long_query_time).
	Source       string `json:"source"`
	SourceDetail string `json:"source_detail,omitempty"`
	SourceNote   string `json:"source_note,omitempty"`
	Capacity     int64  `json:"capacity"`     // performance_schema_digests_size; 0 for a slow log
	Digests      int    `json:"digests"`      // rows in the table now
	LostDigests  uint64 `json:"lost_digests"` // Performance_schema_digest_lost, since start
	// LostInInterval is the growth of lost_digests between the samples.
	LostInInterval uint64 `json:"lost_in_interval"`
	Full           bool   `json:"full"` // the table holds capacity rows: new digests are lost
}

// queryRow is one digest in the report: the row serve's report has too.
type queryRow = dbpilot.QueryStat

func psToMS(ps uint64) float64 { return float64(ps) / 1e9 }

// queriesFlags are the flags of `dbpilot queries`.
type queriesFlags struct {
	tf         targetFlags
	interval   time.Duration
	sinceStart bool
	by         string
	limit      int
	examples   bool
	source     string
	asJSON     bool
	server     queriesServer
}

func (a *app) queriesCommand() *cobra.Command {
	var q queriesFlags
	cmd := &cobra.Command{
		Use:   "queries HOST:PORT | --sandbox NAME [--node N] | --server URL [CLUSTER|HOST:PORT]",
		Short: "Top queries by digest from performance_schema or the slow query log (like pt-query-digest)",
		Long: `Report the statements that cost the most, grouped by digest (the statement
with its literals replaced by "?"), from the server's
performance_schema.events_statements_summary_by_digest.

By default the table is read twice, --interval apart, and the report shows
what ran in between (per-digest differences computed here: dbpilot never
truncates the table, which other tools read too). --since-start shows the
table's cumulative values instead (since the server started or the table was
last truncated by someone).

Each digest shows its count, total/avg/max latency, rows examined and sent,
errors, statements without an index, temporary tables on disk. max_ms over
an interval is exact when the digest's maximum grew in it, otherwise an upper
bound. Examples (MySQL 8's QUERY_SAMPLE_TEXT; MariaDB keeps none) have their
literals replaced by "?" unless --examples.

The header gives the table's capacity (performance_schema_digests_size) and
lost digests (Performance_schema_digest_lost): statements that found the
table full are counted in a row without digest text, not under their own.

With --server the report comes from a running 'dbpilot serve', whose
statements collector reads every monitored instance's digest table every
10 s (queries: in its configuration) and keeps what ran per minute: --since
gives the span (default 1h), an argument narrows it to a cluster or one
HOST:PORT. --json prints serve's report (GET /api/queries).

Reads performance_schema=ON (a server option; sandboxes have it, with small
sizing) with the statements_digest consumer (on by default). When
performance_schema is off, --source auto (the default) falls back to the slow
query log (slow_query_log=ON): the mysql.slow_log table when log_output has
TABLE, else its file (slow_query_log_file, relative to datadir) when the
server runs on this host. Statements are then grouped by their fingerprint,
as pt-query-digest does (literals and IN/VALUES lists replaced; the digest
is dbpilot's hash of it, not the server's), and counted from where the log
ended at the first read (--since-start: everything the log holds). A slow log
sees only statements slower than long_query_time: set it to 0 to see all.
The header names each server's source (and the file); when neither source
is on, the error says what to enable. --source performance_schema or
slow_log insists on one. With --sandbox and no --node, every node is read and
rows name their instance.` + exitHelp,
		Example: `  dbpilot queries 127.0.0.1:3306 --user monitor --interval 30s
  dbpilot queries --sandbox demo --node 1 --since-start --by avg --limit 10
  dbpilot queries --sandbox demo --node 1 --interval 5s --json
  dbpilot queries 127.0.0.1:3306 --source slow_log --since-start
  dbpilot queries --server http://127.0.0.1:7070 main --since 24h --by avg`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.queriesRun(cmd, args, &q)
		},
	}
	q.tf.register(cmd)
	f := cmd.Flags()
	f.Var(durationFlag(&q.interval, 10*time.Second), "interval", "time between the two samples; the report is what ran in between")
	f.BoolVar(&q.sinceStart, "since-start", false, "report the table's cumulative values (one sample)")
	f.StringVar(&q.by, "by", "total", "order by total latency, avg latency, count, or rows examined: total|avg|count|rows")
	f.IntVar(&q.limit, "limit", 20, "show the top N digests")
	f.BoolVar(&q.examples, "examples", false, "keep literals in example statements (they may hold personal data)")
	f.StringVar(&q.source, "source", "auto", "where to read statements: auto (performance_schema, else the slow query log), performance_schema or slow_log")
	f.BoolVar(&q.asJSON, "json", false, "print JSON")
	f.StringVar(&q.server.url, "server", "", "report from a running 'dbpilot serve' at this URL, e.g. http://127.0.0.1:7070")
	f.StringVar(&q.server.token, "token", "", "API token for --server (default $DBPILOT_TOKEN)")
	serverCAFlag(f, &q.server.ca)
	f.Var(durationFlag(&q.server.since, time.Hour), "since", "with --server: the span of the report, back from now")
	return cmd
}

// queriesRun reports the top queries from serve (--server) or from the
// servers themselves.
func (a *app) queriesRun(cmd *cobra.Command, args []string, q *queriesFlags) error {
	switch q.by {
	case "total", "avg", "count", "rows":
	default:
		return dbpilot.Errorf(dbpilot.EINVALID, "--by %q: want total, avg, count or rows", q.by)
	}
	if q.limit < 1 {
		return dbpilot.Errorf(dbpilot.EINVALID, "--limit %d: want 1 or more", q.limit)
	}
	if q.server.url != "" {
		return a.queriesFromServe(cmd, args, q)
	}
	if cmd.Flags().Changed("since") {
		return dbpilot.Errorf(dbpilot.EINVALID, "--since needs --server (serve keeps the history); without it use --interval")
	}
	if !q.sinceStart && q.interval <= 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "--interval %s: want a positive duration such as 10s, or --since-start", q.interval)
	}
	if q.sinceStart && cmd.Flags().Changed("interval") {
		return dbpilot.Errorf(dbpilot.EINVALID, "give either --interval or --since-start, not both")
	}
	keys, opts, err := q.tf.resolve(args)
	if err != nil {
		return err
	}
	if len(keys) > 1 && q.tf.sandbox == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "queries takes one HOST:PORT")
	}
	rep, err := collectQueries(cmd.Context(), keys, opts, mysql.DigestOptions{Examples: q.examples}, q.source, q.sinceStart, q.interval)
	if err != nil {
		return err
	}
	rep.By = q.by
	sortQueries(rep.Queries, q.by)
	if len(rep.Queries) > q.limit {
		rep.Queries = rep.Queries[:q.limit]
	}
	if q.asJSON {
		return writeJSON(a.stdout, rep)
	}
	return printQueries(a.stdout, rep)
}

// queriesFromServe reports the top queries from a running serve's history.
func (a *app) queriesFromServe(cmd *cobra.Command, args []string, q *queriesFlags) error {
	if err := onlyWithoutServer(cmd, "sandbox", "node", "interval", "since-start", "examples", "source"); err != nil {
		return err
	}
	if q.server.since <= 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "--since %s: want a positive duration such as 1h", q.server.since)
	}
	rep, err := q.server.run(cmd.Context(), args, q.by, q.limit)
	if err != nil {
		return err
	}
	if q.asJSON {
		return writeJSON(a.stdout, rep)
	}
	return printQueryReport(a.stdout, rep)
}

// collectQueries samples every server once (sinceStart) or twice, interval
// apart, and builds the report. source is --source: auto reads
// performance_schema when it is on, else the slow query log (its table, or
// its file when the server runs on this host); performance_schema and
// slow_log insist on one.
func collectQueries(ctx context.Context, keys []dbpilot.InstanceKey, opts mysql.Options, dopts mysql.DigestOptions, source string, sinceStart bool, interval time.Duration) (*queriesReport, error) {
	switch source {
	case "auto", "performance_schema", "slow_log":
	default:
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "--source %q: want auto, performance_schema or slow_log", source)
	}
	rep := &queriesReport{Source: "performance_schema", Mode: "since_start", Queries: []queryRow{}}
	if !sinceStart {
		rep.Mode, rep.IntervalS = "interval", interval.Seconds()
	}
	// A slow log read once, from its start (--since-start), or twice: the
	// first read notes where it ends. The bounds of one read are those of a
	// single command, larger than a collector's.
	sopts := mysql.SlowLogOptions{Examples: dopts.Examples, FromStart: sinceStart, User: opts.User,
		MaxBytesPerRead: 1 << 30, MaxRowsPerRead: 200000}
	dbs := make([]*mysql.DB, 0, len(keys))
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	readers := make([]mysql.StatementReader, len(keys))
	srcs := make([]mysql.StatementSource, len(keys))
	first := make([]*mysql.DigestSnapshot, len(keys))
	for i, k := range keys {
		db, err := mysql.Open(ctx, k, opts)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
		switch source {
		case "performance_schema":
			srcs[i] = mysql.StatementSource{Source: dbpilot.QuerySourcePerformanceSchema}
		case "slow_log":
			srcs[i], err = mysql.DetectSlowLogSource(ctx, db, k)
		default:
			srcs[i], err = mysql.DetectStatementSource(ctx, db, k)
		}
		if err != nil {
			return nil, err
		}
		if readers[i], err = mysql.NewStatementReader(k, srcs[i], sopts); err != nil {
			return nil, err
		}
		if first[i], err = readers[i].Snapshot(ctx, db); err != nil {
			return nil, err
		}
		if err := first[i].DigestsUsable(); err != nil {
			return nil, err
		}
	}
	last := first
	if !sinceStart {
		select {
		case <-ctx.Done():
			return nil, dbpilot.WrapError(dbpilot.EUNAVAIL, ctx.Err(), "queries: interrupted")
		case <-time.After(interval):
		}
		last = make([]*mysql.DigestSnapshot, len(keys))
		for i, db := range dbs {
			var err error
			if last[i], err = readers[i].Snapshot(ctx, db); err != nil {
				return nil, err
			}
		}
	}
	for i, src := range srcs {
		if i == 0 {
			rep.Source = src.Source
		} else if src.Source != rep.Source {
			rep.Source = "mixed"
		}
	}
	for i, cur := range last {
		var prev *mysql.DigestSnapshot
		h := queriesInstance{Instance: cur.Key.String(), Capacity: cur.Capacity, Digests: len(cur.Digests), LostDigests: cur.Lost,
			Source: cur.Source, SourceDetail: cur.SourceDetail}
		if cur.Source != dbpilot.QuerySourcePerformanceSchema {
			h.SourceNote = srcs[i].Reason
		}
		h.Full = cur.Capacity > 0 && int64(len(cur.Digests)) >= cur.Capacity
		if !sinceStart {
			prev = first[i]
			if cur.Lost >= prev.Lost {
				h.LostInInterval = cur.Lost - prev.Lost
			} else {
				h.LostInInterval = cur.Lost
			}
		}
		rep.Instances = append(rep.Instances, h)
		for _, d := range mysql.DigestDeltas(prev, cur) {
			r := queryRow{
				Instance: h.Instance, Schema: d.Schema, Digest: d.Digest, DigestText: d.Text, Example: d.Sample,
				Count: d.Count, TotalMS: psToMS(d.TotalWait), MaxMS: psToMS(d.MaxWait),
				RowsExamined: d.RowsExamined, RowsSent: d.RowsSent, Errors: d.Errors, Warnings: d.Warnings,
				NoIndexUsed: d.NoIndexUsed, TmpDiskTables: d.TmpDiskTables, SortMergePasses: d.SortMergePasses,
				FirstSeen: d.FirstSeen, LastSeen: d.LastSeen,
			}
			if d.Digest == "" {
				r.DigestText = "(statements that found the digest table full)"
			}
			if d.Count > 0 {
				r.AvgMS = r.TotalMS / float64(d.Count)
			}
			rep.Queries = append(rep.Queries, r)
		}
	}
	return rep, nil
}

// sortQueries orders rows by the --by key, largest first; ties by total
// latency, then digest, so the order is stable.
func sortQueries(rows []queryRow, by string) {
	key := func(r queryRow) float64 {
		switch by {
		case "avg":
			return r.AvgMS
		case "count":
			return float64(r.Count)
		case "rows":
			return float64(r.RowsExamined)
		}
		return r.TotalMS
	}
	sort.SliceStable(rows, func(i, j int) bool {
		ki, kj := key(rows[i]), key(rows[j])
		if ki != kj {
			return ki > kj
		}
		if rows[i].TotalMS != rows[j].TotalMS {
			return rows[i].TotalMS > rows[j].TotalMS
		}
		return rows[i].Instance+rows[i].Digest < rows[j].Instance+rows[j].Digest
	})
}

func printQueries(w io.Writer, rep *queriesReport) error {
	what := "cumulative since the table started"
	if rep.Source != dbpilot.QuerySourcePerformanceSchema {
		what = "cumulative: what the log held"
	}
	if rep.Mode == "interval" {
		what = fmt.Sprintf("what ran in %s", time.Duration(rep.IntervalS*float64(time.Second)))
	}
	fmt.Fprintf(w, "Top queries by %s, %s (source: %s)\n", rep.By, what, rep.Source)
	for _, h := range rep.Instances {
		if h.Source != dbpilot.QuerySourcePerformanceSchema {
			// A slow log: fingerprints counted by dbpilot since it started reading.
			fmt.Fprintf(w, "%s: source %s, %d fingerprints", h.Instance, h.Source, h.Digests)
			if h.LostDigests > 0 {
				fmt.Fprintf(w, ", %d statements beyond the fingerprint limit", h.LostDigests)
			}
			if h.SourceNote != "" {
				fmt.Fprintf(w, " (%s)", h.SourceNote)
			}
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "%s: source %s, %d of %d digests, %d lost since start", h.Instance, h.Source, h.Digests, h.Capacity, h.LostDigests)
		if rep.Mode == "interval" {
			fmt.Fprintf(w, ", %d in the interval", h.LostInInterval)
		}
		if h.Full {
			fmt.Fprint(w, " - TABLE FULL: new digests are lost; raise performance_schema_digests_size")
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	if len(rep.Queries) == 0 {
		fmt.Fprintln(w, "no statements ran")
		return nil
	}
	return printQueryTable(w, rep.Queries, len(rep.Instances) > 1)
}
