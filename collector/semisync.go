package collector

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// NewSemiSync returns the "semisync" collector (every second): the
// semi-synchronous replication status and variables, in one vocabulary for
// MariaDB (built in, Rpl_semi_sync_master_*/slave_*) and MySQL (plugins,
// Rpl_semi_sync_master_*/slave_* before 8.0.26, source_*/replica_* after):
//
//	dbpilot_semisync_primary_enabled            rpl_semi_sync_{master,source}_enabled
//	dbpilot_semisync_replica_enabled            rpl_semi_sync_{slave,replica}_enabled
//	dbpilot_semisync_primary_timeout_seconds    ..._timeout (ms in the server)
//	dbpilot_semisync_primary_wait_no_replica    ..._wait_no_{slave,replica}
//	dbpilot_semisync_primary_wait_for_replica_count  ..._wait_for_{slave,replica}_count (MySQL)
//	dbpilot_semisync_primary_wait_point_info{wait_point}  ..._wait_point
//	dbpilot_semisync_primary_status             Rpl_semi_sync_{master,source}_status (ON → 1)
//	dbpilot_semisync_replica_status             Rpl_semi_sync_{slave,replica}_status
//	dbpilot_semisync_primary_clients            ..._clients: semi-sync replicas connected
//	dbpilot_semisync_primary_yes_tx_total       transactions acknowledged by a replica
//	dbpilot_semisync_primary_no_tx_total        transactions committed without acknowledgement
//	dbpilot_semisync_primary_off_total          ..._no_times: times the primary fell back to async
//	dbpilot_semisync_primary_tx_avg_wait_seconds   ..._tx_avg_wait_time (µs in the server)
//	dbpilot_semisync_primary_net_avg_wait_seconds  ..._net_avg_wait_time
//	dbpilot_semisync_primary_tx_wait_seconds_total, dbpilot_semisync_primary_tx_waits_total
//	dbpilot_semisync_primary_net_wait_seconds_total, dbpilot_semisync_primary_net_waits_total
//	dbpilot_semisync_primary_wait_sessions      sessions waiting for an acknowledgement
//	dbpilot_semisync_replica_acks_sent_total    Rpl_semi_sync_slave_send_ack (MariaDB)
//	dbpilot_semisync_fell_back                  1 when semi-sync is enabled on the primary
//	                                            side but its status is OFF (commits go async)
//
// The raw variables also appear under mysql_global_status_rpl_semi_sync_*
// (global_status) and mysql_global_variables_rpl_semi_sync_*. A MySQL
// server without the plugins gives nothing.
func NewSemiSync() Collector {
	return &semiSync{fallback: map[dbpilot.InstanceKey]bool{}, vars: map[dbpilot.InstanceKey]ssVars{}, obs: map[dbpilot.InstanceKey]*dbpilot.Instance{}}
}

type semiSync struct {
	mu       sync.Mutex
	fallback map[dbpilot.InstanceKey]bool // instances read with SHOW ... LIKE
	share    *StatusShare                 // nil: none (SetStatusShare)
	// vars holds, per MariaDB instance, its semi-sync variables as last
	// read (FromObservation), and when; obs its last observation, which
	// runs between two observations take while it is at most ssShareAge
	// old.
	vars map[dbpilot.InstanceKey]ssVars
	obs  map[dbpilot.InstanceKey]*dbpilot.Instance
}

type ssVars struct {
	kv map[string]string
	at time.Time
}

// ssVarsEvery is how often FromObservation reads the semi-sync variables
// an observation lacks (wait_point, wait_no_slave): settings that change
// by hand; the enabled flags and timeout come with every observation.
const ssVarsEvery = time.Minute

// ssShareAge is how old a shared status (global_status's read, every
// second) semisync takes instead of reading the status itself.
const ssShareAge = 1500 * time.Millisecond

