package simulator

import (
	"strconv"
	"strings"
	"time"
)

// serverVersion is @@version of every simulated server; the comment says
// what it is.
const (
	serverVersion        = "10.11.19-MariaDB-log"
	serverVersionComment = "dbpilot-sim"
)

// gtidRate is how many transactions per second a live primary adds to its
// cluster's GTID position.
const gtidRate = 10

// bytesPerTrx is how far a transaction moves binary log positions.
const bytesPerTrx = 320

// dynKind says how a status variable moves.
type dynKind int

const (
	dynRate             dynKind = iota // recorded value + rate × factor × uptime
	dynReplicaRate                     // the same on replicas, the recorded value elsewhere
	dynUptime                          // seconds since the (simulated) start
	dynThreadsConnected                // open connections
	dynThreadsRunning                  // 1 + sessions in SLEEP
	dynSlavesConnected                 // live replicas attached
	dynSlaveRunning                    // ON while this server's IO thread is connected
	dynSlavesRunning                   // 1/0, likewise
)

// dynamic is how one status variable moves.
type dynamic struct {
	kind dynKind
	rate float64 // per second, before the instance's factor
}

func rate(r float64) *dynamic { return &dynamic{kind: dynRate, rate: r} }

// statusDynamics are the status variables that move: a modest OLTP load
// (about 200 statements per second, a tenth of them writes), so that
// counters give non-zero rates and dashboards something to draw. Names are
// lower-cased.
var statusDynamics = map[string]*dynamic{
	"uptime":                            {kind: dynUptime},
	"uptime_since_flush_status":         {kind: dynUptime},
	"threads_connected":                 {kind: dynThreadsConnected},
	"threads_running":                   {kind: dynThreadsRunning},
	"slaves_connected":                  {kind: dynSlavesConnected},
	"slave_running":                     {kind: dynSlaveRunning},
	"slaves_running":                    {kind: dynSlavesRunning},
	"slave_received_heartbeats":         {kind: dynReplicaRate, rate: 1},
	"questions":                         rate(180),
	"queries":                           rate(185),
	"com_select":                        rate(120),
	"com_insert":                        rate(18),
	"com_update":                        rate(14),
	"com_delete":                        rate(4),
	"com_commit":                        rate(10),
	"com_begin":                         rate(10),
	"com_replace":                       rate(1),
	"com_set_option":                    rate(1),
	"com_show_status":                   rate(2),
	"com_show_slave_status":             rate(1),
	"bytes_received":                    rate(22000),
	"bytes_sent":                        rate(140000),
	"connections":                       rate(0.05),
	"created_tmp_tables":                rate(2),
	"created_tmp_disk_tables":           rate(0.1),
	"select_scan":                       rate(3),
	"select_range":                      rate(2),
	"sort_rows":                         rate(60),
	"sort_scan":                         rate(1),
	"table_locks_immediate":             rate(40),
	"handler_read_key":                  rate(450),
	"handler_read_next":                 rate(900),
	"handler_read_rnd_next":             rate(1200),
	"handler_write":                     rate(40),
	"handler_update":                    rate(14),
	"handler_delete":                    rate(4),
	"handler_commit":                    rate(36),
	"handler_prepare":                   rate(20),
	"innodb_buffer_pool_read_requests":  rate(3500),
	"innodb_buffer_pool_write_requests": rate(420),
	"innodb_buffer_pool_reads":          rate(0.2),
	"innodb_buffer_pool_pages_flushed":  rate(5),
	"innodb_data_read":                  rate(3300),
	"innodb_data_reads":                 rate(0.2),
	"innodb_data_written":               rate(98000),
	"innodb_data_writes":                rate(22),
	"innodb_data_fsyncs":                rate(11),
	"innodb_os_log_written":             rate(24000),
	"innodb_log_writes":                 rate(10),
	"innodb_pages_written":              rate(5),
	"innodb_pages_created":              rate(1),
	"innodb_pages_read":                 rate(0.2),
	"innodb_lsn_current":                rate(lsnRate),
	"innodb_lsn_flushed":                rate(lsnRate),
	"innodb_lsn_last_checkpoint":        rate(lsnRate),
	"binlog_commits":                    rate(11),
	"binlog_group_commits":              rate(9),
	"binlog_bytes_written":              rate(6500),
}

// lsnRate is how fast the redo log grows, bytes per second; checkpointAge
// how far the checkpoint stays behind (1% of the recorded
// Innodb_checkpoint_max_age).
const (
	lsnRate       = 24000
	checkpointAge = 264613
)

// statusOverrides replace recorded status values: semi-sync is off in the
// simulated fleet.
var statusOverrides = map[string]string{
	"rpl_semi_sync_master_status":  "OFF",
	"rpl_semi_sync_master_clients": "0",
	"rpl_semi_sync_slave_status":   "OFF",
}

// variableOverrides replace recorded variable values for every instance.
var variableOverrides = map[string]string{
	"version":                      serverVersion,
	"version_comment":              serverVersionComment,
	"rpl_semi_sync_master_enabled": "OFF",
	"rpl_semi_sync_slave_enabled":  "OFF",
	"gtid_strict_mode":             "ON",
	"gtid_domain_id":               "0",
	"log_bin":                      "ON",
	"log_slave_updates":            "ON",
	"binlog_format":                "ROW",
	// performance_schema on, as the statements collector reads it.
	"performance_schema":              "ON",
	"performance_schema_digests_size": "5000",
}

