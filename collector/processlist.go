package collector

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// NewProcesslist returns the "processlist" collector (every 5 s). It reads
// information_schema.PROCESSLIST, grouped on the server, and
// information_schema.INNODB_TRX; neither takes locks on user tables.
//
// As mysqld_exporter (info_schema.processlist) names them:
//
//	mysql_info_schema_processlist_threads{command,state}      threads per command and state
//	mysql_info_schema_processlist_seconds{command,state}      sum of their TIME
//	mysql_info_schema_processlist_processes_by_user{mysql_user}
//	mysql_info_schema_processlist_processes_by_host{client_host}
//
// command and state are lowercased, with spaces and '-' as '_' and
// punctuation dropped ("unknown" when empty). dbpilot's own:
//
//	dbpilot_oldest_query_seconds        age of the oldest running statement (Query/Execute), 0 if none
//	dbpilot_innodb_trx_count            open InnoDB transactions
//	dbpilot_innodb_trx_oldest_seconds   age of the oldest, 0 if none
//
// The collector's own connection is not counted.
func NewProcesslist() Collector { return processlist{} }

type processlist struct{}

func (processlist) Name() string                   { return "processlist" }
func (processlist) DefaultInterval() time.Duration { return 5 * time.Second }

// plQuery groups the processlist on the server: one row per user, client
// host, command and state. MariaDB has TIME_MS, for sub-second ages.
func plQuery(f dbpilot.Flavor) string {
	age := "TIME"
	if f == dbpilot.FlavorMariaDB {
		age = "TIME_MS/1000"
	}
	return "SELECT USER, SUBSTRING_INDEX(HOST, ':', 1) AS HOST, COALESCE(COMMAND,'') AS COMMAND, " +
		"COALESCE(STATE,'') AS STATE, COUNT(*) AS THREADS, SUM(TIME) AS SECONDS, " +
		"MAX(IF(COMMAND IN ('Query','Execute'), " + age + ", NULL)) AS OLDEST_QUERY " +
		"FROM information_schema.PROCESSLIST WHERE ID != CONNECTION_ID() AND COALESCE(INFO,'') NOT LIKE '%" + mysql.LivenessMarker + "%' GROUP BY 1,2,3,4"
}

const plTrxQuery = "SELECT COUNT(*) AS TRX, COALESCE(MAX(TIMESTAMPDIFF(SECOND, trx_started, NOW())), 0) AS OLDEST " +
	"FROM information_schema.INNODB_TRX"

func (processlist) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	r, err := q.Query(ctx, plQuery(t.Flavor))
	if err != nil {
		return nil, err
	}
	out := plParseThreads(r)
	tr, err := q.Query(ctx, plTrxQuery)
	if err != nil {
		return out, err
	}
	return append(out, plParseTrx(tr)...), nil
}

// plParseThreads turns the grouped processlist into samples.
func plParseThreads(r *mysql.Rows) []dbpilot.Sample {
	type key struct{ command, state string }
	threads, seconds := map[key]float64{}, map[key]float64{}
	byUser, byHost := map[string]float64{}, map[string]float64{}
	oldest := 0.0
	for _, m := range r.Maps() {
		m = plUpperKeys(m)
		n, _ := strconv.ParseFloat(m["THREADS"], 64)
		secs, _ := strconv.ParseFloat(m["SECONDS"], 64)
		k := key{plSanitize(m["COMMAND"]), plSanitize(m["STATE"])}
		threads[k] += n
		seconds[k] += secs
		byUser[m["USER"]] += n
		host := m["HOST"]
		if host == "" {
			host = "unknown"
		}
		byHost[host] += n
		if v, err := strconv.ParseFloat(m["OLDEST_QUERY"], 64); err == nil && v > oldest {
			oldest = v
		}
	}
	keys := make([]key, 0, len(threads))
	for k := range threads {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].command != keys[j].command {
			return keys[i].command < keys[j].command
		}
		return keys[i].state < keys[j].state
	})
	out := make([]dbpilot.Sample, 0, 2*len(keys)+len(byUser)+len(byHost)+1)
	for _, k := range keys {
		lbl := []dbpilot.Label{{Name: "command", Value: k.command}, {Name: "state", Value: k.state}}
		out = append(out,
			dbpilot.Sample{Name: "mysql_info_schema_processlist_threads", Labels: lbl, Value: threads[k], Type: dbpilot.Gauge},
			dbpilot.Sample{Name: "mysql_info_schema_processlist_seconds", Labels: lbl, Value: seconds[k], Type: dbpilot.Gauge})
	}
	for _, u := range slices.Sorted(maps.Keys(byUser)) {
		out = append(out, dbpilot.Sample{Name: "mysql_info_schema_processlist_processes_by_user", Labels: []dbpilot.Label{{Name: "mysql_user", Value: u}}, Value: byUser[u], Type: dbpilot.Gauge})
	}
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		out = append(out, dbpilot.Sample{Name: "mysql_info_schema_processlist_processes_by_host", Labels: []dbpilot.Label{{Name: "client_host", Value: h}}, Value: byHost[h], Type: dbpilot.Gauge})
	}
	out = append(out, dbpilot.Sample{Name: "dbpilot_oldest_query_seconds", Value: oldest, Type: dbpilot.Gauge,
		Help: "Age of the oldest running statement (command Query or Execute)."})
	return out
}

// plParseTrx reads the INNODB_TRX summary.
func plParseTrx(r *mysql.Rows) []dbpilot.Sample {
	var n, oldest float64
	if ms := r.Maps(); len(ms) == 1 {
		m := plUpperKeys(ms[0])
		n, _ = strconv.ParseFloat(m["TRX"], 64)
		oldest, _ = strconv.ParseFloat(m["OLDEST"], 64)
	}
	return []dbpilot.Sample{
		{Name: "dbpilot_innodb_trx_count", Value: n, Type: dbpilot.Gauge, Help: "Open InnoDB transactions."},
		{Name: "dbpilot_innodb_trx_oldest_seconds", Value: oldest, Type: dbpilot.Gauge, Help: "Age of the oldest open InnoDB transaction."},
	}
}

// plUpperKeys makes column names upper case (servers differ in the case of
// aliases of information_schema columns).
func plUpperKeys(m map[string]string) map[string]string {
	for k := range m {
		if u := strings.ToUpper(k); u != k {
			m[u] = m[k]
			delete(m, k)
		}
	}
	return m
}

// plSanitize normalizes a command or state as mysqld_exporter does.
func plSanitize(s string) string {
	if s == "" {
		return "unknown"
	}
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch c {
		case ';', ',', ':', '.', '(', ')':
		case ' ', '-':
			b.WriteByte('_')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