// SetStatusShare makes runs take the status global_status read within
// ssShareAge from share, and read only the variables
// (SHOW GLOBAL VARIABLES LIKE: no sum of every session's counters).
func (c *semiSync) SetStatusShare(share *StatusShare) {
	c.mu.Lock()
	c.share = share
	c.mu.Unlock()
}

func (*semiSync) Name() string                   { return "semisync" }
func (*semiSync) DefaultInterval() time.Duration { return time.Second }

// ssQuery reads status and variables in one round trip: from
// information_schema on MariaDB, performance_schema on MySQL 5.7+.
func ssQuery(f dbpilot.Flavor) string {
	schema := "performance_schema"
	if f == dbpilot.FlavorMariaDB {
		schema = "information_schema"
	}
	return "SELECT 'status' AS KIND, VARIABLE_NAME, VARIABLE_VALUE FROM " + schema + ".GLOBAL_STATUS WHERE VARIABLE_NAME LIKE 'RPL\\_SEMI\\_SYNC\\_%' " +
		"UNION ALL SELECT 'variable', VARIABLE_NAME, VARIABLE_VALUE FROM " + schema + ".GLOBAL_VARIABLES WHERE VARIABLE_NAME LIKE 'RPL\\_SEMI\\_SYNC\\_%'"
}

// Used where the schema tables cannot be read (performance_schema off).
const (
	ssStatusQuery    = "SHOW GLOBAL STATUS LIKE 'Rpl\\_semi\\_sync\\_%'"
	ssVariablesQuery = "SHOW GLOBAL VARIABLES LIKE 'rpl\\_semi\\_sync\\_%'"
)

func (c *semiSync) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	c.mu.Lock()
	share, obs := c.share, c.obs[t.Key]
	c.mu.Unlock()
	if obs != nil && share != nil && time.Since(obs.ObservedAt) <= ssShareAge {
		// A run between two observations: the last one is fresh enough.
		return c.fromObservation(ctx, q, t, obs)
	}
	return c.read(ctx, q, t)
}

// read reads what the collector writes: the status from the share when
// fresh, else with the variables in one statement (or two, SHOW ... LIKE,
// where the schema tables cannot be read).
func (c *semiSync) read(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	c.mu.Lock()
	fallback, share := c.fallback[t.Key], c.share
	c.mu.Unlock()
	if share != nil {
		if st, at := share.SharedStatus(t.Key); st != nil && time.Since(at) <= ssShareAge {
			vr, err := q.Query(ctx, ssVariablesQuery)
			if err != nil {
				return nil, err
			}
			return ssParse(st, vr.NameValues()), nil
		}
	}
	if !fallback {
		r, err := q.Query(ctx, ssQuery(t.Flavor))
		if err == nil {
			return ssParse(ssSplit(r)), nil
		}
		if mysql.ServerErrorNumber(err) == 0 {
			return nil, err
		}
		c.mu.Lock()
		c.fallback[t.Key] = true
		c.mu.Unlock()
	}
	st, err := q.Query(ctx, ssStatusQuery)
	if err != nil {
		return nil, err
	}
	vr, err := q.Query(ctx, ssVariablesQuery)
	if err != nil {
		return nil, err
	}
	return ssParse(st.NameValues(), vr.NameValues()), nil
}

// FromObservation builds the samples of a MariaDB 10.3+ server (semi-sync
// built in: its variables always exist) without a statement most seconds:
// the status from global_status's read (StatusShare), the enabled flags
// and timeout from discovery's observation (read moments ago), the other
// variables (wait point, wait without replicas) read every ssVarsEvery.
// Elsewhere, or without a fresh shared status, it reads as Collect does.
// Collect takes the last observation too while it is at most ssShareAge
// old (a run between two observations).
func (c *semiSync) FromObservation(ctx context.Context, q Querier, t Target, obs *dbpilot.Instance) ([]dbpilot.Sample, error) {
	c.mu.Lock()
	c.obs[t.Key] = obs
	c.mu.Unlock()
	return c.fromObservation(ctx, q, t, obs)
}

