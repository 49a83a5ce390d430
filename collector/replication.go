package collector

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/mysql"
)

// Statements of the replication collector besides the replica status
// (mysql.Dialect.ShowReplicaStatusSQL).
const (
	// replMariaGTIDSQL reads where a MariaDB server is (per domain) and what
	// its replication threads have applied.
	replMariaGTIDSQL = "SELECT @@global.gtid_current_pos, @@global.gtid_slave_pos"
	// replMySQLGTIDSQL reads MySQL's executed GTID set.
	replMySQLGTIDSQL = "SELECT @@global.gtid_mode, @@global.gtid_executed"
	// replMariaWorkersSQL lists MariaDB's parallel replication workers
	// (slave_parallel_threads), a pool shared by every connection; idle ones
	// wait in "Waiting for work from SQL thread". The processlist table is
	// read instead of SHOW PROCESSLIST so that only the workers come back.
	replMariaWorkersSQL = "SELECT STATE FROM information_schema.PROCESSLIST WHERE COMMAND = 'Slave_worker'"
	// replMySQLWorkersSQL lists MySQL's applier workers per channel (one row
	// for the applier itself when replica_parallel_workers is 0); a worker
	// with an APPLYING_TRANSACTION (8.0.2+) is busy.
	replMySQLWorkersSQL = "SELECT CHANNEL_NAME, SERVICE_STATE, APPLYING_TRANSACTION FROM performance_schema.replication_applier_status_by_worker"
)

// replication reads the state and progress of every replication channel.
type replication struct {
	mu sync.Mutex
	// MariaDB's parallel workers: a replica without any (the default,
	// slave_parallel_threads=0) is checked again every
	// replNoWorkersRecheck only, its zeros written in between.
	noWorkersAt time.Time
	now         func() time.Time
}

// replNoWorkersRecheck is how long a MariaDB replica seen without parallel
// workers is not asked again (a change of slave_parallel_threads needs
// the replica stopped).
const replNoWorkersRecheck = 10 * time.Second

// NewReplication returns the "replication" collector, run every second. It
// reads SHOW ALL SLAVES STATUS (MariaDB) or SHOW REPLICA STATUS (MySQL
// 8.0.22+; SHOW SLAVE STATUS before) and exposes, per channel, the
// mysqld_exporter slave_status names with its labels master_host,
// master_uuid, channel_name (MySQL's channel) and connection_name (MariaDB's
// connection), so that existing dashboards work:
//
//	mysql_slave_status_slave_io_running      1 running, 0 stopped or Connecting
//	mysql_slave_status_slave_sql_running     1 / 0
//	mysql_slave_status_seconds_behind_master absent while the server says NULL
//	mysql_slave_status_relay_log_space, _read_master_log_pos,
//	mysql_slave_status_exec_master_log_pos, _last_io_errno, _last_sql_errno,
//	mysql_slave_status_sql_delay, _master_server_id
//
// and GTID progress, labelled channel (the channel or connection name) and
// domain:
//
//	dbpilot_replication_gtid_seq{domain}                  MariaDB: @@gtid_current_pos, every server
//	dbpilot_replication_gtid_received_seq{channel,domain} MariaDB: the channel's Gtid_IO_Pos
//	dbpilot_replication_gtid_applied_seq{domain}          MariaDB replica: @@gtid_slave_pos
//	dbpilot_gtid_executed_count                           MySQL: transactions in @@gtid_executed
//	dbpilot_replication_gtid_received_count{channel}      MySQL: transactions in Retrieved_Gtid_Set
//
// A replica's transaction lag in a domain is the primary's gtid_seq minus
// the replica's applied_seq. Parallel applier workers, on a replica:
//
//	dbpilot_replication_applier_workers_total, _workers_busy
//
// MariaDB: from information_schema.PROCESSLIST (Command Slave_worker; busy
// unless the state starts with "Waiting for work"), one pool for all
// connections, so no label. MySQL: from
// performance_schema.replication_applier_status_by_worker, per channel
// (label channel); skipped when the table cannot be read.
func NewReplication() Collector { return &replication{now: time.Now} }

func (*replication) Name() string                   { return "replication" }
func (*replication) DefaultInterval() time.Duration { return time.Second }

func (c *replication) Collect(ctx context.Context, q Querier, t Target) ([]dbpilot.Sample, error) {
	d := mysql.Dialect{Flavor: t.Flavor, Version: t.Version}
	rows, err := q.Query(ctx, d.ShowReplicaStatusSQL())
	if err != nil {
		return nil, err
	}
	chans, err := mysql.ReplicaStatus(t.Flavor, rows)
	if err != nil {
		return nil, err
	}
	maria := t.Flavor == dbpilot.FlavorMariaDB
	out := replChannelsSamples(chans, maria)

	// Server-wide GTID position. A refusal (privilege, a server without
	// GTIDs) leaves it out; a broken connection fails the run.
	if maria {
		r, err := q.Query(ctx, replMariaGTIDSQL)
		switch {
		case err == nil:
			if len(r.Values) == 1 && len(r.Values[0]) == 2 {
				out = append(out, replMariaGTIDSamples(r.Values[0][0], r.Values[0][1], len(chans) > 0)...)
			}
		case !rhiServerError(err):
			return out, err
		}
	} else if t.Version.Major == 0 || t.Version.AtLeast(5, 6, 5) { // no GTIDs before 5.6.5
		r, err := q.Query(ctx, replMySQLGTIDSQL)
		switch {
		case err == nil:
			if len(r.Values) == 1 && len(r.Values[0]) == 2 {
				out = append(out, replMySQLGTIDSamples(r.Values[0][0], r.Values[0][1])...)
			}
		case !rhiServerError(err):
			return out, err
		}
	}
	return c.workers(ctx, q, maria, len(chans) > 0, out)
}

