package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
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
	Instance    string `json:"instance"`
	Capacity    int64  `json:"capacity"`     // performance_schema_digests_size
	Digests     int    `json:"digests"`      // rows in the table now
	LostDigests uint64 `json:"lost_digests"` // Performance_schema_digest_lost, since start
	// LostInInterval is the growth of lost_digests between the samples.
	LostInInterval uint64 `json:"lost_in_interval"`
	Full           bool   `json:"full"` // the table holds capacity rows: new digests are lost
}

// queryRow is one digest in the report.
type queryRow struct {
	Instance        string  `json:"instance"`
	Schema          string  `json:"schema"`
	Digest          string  `json:"digest"`
	DigestText      string  `json:"digest_text"`
	Example         string  `json:"example,omitempty"`
	Count           uint64  `json:"count"`
	TotalMS         float64 `json:"total_ms"`
	AvgMS           float64 `json:"avg_ms"`
	MaxMS           float64 `json:"max_ms"`
	RowsExamined    uint64  `json:"rows_examined"`
	RowsSent        uint64  `json:"rows_sent"`
	Errors          uint64  `json:"errors"`
	Warnings        uint64  `json:"warnings"`
	NoIndexUsed     uint64  `json:"no_index_used"`
	TmpDiskTables   uint64  `json:"tmp_disk_tables"`
	SortMergePasses uint64  `json:"sort_merge_passes"`
	FirstSeen       string  `json:"first_seen"`
	LastSeen        string  `json:"last_seen"`
}

func psToMS(ps uint64) float64 { return float64(ps) / 1e9 }

func (a *app) queriesCommand() *cobra.Command {
	var (
		tf         targetFlags
		interval   time.Duration
		sinceStart bool
		by         string
		limit      int
		examples   bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "queries HOST:PORT | --sandbox NAME [--node N]",
		Short: "Top queries by digest from performance_schema (like pt-query-digest)",
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

Needs performance_schema=ON (a server option; sandboxes have it, with small
sizing) and the statements_digest consumer (on by default). With --sandbox and
no --node, every node is read and rows name their instance.` + exitHelp,
		Example: `  dbpilot queries 127.0.0.1:3306 --user monitor --interval 30s
  dbpilot queries --sandbox demo --node 1 --since-start --by avg --limit 10
  dbpilot queries --sandbox demo --node 1 --interval 5s --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch by {
			case "total", "avg", "count", "rows":
			default:
				return dbpilot.Errorf(dbpilot.EINVALID, "--by %q: want total, avg, count or rows", by)
			}
			if limit < 1 {
				return dbpilot.Errorf(dbpilot.EINVALID, "--limit %d: want 1 or more", limit)
			}
			if !sinceStart && interval <= 0 {
				return dbpilot.Errorf(dbpilot.EINVALID, "--interval %s: want a positive duration such as 10s, or --since-start", interval)
			}
			if sinceStart && cmd.Flags().Changed("interval") {
				return dbpilot.Errorf(dbpilot.EINVALID, "give either --interval or --since-start, not both")
			}
			keys, opts, err := tf.resolve(args)
			if err != nil {
				return err
			}
			if len(keys) > 1 && tf.sandbox == "" {
				return dbpilot.Errorf(dbpilot.EINVALID, "queries takes one HOST:PORT")
			}
			rep, err := collectQueries(cmd.Context(), keys, opts, mysql.DigestOptions{Examples: examples}, sinceStart, interval)
			if err != nil {
				return err
			}
			rep.By = by
			sortQueries(rep.Queries, by)
			if len(rep.Queries) > limit {
				rep.Queries = rep.Queries[:limit]
			}
			if asJSON {
				return writeJSON(a.stdout, rep)
			}
			return printQueries(a.stdout, rep)
		},
	}
	tf.register(cmd)
	f := cmd.Flags()
	f.DurationVar(&interval, "interval", 10*time.Second, "time between the two samples; the report is what ran in between")
	f.BoolVar(&sinceStart, "since-start", false, "report the table's cumulative values (one sample)")
	f.StringVar(&by, "by", "total", "order by total latency, avg latency, count, or rows examined: total|avg|count|rows")
	f.IntVar(&limit, "limit", 20, "show the top N digests")
	f.BoolVar(&examples, "examples", false, "keep literals in example statements (they may hold personal data)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// collectQueries samples every server once (sinceStart) or twice, interval
// apart, and builds the report.
func collectQueries(ctx context.Context, keys []dbpilot.InstanceKey, opts mysql.Options, dopts mysql.DigestOptions, sinceStart bool, interval time.Duration) (*queriesReport, error) {
	rep := &queriesReport{Source: "performance_schema", Mode: "since_start", Queries: []queryRow{}}
	if !sinceStart {
		rep.Mode, rep.IntervalS = "interval", interval.Seconds()
	}
	dbs := make([]*mysql.DB, 0, len(keys))
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	first := make([]*mysql.DigestSnapshot, len(keys))
	for i, k := range keys {
		db, err := mysql.Open(ctx, k, opts)
		if err != nil {
			return nil, err
		}
		dbs = append(dbs, db)
		if first[i], err = db.ReadDigests(ctx, dopts); err != nil {
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
			if last[i], err = db.ReadDigests(ctx, dopts); err != nil {
				return nil, err
			}
		}
	}
	for i, cur := range last {
		var prev *mysql.DigestSnapshot
		h := queriesInstance{Instance: cur.Key.String(), Capacity: cur.Capacity, Digests: len(cur.Digests), LostDigests: cur.Lost}
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
	if rep.Mode == "interval" {
		what = fmt.Sprintf("what ran in %s", time.Duration(rep.IntervalS*float64(time.Second)))
	}
	fmt.Fprintf(w, "Top queries by %s, %s (source: %s)\n", rep.By, what, rep.Source)
	for _, h := range rep.Instances {
		fmt.Fprintf(w, "%s: %d of %d digests, %d lost since start", h.Instance, h.Digests, h.Capacity, h.LostDigests)
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
	multi := len(rep.Instances) > 1
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "#\tcount\ttotal_ms\tavg_ms\tmax_ms\trows_exam\trows_sent\terrors\tno_index\ttmp_disk\t"
	if multi {
		head += "instance\t"
	}
	fmt.Fprintln(tw, head+"schema\tdigest_text")
	for i, r := range rep.Queries {
		text := r.DigestText
		if len(text) > 100 {
			text = text[:97] + "..."
		}
		schema := r.Schema
		if schema == "" {
			schema = "-"
		}
		line := fmt.Sprintf("%d\t%d\t%.2f\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t", i+1, r.Count, r.TotalMS, r.AvgMS, r.MaxMS,
			r.RowsExamined, r.RowsSent, r.Errors, r.NoIndexUsed, r.TmpDiskTables)
		if multi {
			line += r.Instance + "\t"
		}
		fmt.Fprintln(tw, line+schema+"\t"+strings.ReplaceAll(text, "\t", " "))
	}
	return tw.Flush()
}
