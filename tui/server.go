package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Server reads a running `dbpilot serve` through its HTTP API:
// GET /api/clusters for the instances, their roles and replication
// channels; GET /api/metrics/query?expr=... (PromQL, answered in
// Prometheus' JSON shape) for the rates and gauges; GET
// /api/alerts?state=firing for the firing alerts (a serve without that
// endpoint, 404, shows no alert column).
type Server struct {
	base  string
	token string
	only  map[dbpilot.InstanceKey]bool // nil: every instance
	// HTTP is the client used (a 5 s timeout by default).
	HTTP *http.Client
}

var _ Source = (*Server)(nil)

// NewServer returns a source asking the serve at baseURL ("http://host:port";
// a bare host:port means http). token, when set, is sent as a bearer token.
// only, when not empty, limits the rows to those instances.
func NewServer(baseURL, token string, only []dbpilot.InstanceKey) *Server {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	s := &Server{base: base, token: token, HTTP: &http.Client{Timeout: 5 * time.Second}}
	if len(only) > 0 {
		s.only = map[dbpilot.InstanceKey]bool{}
		for _, k := range only {
			s.only[k.Normalized()] = true
		}
	}
	return s
}

// Describe implements Source.
func (s *Server) Describe() string { return "server " + s.base }

// Close implements Source.
func (s *Server) Close() error {
	s.HTTP.CloseIdleConnections()
	return nil
}

// serverQuery is one PromQL query of the Server source and how each series
// of its answer fills a row (and the scratch values combined after every
// query answered).
type serverQuery struct {
	expr string
	set  func(r *Row, sc *serverScratch, labels map[string]string, v float64)
}

// serverScratch holds values that only make sense combined.
type serverScratch struct {
	dirty, dirtyPct, bpPages Num
	ckptAge, logSize         Num
	logFiles, redoCap        Num
	heartbeat                Num
	// Rows_read and the handler counters, for servers without
	// Innodb_rows_* (MariaDB 10.6+).
	rowsRead, handlerRead, handlerWrite, handlerUpdate, handlerDelete Num
}

// gaugeNames are read in one query with a regular expression on __name__:
// the names dbpilot's collectors write (mysqld_exporter's, and dbpilot_*
// for what it computes), and MariaDB's own status names as fallbacks.
var gaugeNames = []string{
	"mysql_global_status_threads_running",
	"mysql_global_status_threads_connected",
	"mysql_global_status_buffer_pool_pages", // state data, dirty, free, misc
	"dbpilot_innodb_buffer_pool_dirty_percent",
	"dbpilot_innodb_checkpoint_age_bytes",
	"mysql_global_status_innodb_checkpoint_age",
	"dbpilot_innodb_history_list_length",
	"mysql_global_status_innodb_history_list_length",
	"dbpilot_innodb_pending_reads",
	"dbpilot_innodb_pending_writes",
	"dbpilot_innodb_pending_fsyncs",
	"mysql_global_status_wsrep_local_state",
	"mysql_global_status_wsrep_cluster_size",
	"mysql_global_status_wsrep_local_recv_queue",
	"mysql_global_status_wsrep_local_send_queue",
	"mysql_global_variables_innodb_log_file_size",
	"mysql_global_variables_innodb_log_files_in_group",
	"mysql_global_variables_innodb_redo_log_capacity",
	"dbpilot_heartbeat_lag_seconds",
}

// wsrepStates names wsrep_local_state values.
var wsrepStates = map[int]string{1: "Joining", 2: "Donor/Desynced", 3: "Joined", 4: "Synced"}

func addNum(n Num, v float64) Num { return N(n.V + v) }