func (c *semiSync) fromObservation(ctx context.Context, q Querier, t Target, obs *dbpilot.Instance) ([]dbpilot.Sample, error) {
	c.mu.Lock()
	share, cached := c.share, c.vars[t.Key]
	c.mu.Unlock()
	maria := obs.Flavor == dbpilot.FlavorMariaDB && obs.Version.AtLeast(10, 3, 0)
	if !maria || share == nil {
		return c.read(ctx, q, t)
	}
	st, at := share.SharedStatus(t.Key)
	if st == nil || time.Since(at) > ssShareAge {
		return c.read(ctx, q, t)
	}
	if cached.kv == nil || time.Since(cached.at) >= ssVarsEvery {
		vr, err := q.Query(ctx, ssVariablesQuery)
		if err != nil {
			return nil, err
		}
		cached = ssVars{kv: vr.NameValues(), at: time.Now()}
		c.mu.Lock()
		c.vars[t.Key] = cached
		c.mu.Unlock()
	}
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	ss := obs.SemiSync
	vars := maps.Clone(cached.kv)
	vars["rpl_semi_sync_master_enabled"] = onOff(ss.PrimaryEnabled)
	vars["rpl_semi_sync_slave_enabled"] = onOff(ss.ReplicaEnabled)
	vars["rpl_semi_sync_master_timeout"] = strconv.FormatInt(ss.PrimaryTimeout.Milliseconds(), 10)
	return ssParse(st, vars), nil
}

// ssSplit splits the union's rows (kind, name, value) into status and
// variables, keyed by lowercased name.
func ssSplit(r *mysql.Rows) (status, vars map[string]string) {
	status, vars = map[string]string{}, map[string]string{}
	for _, row := range r.Values {
		if len(row) < 3 || row[0] == nil || row[1] == nil || row[2] == nil {
			continue
		}
		if *row[0] == "status" {
			status[strings.ToLower(*row[1])] = *row[2]
		} else {
			vars[strings.ToLower(*row[1])] = *row[2]
		}
	}
	return status, vars
}

// ssSide splits a semi-sync variable name into side ("primary", "replica")
// and the rest, in MySQL 8.0.26+ words: rpl_semi_sync_master_wait_no_slave
// → ("primary", "wait_no_replica").
func ssSide(name string) (side, rest string, ok bool) {
	name, ok = strings.CutPrefix(name, "rpl_semi_sync_")
	if !ok {
		return "", "", false
	}
	switch {
	case strings.HasPrefix(name, "master_"):
		side, rest = "primary", name[len("master_"):]
	case strings.HasPrefix(name, "source_"):
		side, rest = "primary", name[len("source_"):]
	case strings.HasPrefix(name, "slave_"):
		side, rest = "replica", name[len("slave_"):]
	case strings.HasPrefix(name, "replica_"):
		side, rest = "replica", name[len("replica_"):]
	default:
		return "", "", false
	}
	rest = strings.ReplaceAll(rest, "slave", "replica")
	return side, rest, true
}

// ssMetric says how one semi-sync value is written.
type ssMetric struct {
	name string
	typ  dbpilot.MetricType
	div  float64 // divides the value (µs, ms → s); 0 means 1
}