// FromObservation builds the samples Collect would from discovery's
// observation of the instance (its channels and GTID positions, read
// moments ago), querying only the applier workers.
func (c *replication) FromObservation(ctx context.Context, q Querier, t Target, obs *dbpilot.Instance) ([]dbpilot.Sample, error) {
	maria := obs.Flavor == dbpilot.FlavorMariaDB
	if obs.Flavor == "" {
		maria = t.Flavor == dbpilot.FlavorMariaDB
	}
	out := replChannelsSamples(obs.Channels, maria)
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	if maria {
		out = append(out, replMariaGTIDSamples(str(obs.GTID.CurrentPos), str(obs.GTID.SlavePos), len(obs.Channels) > 0)...)
	} else {
		out = append(out, replMySQLGTIDSamples(str(obs.GTID.Mode), str(obs.GTID.Executed))...)
	}
	return c.workers(ctx, q, maria, len(obs.Channels) > 0, out)
}

// workers appends the applier workers' samples of a replica to out.
func (c *replication) workers(ctx context.Context, q Querier, maria, replica bool, out []dbpilot.Sample) ([]dbpilot.Sample, error) {
	if !replica {
		return out, nil
	}
	if maria {
		c.mu.Lock()
		recent := !c.noWorkersAt.IsZero() && c.now().Sub(c.noWorkersAt) < replNoWorkersRecheck
		c.mu.Unlock()
		if recent {
			return append(out, replMariaWorkerSamples(&mysql.Rows{})...), nil
		}
		r, err := q.Query(ctx, replMariaWorkersSQL)
		switch {
		case err == nil:
			c.mu.Lock()
			if len(r.Values) == 0 {
				c.noWorkersAt = c.now()
			} else {
				c.noWorkersAt = time.Time{}
			}
			c.mu.Unlock()
			out = append(out, replMariaWorkerSamples(r)...)
		case !rhiServerError(err):
			return out, err
		}
	} else {
		r, err := q.Query(ctx, replMySQLWorkersSQL)
		switch {
		case err == nil:
			out = append(out, replMySQLWorkerSamples(r)...)
		case !rhiServerError(err):
			return out, err
		}
	}
	return out, nil
}

// replChannelsSamples returns the samples of every channel.
func replChannelsSamples(chans []dbpilot.ReplicationChannel, maria bool) []dbpilot.Sample {
	out := make([]dbpilot.Sample, 0, len(chans)*12+8+runnerExtraSamples)
	for _, c := range chans {
		out = append(out, replChannelSamples(c, maria)...)
	}
	return out
}

// replChannelSamples returns one channel's mysql_slave_status_* samples and
// its received GTIDs.
func replChannelSamples(c dbpilot.ReplicationChannel, maria bool) []dbpilot.Sample {
	channelName, connectionName := c.Name, ""
	if maria {
		channelName, connectionName = "", c.Name
	}
	host := c.Source.Host
	if !c.PrintedSource.IsZero() {
		host = c.PrintedSource.Host // as the server printed it
	}
	// One label slice for the channel's samples (sinks do not modify it).
	labels := rhiSample("", 0, 0, "master_host", host, "master_uuid", c.SourceUUID,
		"channel_name", channelName, "connection_name", connectionName).Labels
	g := func(name string, v float64) dbpilot.Sample {
		return dbpilot.Sample{Name: "mysql_slave_status_" + name, Type: dbpilot.Gauge, Value: v, Labels: labels}
	}
	out := []dbpilot.Sample{
		g("slave_io_running", rhiBool(c.IORunning == dbpilot.IORunning)),
		g("slave_sql_running", rhiBool(c.SQLRunning)),
	}
	if c.SecondsBehind != nil {
		out = append(out, g("seconds_behind_master", float64(*c.SecondsBehind)))
	}
	out = append(out,
		g("relay_log_space", float64(c.RelayLogSpace)),
		g("read_master_log_pos", float64(c.ReadSourceLogPos)),
		g("exec_master_log_pos", float64(c.ExecSourceLogPos)),
		g("last_io_errno", float64(c.LastIOErrno)),
		g("last_sql_errno", float64(c.LastSQLErrno)),
		g("sql_delay", float64(c.SQLDelay)),
		g("master_server_id", float64(c.SourceServerID)),
	)
	if maria {
		if l, err := gtid.ParseMariaList(c.GTIDIOPos); err == nil {
			for _, d := range l.Domains() {
				if p, ok := l.DomainSeq(d); ok {
					out = append(out, rhiSample("dbpilot_replication_gtid_received_seq", dbpilot.Gauge, float64(p.Seq),
						"channel", c.Name, "domain", strconv.FormatUint(uint64(d), 10)))
				}
			}
		}
	} else if c.RetrievedGTIDSet != "" || c.UsingGTID == "Auto_Position" {
		if s, err := gtid.ParseMySQLSet(c.RetrievedGTIDSet); err == nil {
			out = append(out, rhiSample("dbpilot_replication_gtid_received_count", dbpilot.Counter, float64(s.Count()), "channel", c.Name))
		}
	}
	return out
}