// serverQueries are the queries the Server source asks, in
// mysqld_exporter's metric names (which dbpilot's collectors follow).
var serverQueries = []serverQuery{
	{`rate(mysql_global_status_questions[5s])`, func(r *Row, _ *serverScratch, _ map[string]string, v float64) { r.QPS = N(v) }},
	{`rate(mysql_global_status_commands_total{command=~"select|insert|update|delete"}[5s])`,
		func(r *Row, _ *serverScratch, l map[string]string, v float64) {
			switch l["command"] {
			case "select":
				r.Select = N(v)
			case "insert":
				r.Insert = N(v)
			case "update":
				r.Update = N(v)
			case "delete":
				r.Delete = N(v)
			}
		}},
	{`rate(mysql_global_status_innodb_row_ops_total[5s])`,
		func(r *Row, _ *serverScratch, l map[string]string, v float64) {
			switch l["operation"] {
			case "read":
				r.RowsRead = N(v)
			case "inserted":
				r.RowsInserted = N(v)
			case "updated":
				r.RowsUpdated = N(v)
			case "deleted":
				r.RowsDeleted = N(v)
			}
		}},
	{`rate(mysql_global_status_handlers_total{handler=~"write|update|delete|read_.*"}[5s])`,
		func(_ *Row, sc *serverScratch, l map[string]string, v float64) {
			switch h := l["handler"]; {
			case h == "write":
				sc.handlerWrite = N(v)
			case h == "update":
				sc.handlerUpdate = N(v)
			case h == "delete":
				sc.handlerDelete = N(v)
			case strings.HasPrefix(h, "read_"):
				sc.handlerRead = addNum(sc.handlerRead, v)
			}
		}},
	{`rate(mysql_global_status_rows_read[5s])`,
		func(_ *Row, sc *serverScratch, _ map[string]string, v float64) { sc.rowsRead = N(v) }},
	{`rate(mysql_global_status_wsrep_flow_control_paused_ns[5s])`,
		func(r *Row, _ *serverScratch, _ map[string]string, v float64) { r.WsrepFlowPaused = N(v / 1e9 * 100) }},
	{`{__name__=~"` + strings.Join(gaugeNames, "|") + `"}`, setGauge},
}

// setGauge applies one series of the gauge query.
func setGauge(r *Row, sc *serverScratch, labels map[string]string, v float64) {
	switch labels["__name__"] {
	case "mysql_global_status_threads_running":
		r.ThreadsRunning = N(v)
	case "mysql_global_status_threads_connected":
		r.ThreadsConnected = N(v)
	case "mysql_global_status_buffer_pool_pages":
		switch labels["state"] {
		case "dirty":
			sc.dirty = N(v)
		case "data", "free", "misc": // together, Innodb_buffer_pool_pages_total
			sc.bpPages = addNum(sc.bpPages, v)
		}
	case "dbpilot_innodb_buffer_pool_dirty_percent":
		sc.dirtyPct = N(v)
	case "dbpilot_innodb_checkpoint_age_bytes", "mysql_global_status_innodb_checkpoint_age":
		if !sc.ckptAge.Valid || labels["__name__"] == "dbpilot_innodb_checkpoint_age_bytes" {
			sc.ckptAge = N(v)
		}
	case "dbpilot_innodb_history_list_length", "mysql_global_status_innodb_history_list_length":
		if !r.HistoryLength.Valid || labels["__name__"] == "dbpilot_innodb_history_list_length" {
			r.HistoryLength = N(v)
		}
	case "dbpilot_innodb_pending_reads":
		r.PendingReads = N(v)
	case "dbpilot_innodb_pending_writes":
		r.PendingWrites = N(v)
	case "dbpilot_innodb_pending_fsyncs":
		r.PendingFsyncs = N(v)
	case "mysql_global_status_wsrep_local_state":
		if v > 0 {
			r.Wsrep = true
			r.WsrepState = wsrepStates[int(v)]
			if r.WsrepState == "" {
				r.WsrepState = strconv.Itoa(int(v))
			}
		}
	case "mysql_global_status_wsrep_cluster_size":
		r.WsrepClusterSize = N(v)
	case "mysql_global_status_wsrep_local_recv_queue":
		r.WsrepRecvQueue = N(v)
	case "mysql_global_status_wsrep_local_send_queue":
		r.WsrepSendQueue = N(v)
	case "mysql_global_variables_innodb_log_file_size":
		sc.logSize = N(v)
	case "mysql_global_variables_innodb_log_files_in_group":
		sc.logFiles = N(v)
	case "mysql_global_variables_innodb_redo_log_capacity":
		sc.redoCap = N(v)
	case "dbpilot_heartbeat_lag_seconds":
		sc.heartbeat = N(v)
	}
}

