package tui

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/collector"
	"github.com/dbpilot/dbpilot/httpapi"
)

// Server reads a running `dbpilot serve` through its API client: the
// clusters for the instances, their roles and replication channels; PromQL
// metric queries (GET /api/metrics/query, Prometheus' shape) for the rates
// and gauges; the firing alerts. A serve without the alerts endpoint (or
// that evaluates none) shows no alert column.
//
// While the q view is shown (SetView) it also asks for the top digests of
// the last QueriesSpan (GET /api/queries, serve's statements collectors)
// every QueriesEvery. A serve without query statistics is a note.
type Server struct {
	api  *httpapi.Client
	only map[dbpilot.InstanceKey]bool // nil: every instance
	// QueriesEvery is how often the q view asks for the top digests
	// (DefaultQueriesEvery when zero); QueriesSpan is the span they cover
	// (DefaultQueriesSpan when zero).
	QueriesEvery, QueriesSpan time.Duration

	view      atomic.Int32 // the View shown
	queryRows atomic.Int32 // digests the screen has room for (0: unknown)

	qmu       sync.Mutex
	queries   *Queries  // the last answer, shown until the next
	queriesAt time.Time // when it was asked
}

// DefaultQueriesSpan is the span of the top digests the Server source asks
// for.
const DefaultQueriesSpan = time.Minute

var (
	_ Source     = (*Server)(nil)
	_ ViewSetter = (*Server)(nil)
)

// SetView implements ViewSetter.
func (s *Server) SetView(v View, rows int) {
	s.view.Store(int32(v))
	s.queryRows.Store(int32(max(rows, 0)))
}

// NewServer returns a source asking the serve that api calls. only, when
// not empty, limits the rows to those instances.
func NewServer(api *httpapi.Client, only []dbpilot.InstanceKey) *Server {
	s := &Server{api: api}
	if len(only) > 0 {
		s.only = map[dbpilot.InstanceKey]bool{}
		for _, k := range only {
			s.only[k.Normalized()] = true
		}
	}
	return s
}

// Describe implements Source.
func (s *Server) Describe() string { return "server " + s.api.BaseURL() }

// Close implements Source.
func (s *Server) Close() error {
	s.api.HTTP.CloseIdleConnections()
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
	// The instance and its redo log status and variables (lower-cased
	// names, as the server prints them) for collector.RedoLogCapacity.
	target               collector.Target
	redoStatus, redoVars map[string]string

	dirty, dirtyPct, bpPages Num
	ckptAge                  Num
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
	"mysql_global_status_wsrep_cert_deps_distance",
	"mysql_global_variables_innodb_log_file_size",
	"mysql_global_variables_innodb_log_files_in_group",
	"mysql_global_variables_innodb_redo_log_capacity",
	"mysql_global_status_innodb_redo_log_capacity_resized",
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
	{`rate(mysql_global_status_wsrep_flow_control_sent[5s])`,
		func(r *Row, _ *serverScratch, _ map[string]string, v float64) { r.WsrepFCSent = N(v) }},
	{`rate(mysql_global_status_wsrep_flow_control_recv[5s])`,
		func(r *Row, _ *serverScratch, _ map[string]string, v float64) { r.WsrepFCRecv = N(v) }},
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
	case "mysql_global_status_wsrep_cert_deps_distance":
		r.WsrepCertDeps = N(v)
	case "mysql_global_variables_innodb_log_file_size", "mysql_global_variables_innodb_log_files_in_group",
		"mysql_global_variables_innodb_redo_log_capacity":
		sc.redoVars[strings.TrimPrefix(labels["__name__"], "mysql_global_variables_")] = strconv.FormatFloat(v, 'f', -1, 64)
	case "mysql_global_status_innodb_redo_log_capacity_resized":
		sc.redoStatus["innodb_redo_log_capacity_resized"] = strconv.FormatFloat(v, 'f', -1, 64)
	case "dbpilot_heartbeat_lag_seconds":
		sc.heartbeat = N(v)
	}
}