// replMariaGTIDSamples reads @@gtid_current_pos and @@gtid_slave_pos; the
// applied positions only on a replica (a former replica keeps a stale
// gtid_slave_pos).
func replMariaGTIDSamples(current, slave *string, replica bool) []dbpilot.Sample {
	var out []dbpilot.Sample
	perDomain := func(name string, v *string) {
		if v == nil {
			return
		}
		l, err := gtid.ParseMariaList(*v)
		if err != nil {
			return
		}
		for _, d := range l.Domains() {
			if p, ok := l.DomainSeq(d); ok {
				out = append(out, rhiSample(name, dbpilot.Gauge, float64(p.Seq), "domain", strconv.FormatUint(uint64(d), 10)))
			}
		}
	}
	perDomain("dbpilot_replication_gtid_seq", current)
	if replica {
		perDomain("dbpilot_replication_gtid_applied_seq", slave)
	}
	return out
}

// replMySQLGTIDSamples reads @@gtid_mode and @@gtid_executed.
func replMySQLGTIDSamples(mode, executed *string) []dbpilot.Sample {
	if mode == nil || executed == nil {
		return nil
	}
	if strings.EqualFold(strings.TrimSpace(*mode), "OFF") {
		return nil
	}
	s, err := gtid.ParseMySQLSet(*executed)
	if err != nil {
		return nil
	}
	return []dbpilot.Sample{rhiSample("dbpilot_gtid_executed_count", dbpilot.Counter, float64(s.Count()))}
}

// replWorkerIdle reports whether a MariaDB worker's state is idle.
func replWorkerIdle(state string) bool {
	return state == "" || strings.HasPrefix(state, "Waiting for work")
}

func replMariaWorkerSamples(r *mysql.Rows) []dbpilot.Sample {
	total, busy := 0, 0
	for _, row := range r.Values {
		total++
		state := ""
		if len(row) > 0 && row[0] != nil {
			state = *row[0]
		}
		if !replWorkerIdle(state) {
			busy++
		}
	}
	return []dbpilot.Sample{
		rhiSample("dbpilot_replication_applier_workers_total", dbpilot.Gauge, float64(total)),
		rhiSample("dbpilot_replication_applier_workers_busy", dbpilot.Gauge, float64(busy)),
	}
}

func replMySQLWorkerSamples(r *mysql.Rows) []dbpilot.Sample {
	type counts struct{ total, busy int }
	var order []string
	per := map[string]*counts{}
	for _, row := range r.Maps() {
		row = rhiUpperKeys(row)
		ch := row["CHANNEL_NAME"]
		c := per[ch]
		if c == nil {
			c = &counts{}
			per[ch] = c
			order = append(order, ch)
		}
		c.total++
		if strings.EqualFold(row["SERVICE_STATE"], "ON") && row["APPLYING_TRANSACTION"] != "" {
			c.busy++
		}
	}
	var out []dbpilot.Sample
	for _, ch := range order {
		c := per[ch]
		out = append(out,
			rhiSample("dbpilot_replication_applier_workers_total", dbpilot.Gauge, float64(c.total), "channel", ch),
			rhiSample("dbpilot_replication_applier_workers_busy", dbpilot.Gauge, float64(c.busy), "channel", ch),
		)
	}
	return out
}

// rhiSample builds a sample; labels are name, value pairs.
func rhiSample(name string, typ dbpilot.MetricType, v float64, labels ...string) dbpilot.Sample {
	s := dbpilot.Sample{Name: name, Type: typ, Value: v}
	if len(labels) > 0 {
		s.Labels = make([]dbpilot.Label, 0, len(labels)/2)
		for i := 0; i+1 < len(labels); i += 2 {
			s.Labels = append(s.Labels, dbpilot.Label{Name: labels[i], Value: labels[i+1]})
		}
	}
	return s
}

func rhiBool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// rhiServerError reports whether the server refused a statement (a missing
// privilege, table or variable), as opposed to a broken connection or a
// timeout.
func rhiServerError(err error) bool { return mysql.ServerErrorNumber(err) != 0 }

// rhiUpperKeys returns row with upper-case keys (servers differ in the case
// of information_schema and performance_schema column names).
func rhiUpperKeys(row map[string]string) map[string]string {
	out := make(map[string]string, len(row))
	for k, v := range row {
		out[strings.ToUpper(k)] = v
	}
	return out
}
