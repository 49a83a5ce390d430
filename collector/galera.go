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

// NewGalera returns the "galera" collector (every second): SHOW GLOBAL
// STATUS LIKE 'wsrep_%' on Galera nodes (MariaDB Galera Cluster, Percona
// XtraDB Cluster), as mysqld_exporter writes it:
//
//   - every numeric wsrep variable → mysql_global_status_wsrep_<name>, among
//     them wsrep_local_state (4 = Synced), wsrep_local_recv_queue(_avg),
//     wsrep_local_send_queue(_avg), wsrep_flow_control_paused (the share of
//     time paused since the last FLUSH STATUS; rate() of
//     wsrep_flow_control_paused_ns/1e9 gives it per window),
//     wsrep_flow_control_sent/recv (counters), wsrep_cluster_size,
//     wsrep_cluster_status (Primary → 1), wsrep_ready and wsrep_connected
//     (ON → 1);
//   - mysql_galera_status_info{wsrep_local_state_uuid, wsrep_cluster_state_uuid, wsrep_provider_version} 1;
//   - mysql_galera_evs_repl_latency_{min_seconds,avg_seconds,max_seconds,stdev,sample_size}
//     from wsrep_evs_repl_latency.
//
// A server without a Galera provider gives nothing: no wsrep rows, or
// MariaDB's placeholders with an empty wsrep_provider_name. Such a server
// is asked again only once a minute.
func NewGalera() Collector {
	return &galera{absent: map[dbpilot.InstanceKey]time.Time{}, now: time.Now}
}

type galera struct {
	mu     sync.Mutex
	absent map[dbpilot.InstanceKey]time.Time // instance → when to look again
	now    func() time.Time
}

// galeraRecheck is how long a server without Galera is left alone.
const galeraRecheck = time.Minute

func (*galera) Name() string                   { return "galera" }
func (*galera) DefaultInterval() time.Duration { return time.Second }

const galeraQuery = "SHOW GLOBAL STATUS LIKE 'wsrep%'"

func (c *galera) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	c.mu.Lock()
	until, ok := c.absent[t.Key]
	c.mu.Unlock()
	if ok && c.now().Before(until) {
		return nil, nil
	}
	r, err := q.Query(ctx, galeraQuery)
	if err != nil {
		return nil, err
	}
	out := galeraParse(r)
	c.mu.Lock()
	if out == nil {
		c.absent[t.Key] = c.now().Add(galeraRecheck)
	} else {
		delete(c.absent, t.Key)
	}
	c.mu.Unlock()
	return out, nil
}

// galeraCounters are the wsrep variables that only grow.
var galeraCounters = gsSet(
	"wsrep_flow_control_sent", "wsrep_flow_control_recv", "wsrep_flow_control_paused_ns",
	"wsrep_replicated", "wsrep_replicated_bytes", "wsrep_received", "wsrep_received_bytes",
	"wsrep_repl_keys", "wsrep_repl_keys_bytes", "wsrep_repl_data_bytes", "wsrep_repl_other_bytes",
	"wsrep_local_commits", "wsrep_local_cert_failures", "wsrep_local_bf_aborts", "wsrep_local_replays",
	"wsrep_last_committed",
)

// galeraParse turns SHOW GLOBAL STATUS LIKE 'wsrep%' rows into samples;
// nil when the server runs no Galera provider.
func galeraParse(r *mysql.Rows) []dbpilot.Sample {
	vals := make(map[string]string, len(r.Values))
	var names []string
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil || row[1] == nil {
			continue
		}
		n := gsMetricName(*row[0])
		if _, dup := vals[n]; !dup {
			names = append(names, n)
		}
		vals[n] = *row[1]
	}
	if vals["wsrep_provider_name"] == "" && vals["wsrep_local_state_uuid"] == "" {
		return nil
	}
	out := make([]dbpilot.Sample, 0, len(names)+6)
	for _, n := range names {
		if !strings.HasPrefix(n, "wsrep_") {
			continue
		}
		v, ok := galeraValue(vals[n])
		if !ok {
			continue
		}
		typ := dbpilot.Gauge
		if galeraCounters[n] {
			typ = dbpilot.Counter
		}
		out = append(out, dbpilot.Sample{Name: "mysql_global_status_" + n, Value: v, Type: typ})
	}
	out = append(out, dbpilot.Sample{
		Name: "mysql_galera_status_info",
		Labels: []dbpilot.Label{
			{Name: "wsrep_local_state_uuid", Value: vals["wsrep_local_state_uuid"]},
			{Name: "wsrep_cluster_state_uuid", Value: vals["wsrep_cluster_state_uuid"]},
			{Name: "wsrep_provider_version", Value: vals["wsrep_provider_version"]},
		},
		Value: 1, Type: dbpilot.Gauge, Help: "PXC/Galera status information.",
	})
	return append(out, galeraLatency(vals["wsrep_evs_repl_latency"])...)
}

// galeraValue reads a wsrep value: gsParseValue, plus Galera 4's
// true/false (wsrep_flow_control_active).
func galeraValue(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	return gsParseValue(s)
}

// galeraLatency splits wsrep_evs_repl_latency, "min/avg/max/stddev/samples"
// in seconds.
func galeraLatency(s string) []dbpilot.Sample {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return nil
	}
	names := []string{"min_seconds", "avg_seconds", "max_seconds", "stdev", "sample_size"}
	out := make([]dbpilot.Sample, 0, 5)
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil
		}
		out = append(out, dbpilot.Sample{Name: "mysql_galera_evs_repl_latency_" + names[i], Value: v, Type: dbpilot.Gauge})
	}
	return out
}