// Poll implements Source.
func (s *Server) Poll(ctx context.Context) (*Frame, error) {
	f := &Frame{Time: time.Now(), Source: s.Describe()}
	clusters, err := s.api.Clusters(ctx)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "top: GET /api/clusters")
	}
	index, scratch := s.addRows(f, clusters)

	queries := serverQueries
	type answer struct {
		series []dbpilot.Series
		err    error
	}
	answers := make([]answer, len(queries))
	var (
		alerts    []*dbpilot.Alert
		alertsErr error
		wg        sync.WaitGroup
	)
	for i, q := range queries {
		wg.Go(func() {
			// A zero time: serve's now.
			answers[i].series, answers[i].err = s.api.QueryInstant(ctx, q.expr, time.Time{})
		})
	}
	wg.Go(func() { alerts, alertsErr = s.api.Alerts(ctx, dbpilot.AlertFilter{State: dbpilot.AlertFiring}) })
	if View(s.view.Load()) == ViewQueries {
		wg.Go(func() { f.Queries = s.pollQueries(ctx) })
	} else {
		s.qmu.Lock()
		s.queries, s.queriesAt = nil, time.Time{}
		s.qmu.Unlock()
	}
	wg.Wait()

	var metricErr error
	for i, q := range queries {
		if answers[i].err != nil {
			if metricErr == nil {
				metricErr = answers[i].err
			}
			continue
		}
		for _, ser := range answers[i].series {
			n, ok := index[normInstance(ser.Labels["instance"])]
			if !ok || len(ser.Points) == 0 {
				continue
			}
			q.set(&f.Rows[n], &scratch[n], ser.Labels, ser.Points[len(ser.Points)-1].V)
		}
	}
	for n := range f.Rows {
		finishRow(&f.Rows[n], scratch[n])
	}
	if metricErr != nil {
		f.Notes = append(f.Notes, "metrics: "+metricErr.Error())
	}
	addAlerts(f, index, alerts, alertsErr)
	return f, nil
}

// addRows adds a row to f for every instance of clusters that s shows,
// once each, and returns the rows' index by normalized instance and the
// scratch space of each row's metrics.
func (s *Server) addRows(f *Frame, clusters []*dbpilot.ClusterStatus) (map[string]int, []serverScratch) {
	index := map[string]int{} // normalized instance → row
	var scratch []serverScratch
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
			r := rowFromInstance(inst)
			if r.Err == "" && !c.Primary.IsZero() && inst.Key.Equal(c.Primary) {
				r.Role = RolePrimary
			}
			for i := range c.ReplicaApply {
				if c.ReplicaApply[i].Key.Equal(inst.Key) {
					a := c.ReplicaApply[i]
					r.Apply = &a
				}
			}
			if c.GroupCommit != nil && c.GroupCommit.Key.Equal(inst.Key) {
				gc := *c.GroupCommit
				r.GroupCommit = &gc
			}
			f.Rows = append(f.Rows, r)
			scratch = append(scratch, serverScratch{
				target:     collector.Target{Key: inst.Key, Flavor: inst.Flavor, Version: inst.Version},
				redoStatus: map[string]string{}, redoVars: map[string]string{},
			})
		}
	}
	assignRoles(f.Rows)
	return index, scratch
}

