package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

// queriesServer is `dbpilot queries --server URL [CLUSTER|HOST:PORT]`: the
// top digests over a span from serve's store (GET /api/queries).
type queriesServer struct {
	url   string
	token string
	ca    string
	since time.Duration
}

// run asks serve; a name is tried as a cluster first, then as an instance.
func (s *queriesServer) run(ctx context.Context, args []string, by string, limit int) (*dbpilot.QueryReport, error) {
	if len(args) > 1 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "queries --server takes at most one CLUSTER or HOST:PORT")
	}
	tok := s.token
	if tok == "" {
		tok = os.Getenv("DBPILOT_TOKEN")
	}
	api := serveClient(s.url, tok, s.ca)
	f := dbpilot.QueryFilter{Since: time.Now().Add(-s.since), By: by, Limit: limit}
	if len(args) == 0 {
		return api.Queries(ctx, f)
	}
	f.Cluster = args[0]
	rep, err := api.Queries(ctx, f)
	if dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
		return rep, err
	}
	k, perr := dbpilot.ParseInstanceKey(args[0])
	if perr != nil {
		return nil, err // not an instance either: the cluster's error
	}
	f.Cluster, f.Instance = "", k.String()
	return api.Queries(ctx, f)
}

// printQueryReport prints serve's report: a line per instance's source,
// then the digests.
func printQueryReport(w io.Writer, rep *dbpilot.QueryReport) error {
	fmt.Fprintf(w, "Top queries by %s, %s to %s (%s; source: dbpilot serve)\n", rep.By,
		rep.Since.Local().Format("2006-01-02 15:04"), rep.Until.Local().Format("15:04:05"), rep.Until.Sub(rep.Since).Round(time.Second))
	instances := map[string]bool{}
	for _, s := range rep.Sources {
		instances[s.Instance] = true
		fmt.Fprintf(w, "%s: %s", s.Instance, s.Source)
		if s.Detail != "" {
			fmt.Fprintf(w, " (%s)", s.Detail)
		}
		if s.Source == dbpilot.QuerySourcePerformanceSchema {
			fmt.Fprintf(w, ", %d of %d digests, %d lost since start, %d in the span", s.Digests, s.Capacity, s.LostDigests, s.LostInSpan)
		}
		if s.Full {
			fmt.Fprint(w, " - TABLE FULL: new digests are lost; raise performance_schema_digests_size")
		}
		if s.Error != "" {
			fmt.Fprintf(w, " - %s", s.Error)
		}
		if !s.At.IsZero() {
			fmt.Fprintf(w, "; read %s ago", time.Since(s.At).Round(time.Second))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	if len(rep.Queries) == 0 {
		fmt.Fprintln(w, "no statements recorded in the span")
		return nil
	}
	return printQueryTable(w, rep.Queries, len(instances) > 1)
}

// onlyWithoutServer refuses flags that mean reading a server directly.
func onlyWithoutServer(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return dbpilot.Errorf(dbpilot.EINVALID, "--%s reads a server directly: it does not go with --server", n)
		}
	}
	return nil
}

// printQueryTable prints digests as a table; multi adds their instance.
func printQueryTable(w io.Writer, rows []dbpilot.QueryStat, multi bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "#\tcount\ttotal_ms\tavg_ms\tmax_ms\trows_exam\trows_sent\terrors\tno_index\ttmp_disk\t"
	if multi {
		head += "instance\t"
	}
	fmt.Fprintln(tw, head+"schema\tdigest_text")
	for i, r := range rows {
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
