package collector

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// NewGlobalVariables returns the "global_variables" collector (every 60 s):
// SHOW GLOBAL VARIABLES, as mysqld_exporter writes it:
//
//   - every numeric variable → mysql_global_variables_<lowercased name>
//     (gauge; ON/YES → 1, OFF/NO → 0; other text skipped);
//   - mysql_version_info{version, innodb_version, version_comment} 1;
//   - on Galera nodes (wsrep_on=ON): mysql_galera_variables_info{wsrep_cluster_name} 1
//     and mysql_galera_gcache_size_bytes from wsrep_provider_options.
//
// Every run writes every variable. Changes are seen within the interval;
// besides, the Runner runs collectors with intervals of 10 s or more at
// once after it reconnects, which is when a restart with another
// configuration would show. A restart seen only through Uptime going down
// (without the connection breaking) waits for the next tick.
func NewGlobalVariables() Collector { return &globalVariables{cache: map[string]string{}} }

type globalVariables struct {
	mu    sync.Mutex
	cache map[string]string // variable name → metric name
}

func (*globalVariables) Name() string                   { return "global_variables" }
func (*globalVariables) DefaultInterval() time.Duration { return 60 * time.Second }

const gvQuery = "SHOW GLOBAL VARIABLES"

func (c *globalVariables) Collect(ctx context.Context, q Querier, _ Target) ([]dbpilot.Sample, error) {
	r, err := q.Query(ctx, gvQuery)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return gvParse(r, c.cache), nil
}

// gvParse turns SHOW GLOBAL VARIABLES rows into samples; cache may be nil.
func gvParse(r *mysql.Rows, cache map[string]string) []dbpilot.Sample {
	out := make([]dbpilot.Sample, 0, len(r.Values)/2)
	text := map[string]string{}
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil || row[1] == nil {
			continue
		}
		raw, val := *row[0], *row[1]
		name, ok := cache[raw]
		if !ok {
			name = "mysql_global_variables_" + gsMetricName(raw)
			if cache != nil {
				cache[raw] = name
			}
		}
		if v, ok := gsParseValue(val); ok {
			out = append(out, dbpilot.Sample{Name: name, Value: v, Type: dbpilot.Gauge})
		}
		switch lower := strings.ToLower(raw); lower {
		case "version", "innodb_version", "version_comment", "wsrep_on", "wsrep_cluster_name", "wsrep_provider_options":
			text[lower] = val
		}
	}
	out = append(out, dbpilot.Sample{
		Name: "mysql_version_info",
		Labels: []dbpilot.Label{
			{Name: "innodb_version", Value: text["innodb_version"]},
			{Name: "version", Value: text["version"]},
			{Name: "version_comment", Value: text["version_comment"]},
		},
		Value: 1, Type: dbpilot.Gauge, Help: "MySQL version and distribution.",
	})
	if v, _ := gsParseValue(text["wsrep_on"]); v == 1 {
		if n := text["wsrep_cluster_name"]; n != "" {
			out = append(out, dbpilot.Sample{Name: "mysql_galera_variables_info", Labels: []dbpilot.Label{{Name: "wsrep_cluster_name", Value: n}},
				Value: 1, Type: dbpilot.Gauge, Help: "PXC/Galera variables information."})
		}
		if size, ok := gvGcacheSize(text["wsrep_provider_options"]); ok {
			out = append(out, dbpilot.Sample{Name: "mysql_galera_gcache_size_bytes", Value: size, Type: dbpilot.Gauge, Help: "PXC/Galera gcache size."})
		}
	}
	return out
}

var gvGcacheRE = regexp.MustCompile(`(?:^|;\s*)gcache\.size\s*=\s*(\d+(?:\.\d+)?)\s*([KkMmGgTt]?)`)

// gvGcacheSize reads gcache.size from wsrep_provider_options
// ("...; gcache.size = 128M; ...").
func gvGcacheSize(opts string) (float64, bool) {
	m := gvGcacheRE.FindStringSubmatch(opts)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	switch strings.ToUpper(m[2]) {
	case "K":
		v *= 1 << 10
	case "M":
		v *= 1 << 20
	case "G":
		v *= 1 << 30
	case "T":
		v *= 1 << 40
	}
	return v, true
}