// finishRow fills the values of r derived from the metrics in sc.
func finishRow(r *Row, sc serverScratch) {
	if r.Err != "" {
		return
	}
	r.DirtyPct = sc.dirtyPct
	if !r.DirtyPct.Valid {
		r.DirtyPct = pct(sc.dirty, sc.bpPages)
	}
	r.CheckpointAge = sc.ckptAge
	if capacity, ok := collector.RedoLogCapacity(sc.redoStatus, sc.redoVars, sc.target); ok {
		r.CheckpointPct = pct(sc.ckptAge, N(float64(capacity)))
	}
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

// addAlerts adds the firing alerts to f and counts them on their rows; a
// serve without alerts says nothing, another error is a note.
func addAlerts(f *Frame, index map[string]int, alerts []*dbpilot.Alert, err error) {
	switch dbpilot.ErrorCode(err) {
	case "":
		f.Alerts, f.AlertsKnown = firing(alerts), true
		for _, a := range f.Alerts {
			if n, ok := index[normInstance(a.Labels["instance"])]; ok {
				f.Rows[n].Alerts++
			}
		}
	case dbpilot.ENOTFOUND, dbpilot.EUNSUPPORTED:
		// A serve without the alerts endpoint, or that evaluates none.
	default:
		f.Notes = append(f.Notes, "alerts: "+err.Error())
	}
}

// pollQueries asks for the top digests when the last answer is
// QueriesEvery old, and returns the last answer.
func (s *Server) pollQueries(ctx context.Context) *Queries {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	every, span := s.QueriesEvery, s.QueriesSpan
	if every <= 0 {
		every = DefaultQueriesEvery
	}
	if span <= 0 {
		span = DefaultQueriesSpan
	}
	now := time.Now()
	if s.queries != nil && now.Sub(s.queriesAt) < every {
		return s.queries
	}
	limit := int(s.queryRows.Load())
	if limit <= 0 {
		limit = DefaultQueryRows
	}
	filter := dbpilot.QueryFilter{Since: now.Add(-span), By: dbpilot.QueryByTotal, Limit: limit}
	if len(s.only) == 1 {
		for k := range s.only {
			filter.Instance = k.String()
		}
	}
	q := &Queries{Origin: "serve, read every " + every.String(), At: now}
	rep, err := s.api.Queries(ctx, filter)
	switch {
	case err == nil:
		q.At = rep.Until
		if q.At.IsZero() {
			q.At = now
		}
		q.Span = span
		if !rep.Since.IsZero() && !rep.Until.IsZero() && rep.Until.After(rep.Since) {
			q.Span = rep.Until.Sub(rep.Since)
		}
		for _, src := range rep.Sources {
			if !s.shows(src.Instance) {
				continue
			}
			q.Sources = append(q.Sources, src) // an error is shown with it
		}
		for _, st := range rep.Queries {
			if s.shows(st.Instance) {
				q.Rows = append(q.Rows, QueryRow{QueryStat: st, Span: q.Span})
			}
		}
		sortQueryRows(q.Rows)
		if len(q.Rows) == 0 && len(q.Sources) == 0 && len(q.Notes) == 0 {
			q.Notes = append(q.Notes, "serve has no query statistics yet")
		}
	case dbpilot.ErrorCode(err) == dbpilot.EUNSUPPORTED || dbpilot.ErrorCode(err) == dbpilot.ENOTFOUND:
		q.Notes = append(q.Notes, "this serve does not collect query statistics (GET /api/queries: "+oneLine(err.Error())+")")
	default:
		q.Notes = append(q.Notes, "GET /api/queries: "+oneLine(err.Error()))
	}
	s.queries, s.queriesAt = q, now
	return q
}

// shows reports whether the instance is one of those shown.
func (s *Server) shows(instance string) bool {
	if s.only == nil {
		return true
	}
	k, err := dbpilot.ParseInstanceKey(instance)
	return err == nil && s.only[k.Normalized()]
}

func normInstance(s string) string {
	k, err := dbpilot.ParseInstanceKey(s)
	if err != nil {
		return s
	}
	return k.Normalized().String()
}

// firing returns the alerts most severe first, then in the order they fired.
func firing(list []*dbpilot.Alert) []dbpilot.Alert {
	out := make([]dbpilot.Alert, 0, len(list))
	for _, a := range list {
		if a != nil {
			out = append(out, *a)
		}
	}
	slices.SortStableFunc(out, func(a, b dbpilot.Alert) int {
		if c := strings.Compare(severityRank(a.Severity), severityRank(b.Severity)); c != 0 {
			return c
		}
		return a.FiredAt.Compare(b.FiredAt)
	})
	return out
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