// Poll implements Source.
func (s *Server) Poll(ctx context.Context) (*Frame, error) {
	f := &Frame{Time: time.Now(), Source: s.Describe()}
	var clusters []*dbpilot.ClusterStatus
	if err := s.get(ctx, "/api/clusters", &clusters); err != nil {
		return nil, err
	}
	index := map[string]int{} // normalized instance → row
	for _, c := range clusters {
		if c == nil {
			continue
		}
		for _, inst := range c.Instances {
			if inst == nil {
				continue
			}
			k := inst.Key.Normalized()
			if s.only != nil && !s.only[k] {
				continue
			}
			if _, dup := index[k.String()]; dup {
				continue
			}
			index[k.String()] = len(f.Rows)
			f.Rows = append(f.Rows, rowFromInstance(c, inst))
		}
	}
	assignRoles(f.Rows)

	queries := serverQueries
	type answer struct {
		series []promSample
		err    error
	}
	answers := make([]answer, len(queries))
	var alerts []dbpilot.Alert
	var alertsKnown bool
	var alertsErr error
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() {
			answers[i].series, answers[i].err = s.query(ctx, q.expr)
		})
	}
	wg.Go(func() { alerts, alertsKnown, alertsErr = s.alerts(ctx) })
	wg.Wait()

	scratch := make([]serverScratch, len(f.Rows))
	var metricErr error
	for i, q := range queries {
		if answers[i].err != nil {
			if metricErr == nil {
				metricErr = answers[i].err
			}
			continue
		}
		for _, smp := range answers[i].series {
			n, ok := index[normInstance(smp.labels["instance"])]
			if !ok {
				continue
			}
			q.set(&f.Rows[n], &scratch[n], smp.labels, smp.value)
		}
	}
	for n := range f.Rows {
		r, sc := &f.Rows[n], scratch[n]
		if r.Err != "" {
			continue
		}
		r.DirtyPct = sc.dirtyPct
		if !r.DirtyPct.Valid {
			r.DirtyPct = pct(sc.dirty, sc.bpPages)
		}
		r.CheckpointAge = sc.ckptAge
		capacity := sc.redoCap
		if !capacity.Valid || capacity.V <= 0 {
			files := 1.0
			if sc.logFiles.Valid && sc.logFiles.V >= 1 {
				files = sc.logFiles.V
			}
			if sc.logSize.Valid {
				capacity = N(sc.logSize.V * files)
			}
		}
		r.CheckpointPct = pct(sc.ckptAge, capacity)
		if !r.RowsRead.Valid && !r.RowsInserted.Valid {
			r.RowsRead, r.RowsInserted, r.RowsUpdated, r.RowsDeleted = sc.rowsRead, sc.handlerWrite, sc.handlerUpdate, sc.handlerDelete
			if !r.RowsRead.Valid {
				r.RowsRead = sc.handlerRead
			}
		}
		if sc.heartbeat.Valid && len(r.Channels) > 0 {
			r.Lag, r.LagNull = sc.heartbeat, false
		}
	}
	if metricErr != nil {
		f.Notes = append(f.Notes, "metrics: "+metricErr.Error())
	}
	switch {
	case alertsErr != nil:
		f.Notes = append(f.Notes, "alerts: "+alertsErr.Error())
	case alertsKnown:
		f.Alerts, f.AlertsKnown = alerts, true
		for _, a := range alerts {
			if n, ok := index[normInstance(a.Labels["instance"])]; ok {
				f.Rows[n].Alerts++
			}
		}
	}
	return f, nil
}

