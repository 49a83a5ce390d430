package tui

import (
	"strconv"
	"strings"
	"time"
)

// Status is one read of SHOW GLOBAL STATUS, names lower-cased.
type Status struct {
	At     time.Time
	Values map[string]string
}

// Num returns the named value as a number.
func (s Status) Num(name string) Num {
	v, ok := s.Values[name]
	if !ok {
		return Num{}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return Num{}
	}
	return N(f)
}

// Rate returns the per-second increase of counter name between two reads.
// It is unknown when either read lacks the counter, when time did not
// advance, or when the counter went backwards (a restart, FLUSH STATUS).
func Rate(prev, cur Status, name string) Num {
	a, b := prev.Num(name), cur.Num(name)
	dt := cur.At.Sub(prev.At).Seconds()
	if !a.Valid || !b.Valid || dt <= 0 || b.V < a.V {
		return Num{}
	}
	return N((b.V - a.V) / dt)
}

// pct returns 100*a/b, unknown when b is not positive.
func pct(a, b Num) Num {
	if !a.Valid || !b.Valid || b.V <= 0 {
		return Num{}
	}
	return N(100 * a.V / b.V)
}

// fillFromStatus sets the fields of r that come from SHOW GLOBAL STATUS: the
// gauges from cur, the rates from the deltas since prev (nil on a first
// read).
func fillFromStatus(r *Row, prev *Status, cur Status) {
	r.ThreadsRunning = cur.Num("threads_running")
	r.ThreadsConnected = cur.Num("threads_connected")
	r.DirtyPct = pct(cur.Num("innodb_buffer_pool_pages_dirty"), cur.Num("innodb_buffer_pool_pages_total"))
	r.HistoryLength = cur.Num("innodb_history_list_length") // MariaDB; INNODB STATUS overrides
	r.PendingReads = cur.Num("innodb_data_pending_reads")
	r.PendingWrites = cur.Num("innodb_data_pending_writes")
	r.PendingFsyncs = cur.Num("innodb_data_pending_fsyncs")

	state := cur.Values["wsrep_local_state_comment"]
	r.Wsrep = state != "" || strings.EqualFold(cur.Values["wsrep_ready"], "ON")
	if r.Wsrep {
		r.WsrepState = state
		r.WsrepClusterSize = cur.Num("wsrep_cluster_size")
		r.WsrepRecvQueue = cur.Num("wsrep_local_recv_queue")
		r.WsrepSendQueue = cur.Num("wsrep_local_send_queue")
		r.WsrepCertDeps = cur.Num("wsrep_cert_deps_distance")
	}
	if prev == nil {
		return
	}
	p := *prev
	r.QPS = Rate(p, cur, "questions")
	r.Select = Rate(p, cur, "com_select")
	r.Insert = Rate(p, cur, "com_insert")
	r.Update = Rate(p, cur, "com_update")
	r.Delete = Rate(p, cur, "com_delete")
	if _, ok := cur.Values["innodb_rows_read"]; ok {
		r.RowsRead = Rate(p, cur, "innodb_rows_read")
		r.RowsInserted = Rate(p, cur, "innodb_rows_inserted")
		r.RowsUpdated = Rate(p, cur, "innodb_rows_updated")
		r.RowsDeleted = Rate(p, cur, "innodb_rows_deleted")
	} else {
		// MariaDB 10.6+ dropped Innodb_rows_*: its Rows_read (rows read
		// from tables, temporary tables excluded, so not top's own SHOW
		// STATUS) and the handler write counters (every engine) stand in.
		r.RowsRead = Rate(p, cur, "rows_read")
		if !r.RowsRead.Valid {
			r.RowsRead = sum(Rate(p, cur, "handler_read_first"), Rate(p, cur, "handler_read_key"),
				Rate(p, cur, "handler_read_last"), Rate(p, cur, "handler_read_next"), Rate(p, cur, "handler_read_prev"),
				Rate(p, cur, "handler_read_rnd"), Rate(p, cur, "handler_read_rnd_next"))
		}
		r.RowsInserted = Rate(p, cur, "handler_write")
		r.RowsUpdated = Rate(p, cur, "handler_update")
		r.RowsDeleted = Rate(p, cur, "handler_delete")
	}
	if r.Wsrep {
		// wsrep_flow_control_paused_ns is a counter: its rate over the
		// interval is the share of the interval spent paused.
		if ns := Rate(p, cur, "wsrep_flow_control_paused_ns"); ns.Valid {
			r.WsrepFlowPaused = N(ns.V / 1e9 * 100)
		} else {
			// Older servers: the fraction since the last FLUSH STATUS.
			if f := cur.Num("wsrep_flow_control_paused"); f.Valid {
				r.WsrepFlowPaused = N(f.V * 100)
			}
		}
		r.WsrepFCSent = Rate(p, cur, "wsrep_flow_control_sent")
		r.WsrepFCRecv = Rate(p, cur, "wsrep_flow_control_recv")
	}
}