var (
	ssStatusMetrics = map[string]ssMetric{
		"primary/status":            {name: "dbpilot_semisync_primary_status"},
		"replica/status":            {name: "dbpilot_semisync_replica_status"},
		"primary/clients":           {name: "dbpilot_semisync_primary_clients"},
		"primary/yes_tx":            {name: "dbpilot_semisync_primary_yes_tx_total", typ: dbpilot.Counter},
		"primary/no_tx":             {name: "dbpilot_semisync_primary_no_tx_total", typ: dbpilot.Counter},
		"primary/no_times":          {name: "dbpilot_semisync_primary_off_total", typ: dbpilot.Counter},
		"primary/tx_avg_wait_time":  {name: "dbpilot_semisync_primary_tx_avg_wait_seconds", div: 1e6},
		"primary/net_avg_wait_time": {name: "dbpilot_semisync_primary_net_avg_wait_seconds", div: 1e6},
		"primary/tx_wait_time":      {name: "dbpilot_semisync_primary_tx_wait_seconds_total", typ: dbpilot.Counter, div: 1e6},
		"primary/net_wait_time":     {name: "dbpilot_semisync_primary_net_wait_seconds_total", typ: dbpilot.Counter, div: 1e6},
		"primary/tx_waits":          {name: "dbpilot_semisync_primary_tx_waits_total", typ: dbpilot.Counter},
		"primary/net_waits":         {name: "dbpilot_semisync_primary_net_waits_total", typ: dbpilot.Counter},
		"primary/wait_sessions":     {name: "dbpilot_semisync_primary_wait_sessions"},
		"replica/send_ack":          {name: "dbpilot_semisync_replica_acks_sent_total", typ: dbpilot.Counter},
	}
	ssVariableMetrics = map[string]ssMetric{
		"primary/enabled":                {name: "dbpilot_semisync_primary_enabled"},
		"replica/enabled":                {name: "dbpilot_semisync_replica_enabled"},
		"primary/timeout":                {name: "dbpilot_semisync_primary_timeout_seconds", div: 1e3},
		"primary/wait_no_replica":        {name: "dbpilot_semisync_primary_wait_no_replica"},
		"primary/wait_for_replica_count": {name: "dbpilot_semisync_primary_wait_for_replica_count"},
	}
)

// ssParse turns semi-sync status and variables (lowercased names) into
// samples; nil when there are none (no plugin loaded).
func ssParse(status, vars map[string]string) []dbpilot.Sample {
	if len(status) == 0 && len(vars) == 0 {
		return nil
	}
	var out []dbpilot.Sample
	seen := map[string]bool{}
	var primaryEnabled, primaryStatus, haveEnabled, haveStatus bool
	emit := func(table map[string]ssMetric, kv map[string]string, isVar bool) {
		for _, name := range slices.Sorted(maps.Keys(kv)) {
			side, rest, ok := ssSide(name)
			if !ok {
				continue
			}
			key := side + "/" + rest
			sk := fmt.Sprint(isVar, key)
			if seen[sk] {
				continue // both old and new names listed: the first wins
			}
			seen[sk] = true
			if isVar && key == "primary/wait_point" && kv[name] != "" {
				out = append(out, dbpilot.Sample{Name: "dbpilot_semisync_primary_wait_point_info",
					Labels: []dbpilot.Label{{Name: "wait_point", Value: strings.ToUpper(kv[name])}}, Value: 1, Type: dbpilot.Gauge})
				continue
			}
			m, known := table[key]
			if !known {
				continue
			}
			v, ok := gsParseValue(kv[name])
			if !ok {
				continue
			}
			switch key {
			case "primary/enabled":
				if isVar {
					primaryEnabled, haveEnabled = v == 1, true
				}
			case "primary/status":
				if !isVar {
					primaryStatus, haveStatus = v == 1, true
				}
			}
			if m.div != 0 {
				v /= m.div
			}
			out = append(out, dbpilot.Sample{Name: m.name, Value: v, Type: m.typ})
		}
	}
	emit(ssVariableMetrics, vars, true)
	emit(ssStatusMetrics, status, false)
	if haveEnabled {
		fell := 0.0
		if primaryEnabled && haveStatus && !primaryStatus {
			fell = 1
		}
		out = append(out, dbpilot.Sample{Name: "dbpilot_semisync_fell_back", Value: fell, Type: dbpilot.Gauge,
			Help: "1 when semi-sync is enabled on the primary side but inactive: commits are not waiting for replicas."})
	}
	return out
}