// rowFromInstance fills what serve's cluster view says of an instance.
func rowFromInstance(c *dbpilot.ClusterStatus, inst *dbpilot.Instance) Row {
	r := Row{Instance: inst.Key.String()}
	if !inst.Reachable {
		r.Err = "unreachable"
		if inst.LastError != "" {
			r.Err = inst.LastError
		}
		return r
	}
	r.ReadOnly = inst.ReadOnly
	if inst.Flavor == dbpilot.FlavorMariaDB {
		r.GTID = inst.GTID.CurrentPos
	} else {
		r.GTID = inst.GTID.Executed
	}
	for _, ch := range inst.Channels {
		c := Channel{Name: ch.Name, Source: ch.Source.String(), IORunning: string(ch.IORunning), SQLRunning: yesNo(ch.SQLRunning)}
		if ch.SecondsBehind != nil {
			c.Lag = N(float64(*ch.SecondsBehind))
		}
		if ch.RelayLogSpace > 0 {
			c.RelayLogSpace = N(float64(ch.RelayLogSpace))
		}
		r.Channels = append(r.Channels, c)
		if !c.Lag.Valid {
			r.LagNull = true
		} else if !r.Lag.Valid || c.Lag.V > r.Lag.V {
			r.Lag = c.Lag
		}
	}
	if r.LagNull {
		r.Lag = Num{}
	}
	if !c.Primary.IsZero() && inst.Key.Equal(c.Primary) {
		r.Role = RolePrimary
	}
	return r
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

func normInstance(s string) string {
	k, err := dbpilot.ParseInstanceKey(s)
	if err != nil {
		return s
	}
	return k.Normalized().String()
}

// errNotFound is a 404 from serve.
var errNotFound = errors.New("not found")

// get fetches path and decodes its JSON body into v.
func (s *Server) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "top: server URL %q", s.base)
	}
	req.Header.Set("Accept", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "top: GET %s", path)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "top: GET %s", path)
	}
	if resp.StatusCode == http.StatusNotFound {
		return errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "top: GET %s: %s: %s", path, resp.Status, msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return dbpilot.WrapError(dbpilot.EINTERNAL, err, "top: GET %s: unexpected answer", path)
	}
	return nil
}

// promSample is one series of an instant vector.
type promSample struct {
	labels map[string]string
	value  float64
}

// promResponse is Prometheus' HTTP API answer.
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// query runs an instant PromQL query.
func (s *Server) query(ctx context.Context, expr string) ([]promSample, error) {
	var resp promResponse
	err := s.get(ctx, "/api/metrics/query?expr="+url.QueryEscape(expr), &resp)
	if errors.Is(err, errNotFound) {
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "this serve has no /api/metrics/query")
	}
	if err != nil {
		return nil, err
	}
	return decodeVector(&resp)
}

func decodeVector(resp *promResponse) ([]promSample, error) {
	if resp.Status != "success" {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "query failed: %s %s", resp.ErrorType, resp.Error)
	}
	if resp.Data.ResultType != "vector" {
		return nil, nil // a scalar or string answers nothing per instance
	}
	var result []struct {
		Metric map[string]string `json:"metric"`
		Value  []json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(resp.Data.Result, &result); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINTERNAL, err, "query: unexpected result")
	}
	out := make([]promSample, 0, len(result))
	for _, r := range result {
		if len(r.Value) != 2 {
			continue
		}
		var sv string
		if err := json.Unmarshal(r.Value[1], &sv); err != nil {
			continue
		}
		v, err := strconv.ParseFloat(sv, 64)
		if err != nil {
			continue
		}
		out = append(out, promSample{labels: r.Metric, value: v})
	}
	return out, nil
}

// alerts returns the firing alerts; known is false when the serve has no
// alerts endpoint (404).
func (s *Server) alerts(ctx context.Context) (firing []dbpilot.Alert, known bool, err error) {
	var raw json.RawMessage
	err = s.get(ctx, "/api/alerts?state=firing", &raw)
	if errors.Is(err, errNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var list []dbpilot.Alert
	if err := json.Unmarshal(raw, &list); err != nil {
		// {"alerts": [...]} is accepted too.
		var wrapped struct {
			Alerts []dbpilot.Alert `json:"alerts"`
		}
		if err2 := json.Unmarshal(raw, &wrapped); err2 != nil {
			return nil, false, fmt.Errorf("unexpected answer: %w", err)
		}
		list = wrapped.Alerts
	}
	firing = list[:0]
	for _, a := range list {
		if a.State == "" || a.State == dbpilot.AlertFiring {
			firing = append(firing, a)
		}
	}
	slices.SortStableFunc(firing, func(a, b dbpilot.Alert) int {
		if c := strings.Compare(severityRank(a.Severity), severityRank(b.Severity)); c != 0 {
			return c
		}
		return a.FiredAt.Compare(b.FiredAt)
	})
	return firing, true, nil
}

func severityRank(s string) string {
	switch s {
	case "critical":
		return "0"
	case "warning":
		return "1"
	}
	return "2" + s
}
