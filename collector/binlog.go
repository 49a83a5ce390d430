package collector

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// NewBinlog returns the "binlog" collector (every 5 s): SHOW BINARY LOGS as
// mysqld_exporter's binlog_size writes it:
//
//	mysql_binlog_files         binlog files the server lists
//	mysql_binlog_size_bytes    their combined size
//	mysql_binlog_file_number   the number of the last one (binlog.000042 → 42)
//
// and, on MariaDB, dbpilot_binlog_commits_per_group: how many transactions
// each binlog group commit carried since the previous run (the change of
// Binlog_commits over the change of Binlog_group_commits; absent on the
// first run, after a counter reset and when nothing was committed).
//
// A server without binary logging (log_bin=OFF) gives no samples and no
// error. The collector keeps the previous counters per instance.
func NewBinlog() Collector { return &binlogCollector{prev: map[dbpilot.InstanceKey]blCommits{}} }

type binlogCollector struct {
	statusShared // global_status's read of blStatusNames, when fresh
	mu           sync.Mutex
	prev         map[dbpilot.InstanceKey]blCommits
}

// blStatusNames are the variables of blCommitsQuery.
var blStatusNames = []string{"Binlog_commits", "Binlog_group_commits"}

// blCommits is a reading of MariaDB's group commit counters.
type blCommits struct{ commits, groups float64 }

func (*binlogCollector) Name() string                   { return "binlog" }
func (*binlogCollector) DefaultInterval() time.Duration { return 5 * time.Second }

const (
	blLogsQuery    = "SHOW BINARY LOGS"
	blCommitsQuery = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Binlog_commits', 'Binlog_group_commits')"
	// blNoBinaryLogging is ER_NO_BINARY_LOGGING, SHOW BINARY LOGS' answer
	// when log_bin is OFF.
	blNoBinaryLogging = 1381
)

func (c *binlogCollector) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	r, err := q.Query(ctx, blLogsQuery)
	if err != nil {
		if mysql.ServerErrorNumber(err) == blNoBinaryLogging {
			return nil, nil
		}
		return nil, err
	}
	out := blParseLogs(r)
	if t.Flavor != dbpilot.FlavorMariaDB {
		return out, nil
	}
	s := c.sharedRows(t.Key, blStatusNames)
	if s == nil {
		if s, err = q.Query(ctx, blCommitsQuery); err != nil {
			return out, err
		}
	}
	cur, ok := blParseCommits(s)
	if !ok {
		return out, nil
	}
	c.mu.Lock()
	prev, had := c.prev[t.Key]
	c.prev[t.Key] = cur
	c.mu.Unlock()
	if ratio, ok := blRatio(prev, cur); had && ok {
		out = append(out, dbpilot.Sample{Name: "dbpilot_binlog_commits_per_group", Value: ratio, Type: dbpilot.Gauge,
			Help: "Transactions per binlog group commit since the previous reading (MariaDB)."})
	}
	return out, nil
}

// blParseLogs reads SHOW BINARY LOGS (Log_name, File_size[, Encrypted]).
func blParseLogs(r *mysql.Rows) []dbpilot.Sample {
	nameCol, sizeCol := -1, -1
	for i, c := range r.Columns {
		switch strings.ToLower(c) {
		case "log_name":
			nameCol = i
		case "file_size":
			sizeCol = i
		}
	}
	if nameCol < 0 || sizeCol < 0 {
		nameCol, sizeCol = 0, 1
	}
	var size, files, number float64
	for _, row := range r.Values {
		if len(row) <= max(nameCol, sizeCol) {
			continue
		}
		files++
		if row[sizeCol] != nil {
			v, _ := strconv.ParseFloat(*row[sizeCol], 64)
			size += v
		}
		if row[nameCol] != nil {
			name := *row[nameCol]
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				if v, err := strconv.ParseFloat(name[i+1:], 64); err == nil {
					number = v
				}
			}
		}
	}
	return []dbpilot.Sample{
		{Name: "mysql_binlog_files", Value: files, Type: dbpilot.Gauge, Help: "Number of registered binlog files."},
		{Name: "mysql_binlog_size_bytes", Value: size, Type: dbpilot.Gauge, Help: "Combined size of all registered binlog files."},
		{Name: "mysql_binlog_file_number", Value: number, Type: dbpilot.Gauge, Help: "The last binlog file number."},
	}
}

// blParseCommits reads Binlog_commits and Binlog_group_commits.
func blParseCommits(r *mysql.Rows) (blCommits, bool) {
	var c blCommits
	seen := 0
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil || row[1] == nil {
			continue
		}
		v, err := strconv.ParseFloat(*row[1], 64)
		if err != nil {
			continue
		}
		switch strings.ToLower(*row[0]) {
		case "binlog_commits":
			c.commits = v
			seen++
		case "binlog_group_commits":
			c.groups = v
			seen++
		}
	}
	return c, seen == 2
}

// blRatio is Δcommits/Δgroups; ok is false when no group was committed or
// a counter went back (restart, FLUSH STATUS).
func blRatio(prev, cur blCommits) (float64, bool) {
	dc, dg := cur.commits-prev.commits, cur.groups-prev.groups
	if dg <= 0 || dc < 0 {
		return 0, false
	}
	return dc / dg, true
}