// instanceVariables are the variables each instance answers itself
// (Instance.variable).
var instanceVariables = map[string]bool{
	"server_id": true, "port": true, "report_port": true, "report_host": true, "hostname": true,
	"read_only": true, "gtid_binlog_pos": true, "gtid_current_pos": true, "gtid_slave_pos": true,
	"gtid_binlog_state": true,
}

// uptime returns the instance's simulated uptime in seconds at now.
func (in *Instance) uptime(now time.Time) float64 {
	return now.Sub(time.Unix(0, in.started.Load())).Seconds()
}

// statusValue returns the value of a moving status variable.
func (in *Instance) statusValue(nv *nameValue, now time.Time) string {
	d := nv.dyn
	switch d.kind {
	case dynUptime:
		return strconv.FormatUint(uint64(in.uptime(now)), 10)
	case dynThreadsConnected:
		in.mu.Lock()
		n := len(in.conns)
		in.mu.Unlock()
		return strconv.Itoa(n)
	case dynThreadsRunning:
		return strconv.Itoa(1 + int(in.sleepers.Load()))
	case dynSlavesConnected:
		return strconv.Itoa(len(in.liveReplicas()))
	case dynSlaveRunning:
		if in.ioConnected() {
			return "ON"
		}
		return "OFF"
	case dynSlavesRunning:
		if in.ioConnected() {
			return "1"
		}
		return "0"
	case dynReplicaRate:
		if in.replicaSource() == nil {
			return nv.value
		}
	}
	base, err := strconv.ParseFloat(nv.value, 64)
	if err != nil {
		return nv.value
	}
	return strconv.FormatUint(uint64(base+d.rate*in.factor*in.uptime(now)), 10)
}

// variable returns a global variable as SHOW VARIABLES prints it.
func (in *Instance) variable(lower string, now time.Time) (string, bool) {
	switch lower {
	case "server_id":
		return strconv.FormatUint(uint64(in.ServerID), 10), true
	case "port", "report_port":
		return strconv.Itoa(in.Port), true
	case "report_host":
		return in.fleet.opt.Host, true
	case "hostname":
		return in.fleet.hostname, true
	case "read_only":
		if in.readOnly.Load() {
			return "ON", true
		}
		return "OFF", true
	case "gtid_binlog_pos", "gtid_current_pos", "gtid_binlog_state":
		return in.gtid(now), true
	case "gtid_slave_pos":
		if in.replicaSource() == nil && !in.everReplica {
			return "", true
		}
		return in.gtid(now), true
	}
	return in.fleet.tmpl.variable(lower)
}

// selectValue is a variable as SELECT @@global.x prints it: booleans as 1/0.
func selectValue(v string) string {
	switch v {
	case "ON":
		return "1"
	case "OFF":
		return "0"
	}
	return v
}

// gtid returns the instance's GTID position: its cluster's, or where its
// SQL thread stopped.
func (in *Instance) gtid(now time.Time) string {
	return in.cluster.gtidString(in.appliedSeq(now))
}

// appliedSeq is the sequence number this instance has applied.
func (in *Instance) appliedSeq(now time.Time) uint64 {
	in.fleet.topo.RLock()
	stopped, at := in.source != nil && !in.sqlRunning, in.stoppedSeq
	in.fleet.topo.RUnlock()
	if stopped {
		return at
	}
	return in.cluster.seq(now)
}

// binlogPos is the binary log position matching a sequence number.
func binlogPos(seq uint64) uint64 { return 4 + bytesPerTrx*seq }

// heartbeatRow returns the dbpilot.heartbeat row as this instance sees it:
// the writer's server_id, its last write and this server's clock. A replica
// connected to a live source is caught up (the row is as fresh as its clock,
// so lag reads 0); one that lost it keeps the last write it received.
func (in *Instance) heartbeatRow(now time.Time) (id uint32, ts time.Time, ok bool) {
	c := in.cluster
	c.mu.Lock()
	id, ts, ok = c.hbServerID, c.hbTS, c.hbTable
	c.mu.Unlock()
	if !ok || id == 0 {
		return id, ts, ok
	}
	if src := in.replicaSource(); src != nil && in.ioConnected() && in.sqlOn() {
		ts = now
	}
	return id, ts, ok
}

// innodbStatus renders SHOW ENGINE INNODB STATUS with the LSN lines moved on.
func (in *Instance) innodbStatus(now time.Time) string {
	lsn := 6497543 + uint64(lsnRate*in.factor*in.uptime(now))
	var b strings.Builder
	for line := range strings.Lines(in.fleet.tmpl.innodbStatus) {
		switch {
		case strings.HasPrefix(line, "Log sequence number "):
			line = "Log sequence number " + strconv.FormatUint(lsn, 10) + "\n"
		case strings.HasPrefix(line, "Log flushed up to "):
			line = "Log flushed up to   " + strconv.FormatUint(lsn, 10) + "\n"
		case strings.HasPrefix(line, "Pages flushed up to "):
			line = "Pages flushed up to " + strconv.FormatUint(lsn-checkpointAge, 10) + "\n"
		case strings.HasPrefix(line, "Last checkpoint at "):
			line = "Last checkpoint at  " + strconv.FormatUint(lsn-checkpointAge, 10) + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}
