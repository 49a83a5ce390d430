package mysql

import (
	"cmp"
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Inspect reads the full state of the server behind d: identity and version,
// the variables that matter to replication, GTID state, every replication
// channel, semi-sync state and the replicas connected to it.
//
// Flavor: MariaDB when @@version or @@version_comment says "MariaDB",
// Percona Server when @@version_comment says "Percona", MySQL otherwise.
//
// It costs few round trips: one for the version, one SELECT for every
// variable, one SHOW GLOBAL STATUS, one replica status and one replica list;
// MySQL adds SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync%' (plugin variables
// may be absent) and, on a replica, the heartbeat periods from
// performance_schema; a server that lists no replica with a host adds a
// processlist read; a Galera node adds one read of its wsrep variables (the
// wsrep status comes with the status read: Instance.Galera). An Inspector
// saves the version round trip on later calls, and keeps each Galera node's
// previous sample for the next (GaleraState.Previous).
//
// Optional parts that the server refuses (a missing privilege on the replica
// list or on performance_schema, a missing table) are skipped; a failure to
// read the variables, the status or the replica status fails the call.
func (d *DB) Inspect(ctx context.Context) (*dbpilot.Instance, error) {
	s := session{q: d, key: d.Key, user: d.opts.User}
	inst, _, err := s.inspect(ctx, nil)
	return inst, err
}

// querier is what inspection needs of a connection: *DB, or recorded outputs
// in tests.
type querier interface {
	Query(ctx context.Context, query string, args ...any) (*Rows, error)
}

// multiQuerier runs several statements in one round trip (DB.QueryMulti on
// a pool opened with Options.MultiStatements, as an Inspector's is).
type multiQuerier interface {
	QueryMulti(ctx context.Context, stmts ...string) ([]*Rows, error)
	// MultiStatements reports whether QueryMulti can be used.
	MultiStatements() bool
}

// session is one inspection of one server.
type session struct {
	q    querier
	key  dbpilot.InstanceKey
	user string
	// pre holds results read ahead in one round trip (prefetch), by
	// statement; query takes a statement's result from it once.
	pre map[string]*Rows
	// shared is the status a collector read of the server, fresh enough
	// to take instead of reading it (nil: read it).
	shared map[string]string
}

// prefetch reads the results of stmts in one round trip when the querier
// can, for the queries that follow to take. A server error (a statement
// the server no longer takes: another server behind the address) leaves
// nothing read ahead: the statements then run one by one and each error
// is handled where it always was. A connection failure is returned.
func (s *session) prefetch(ctx context.Context, op string, stmts ...string) error {
	mq, ok := s.q.(multiQuerier)
	if !ok || !mq.MultiStatements() {
		return nil
	}
	res, err := mq.QueryMulti(ctx, stmts...)
	switch {
	case err == nil:
	case isServerError(err):
		return nil
	default:
		return s.classify(err, op)
	}
	if s.pre == nil {
		s.pre = make(map[string]*Rows, len(stmts))
	}
	for i, q := range stmts {
		s.pre[q] = res[i]
	}
	return nil
}

// serverIdent is what the first query of an inspection learns. An Inspector
// keeps it between calls.
type serverIdent struct {
	Flavor  dbpilot.Flavor
	Version dbpilot.Version
	Comment string
}

func (id serverIdent) dialect() Dialect { return Dialect{Flavor: id.Flavor, Version: id.Version} }

func (id serverIdent) mariaDB() bool { return id.Flavor == dbpilot.FlavorMariaDB }

// semiSyncInSelect reports whether the semi-sync variables always exist and
// can be read in the variables SELECT: MariaDB 10.3+ has semi-sync built in;
// elsewhere it is a plugin that may be absent.
func (id serverIdent) semiSyncInSelect() bool { return id.dialect().flavor().semiSyncBuiltIn() }

// query runs q and, on failure, names the operation in the error instead of
// the statement, keeping the error code.
func (s *session) query(ctx context.Context, op, q string) (*Rows, error) {
	if r, ok := s.pre[q]; ok {
		delete(s.pre, q)
		return r, nil
	}
	r, err := s.q.Query(ctx, q)
	if err != nil {
		return nil, s.classify(err, op)
	}
	return r, nil
}

// classify names op in err, keeping its code.
func (s *session) classify(err error, op string) error {
	cause := err
	var e *dbpilot.Error
	if errors.As(err, &e) && e.Err != nil {
		cause = e.Err
	}
	return Classify(cause, s.key, s.user, op)
}

// isServerError reports whether the server answered err (a privilege, a
// missing table or variable), as opposed to a connection failure or timeout.
func isServerError(err error) bool { return ServerErrorNumber(err) != 0 }

const versionSQL = "SELECT @@global.version, @@global.version_comment"

// inspect reads the server. known is what an earlier call learned of the
// server's identity, or nil; the identity used is returned for next time.
func (s *session) inspect(ctx context.Context, known *serverIdent) (*dbpilot.Instance, *serverIdent, error) {
	var (
		id   serverIdent
		vars map[string]string
	)
	var status map[string]string // shared by a collector (s.shared), or read below
	started := time.Now()
	if known != nil {
		shared := s.shared
		// What every inspection reads, in one round trip: the variables,
		// the status (unless a collector's is shared) and the replica
		// status (3 round trips to 1 at every poll of every instance).
		if err := s.prefetch(ctx, "read variables", inspectSQL(*known, shared == nil)...); err != nil {
			return nil, nil, err
		}
		defer clear(s.pre) // what the inspection did not take (the server changed)
		v, err := s.readVariables(ctx, *known)
		switch {
		case err == nil && v["version"] == known.Version.Raw && v["version_comment"] == known.Comment:
			id, vars, status = *known, v, shared
		case err != nil && !isServerError(err):
			return nil, nil, err
		}
		// Otherwise the server behind the address changed (an upgrade, another
		// server on the port): detect it again.
	}
	if vars == nil {
		var err error
		if id, err = s.detect(ctx); err != nil {
			return nil, nil, err
		}
		if vars, err = s.readVariables(ctx, id); err != nil {
			return nil, nil, err
		}
	}

	if status == nil {
		r, err := s.query(ctx, "read status", statusSQL(id))
		if err != nil {
			return nil, nil, err
		}
		status = r.NameValues()
	}

	if !id.semiSyncInSelect() {
		r, err := s.query(ctx, "read semi-sync variables", semiSyncVariablesSQL)
		switch {
		case err == nil:
			for k, v := range r.NameValues() {
				vars[k] = v
			}
		case !isServerError(err):
			return nil, nil, err
		}
	}

	inst, err := buildInstance(s.key, id, vars, status)
	if err != nil {
		return nil, nil, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "mysql: inspect %s", s.key)
	}
	if galeraLoaded(status) {
		var wvars map[string]string
		r, err := s.query(ctx, "read wsrep variables", galeraVariablesSQL)
		switch {
		case err == nil:
			wvars = r.NameValues()
		case !isServerError(err):
			return nil, nil, err
		}
		inst.Galera = parseGalera(status, wvars)
	}

	if inst.Channels, err = s.readChannels(ctx, id); err != nil {
		return nil, nil, err
	}
	// MariaDB counts its binlog dump threads: with none, SHOW SLAVE HOSTS
	// and the processlist (read when it lists nobody) have nothing to say,
	// and a leaf replica, most of a fleet, is inspected with two
	// statements fewer every poll.
	if id.mariaDB() && status["slaves_connected"] == "0" {
		inst.Replicas = nil
	} else if inst.Replicas, err = s.readReplicas(ctx, id); err != nil {
		return nil, nil, err
	}
	inst.ReadStartedAt, inst.ObservedAt = started, time.Now()
	return inst, &id, nil
}

// inspectSQL is what every inspection of the server id reads, in order:
// the statements prefetch sends together; status: with the status read.
func inspectSQL(id serverIdent, status bool) []string {
	stmts := []string{variablesSQL(variableNames(id))}
	if status {
		stmts = append(stmts, statusSQL(id))
	}
	if !id.semiSyncInSelect() {
		stmts = append(stmts, semiSyncVariablesSQL)
	}
	return append(stmts, id.dialect().ShowReplicaStatusSQL())
}

func (s *session) detect(ctx context.Context) (serverIdent, error) {
	r, err := s.query(ctx, "read version", versionSQL)
	if err != nil {
		return serverIdent{}, err
	}
	if len(r.Values) != 1 || len(r.Values[0]) != 2 || r.Values[0][0] == nil {
		return serverIdent{}, dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: read version on %s: unexpected result", s.key)
	}
	id := serverIdent{}
	raw := *r.Values[0][0]
	if c := r.Values[0][1]; c != nil {
		id.Comment = *c
	}
	id.Flavor = DetectFlavor(raw, id.Comment)
	if id.Version, err = parseServerVersion(raw, id.Flavor); err != nil {
		return serverIdent{}, dbpilot.WrapError(dbpilot.EUNSUPPORTED, err, "mysql: read version on %s", s.key)
	}
	return id, nil
}

// variableNames lists the global variables Inspect reads, for the flavor and
// version: new names where MySQL renamed them (8.0.26: log_replica_updates,
// replica_net_timeout), since the old ones are deprecated and will go.
func variableNames(id serverIdent) []string {
	names := []string{"version", "version_comment", "server_id", "hostname", "port",
		"report_host", "report_port", "read_only", "log_bin", "binlog_format"}
	v := id.Version
	if id.mariaDB() {
		names = append(names, "log_slave_updates", "slave_net_timeout")
		if v.AtLeast(10, 0, 2) {
			names = append(names, "gtid_domain_id", "gtid_strict_mode", "gtid_binlog_pos",
				"gtid_slave_pos", "gtid_current_pos", "gtid_binlog_state")
		}
		if id.semiSyncInSelect() {
			names = append(names, "rpl_semi_sync_master_enabled", "rpl_semi_sync_slave_enabled",
				"rpl_semi_sync_master_timeout")
		}
		return names
	}
	if v.AtLeast(5, 6, 0) {
		names = append(names, "server_uuid")
	}
	if v.AtLeast(5, 7, 8) {
		names = append(names, "super_read_only")
	}
	if v.AtLeast(8, 0, 26) {
		names = append(names, "log_replica_updates", "replica_net_timeout")
	} else {
		names = append(names, "log_slave_updates", "slave_net_timeout")
	}
	if v.AtLeast(5, 6, 5) {
		names = append(names, "gtid_mode", "enforce_gtid_consistency", "gtid_executed", "gtid_purged")
	}
	return names
}

func variablesSQL(names []string) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("@@global.")
		b.WriteString(n)
	}
	return b.String()
}

// readVariables runs the variables SELECT and returns canonical name → value;
// NULL values are absent.
func (s *session) readVariables(ctx context.Context, id serverIdent) (map[string]string, error) {
	names := variableNames(id)
	r, err := s.query(ctx, "read variables", variablesSQL(names))
	if err != nil {
		return nil, err
	}
	if len(r.Values) != 1 || len(r.Values[0]) != len(names) {
		return nil, dbpilot.Errorf(dbpilot.EINTERNAL, "mysql: read variables on %s: got %d rows, want 1 row of %d values", s.key, len(r.Values), len(names))
	}
	vars := make(map[string]string, len(names))
	for i, n := range names {
		if v := r.Values[0][i]; v != nil {
			vars[canonicalName(n)] = *v
		}
	}
	return vars, nil
}

// statusNames are the status variables an inspection of id reads: uptime,
// semi-sync status, MariaDB's count of connected replicas and Galera's
// state (MariaDB without a provider prints placeholders, MySQL nothing).
func statusNames(id serverIdent) []string {
	names := []string{"Uptime", "Rpl_semi_sync_master_status", "Rpl_semi_sync_master_clients", "Rpl_semi_sync_slave_status"}
	if id.mariaDB() {
		names = append(names, "Slaves_connected")
	}
	if id.Flavor.IsMySQLFamily() {
		names = append(names, "Rpl_semi_sync_source_status", "Rpl_semi_sync_source_clients", "Rpl_semi_sync_replica_status")
	}
	return append(names, galeraStatusNames...)
}

// statusSQL reads the status variables of statusNames; names the server
// lacks (no plugin, the other vocabulary) are simply not returned.
func statusSQL(id serverIdent) string {
	names := statusNames(id)
	for i, n := range names {
		names[i] = "'" + n + "'"
	}
	return "SHOW GLOBAL STATUS WHERE Variable_name IN (" + strings.Join(names, ", ") + ")"
}

// InspectStatusNames are the status variables an inspection reads, of
// every flavor, lower-cased: what a StatusShare must hold of a server (a
// read of SHOW GLOBAL STATUS that includes them all).
func InspectStatusNames() []string {
	var out []string
	for _, f := range []dbpilot.Flavor{dbpilot.FlavorMariaDB, dbpilot.FlavorMySQL} {
		for _, n := range statusNames(serverIdent{Flavor: f}) {
			if n = strings.ToLower(n); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// StatusShare gives inspections the status a collector read of a server
// (every second, for its metrics): the variables of InspectStatusNames,
// lower-cased, and when they were read (zero: none). An inspection takes
// them instead of reading them again when they are fresh enough
// (Inspector.ShareStatus): one status read per server and second instead
// of two, on the server as in dbpilot.
type StatusShare interface {
	SharedStatus(key dbpilot.InstanceKey) (status map[string]string, at time.Time)
}

// semiSyncVariablesSQL returns nothing when no semi-sync plugin is loaded.
const semiSyncVariablesSQL = "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync%'"

// buildInstance fills an Instance from the variables (canonical names) and
// status the inspection read.
func buildInstance(key dbpilot.InstanceKey, id serverIdent, vars, status map[string]string) (*dbpilot.Instance, error) {
	f := &fields{row: mapRow(vars), what: "server variables"}
	inst := &dbpilot.Instance{
		Key:            key,
		Reachable:      true,
		Flavor:         id.Flavor,
		Version:        id.Version,
		VersionComment: id.Comment,
	}
	inst.ServerID = uint32(f.uint("server_id", 32))
	inst.ServerUUID = f.str("server_uuid")
	inst.Hostname = f.str("hostname")
	inst.Port = int(f.uint("port", 16))
	inst.ReportHost = f.str("report_host")
	inst.ReportPort = int(f.uint("report_port", 16))
	inst.ReadOnly = f.bool("read_only")
	inst.SuperReadOnly = f.bool("super_read_only")
	inst.LogBin = f.bool("log_bin")
	inst.BinlogFormat = f.str("binlog_format")
	inst.LogReplicaUpdates = f.bool("log_slave_updates")
	inst.SlaveNetTimeout = time.Duration(f.uint("slave_net_timeout", 32)) * time.Second
	if id.mariaDB() {
		inst.GTID = dbpilot.GTIDState{
			Mode:        "ON",
			BinlogPos:   f.str("gtid_binlog_pos"),
			SlavePos:    f.str("gtid_slave_pos"),
			CurrentPos:  f.str("gtid_current_pos"),
			BinlogState: f.str("gtid_binlog_state"),
			DomainID:    uint32(f.uint("gtid_domain_id", 32)),
			StrictMode:  f.bool("gtid_strict_mode"),
		}
	} else {
		enforce := f.str("enforce_gtid_consistency")
		if b, ok := parseBool(enforce); ok && enforce != "" {
			enforce = map[bool]string{true: "ON", false: "OFF"}[b] // MySQL 5.6 prints 1/0
		}
		inst.GTID = dbpilot.GTIDState{
			Mode:                   f.str("gtid_mode"),
			Executed:               cleanGTIDSet(f.str("gtid_executed")),
			Purged:                 cleanGTIDSet(f.str("gtid_purged")),
			EnforceGTIDConsistency: enforce,
		}
	}
	sf := &fields{row: mapRow(canonicalRow(status)), what: "server status"}
	inst.Uptime = time.Duration(sf.uint("uptime", 32)) * time.Second
	inst.SemiSync = parseSemiSync(vars, status)
	if f.err != nil {
		return nil, f.err
	}
	if sf.err != nil {
		return nil, sf.err
	}
	return inst, nil
}

// heartbeatSQL reads MySQL's per-channel heartbeat periods (seconds), which
// SHOW REPLICA STATUS does not show.
const heartbeatSQL = "SELECT CHANNEL_NAME, HEARTBEAT_INTERVAL FROM performance_schema.replication_connection_configuration"

func (s *session) readChannels(ctx context.Context, id serverIdent) ([]dbpilot.ReplicationChannel, error) {
	const op = "read replica status"
	r, err := s.query(ctx, op, id.dialect().ShowReplicaStatusSQL())
	if err != nil {
		return nil, err
	}
	channels, err := ReplicaStatus(id.Flavor, r)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.ErrorCode(err), err, "mysql: %s on %s", op, s.key)
	}
	if len(channels) == 0 {
		channels = nil
	}
	if len(channels) == 0 || !id.Flavor.IsMySQLFamily() || !id.Version.AtLeast(5, 7, 0) {
		return channels, nil
	}
	r, err = s.query(ctx, "read replica heartbeat periods", heartbeatSQL)
	switch {
	case err == nil:
		applyHeartbeats(channels, r.Maps())
	case !isServerError(err):
		return nil, err
	}
	// A server error (no privilege on performance_schema, no table) leaves
	// the periods unknown (HeartbeatUnknown).
	return channels, nil
}

// applyHeartbeats sets each channel's heartbeat period from
// replication_connection_configuration rows (CHANNEL_NAME, HEARTBEAT_INTERVAL).
func applyHeartbeats(channels []dbpilot.ReplicationChannel, rows []map[string]string) {
	periods := make(map[string]time.Duration, len(rows))
	for _, row := range rows {
		r := canonicalRow(row)
		if d, ok := parseSeconds(r["heartbeat_interval"]); ok {
			periods[r["channel_name"]] = d
		}
	}
	for i := range channels {
		if d, ok := periods[channels[i].Name]; ok {
			channels[i].HeartbeatPeriod = d
			channels[i].HeartbeatUnknown = false
		}
	}
}

// processlistSQL lists replication dump threads: one per connected replica.
const processlistSQL = "SELECT ID, USER, HOST, COMMAND FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'"

// readReplicas lists the replicas connected to the server: SHOW SLAVE HOSTS /
// SHOW REPLICAS first; when that lists none, lists one without a host, or is
// refused, the Binlog Dump threads of the processlist. Those carry the
// replica's address but not its port: the replica is assumed to listen on
// this server's port (orchestrator's convention). A processlist host that a
// listed replica already has is not added again, and neither is this server
// itself (a local sandbox, where every replica connects from 127.0.0.1).
func (s *session) readReplicas(ctx context.Context, id serverIdent) ([]dbpilot.InstanceKey, error) {
	var listed []dbpilot.InstanceKey
	hostless := 0
	r, err := s.query(ctx, "list replicas", id.dialect().ShowReplicasSQL())
	switch {
	case err == nil:
		listed, hostless = parseReplicaHosts(r.Maps(), s.key.Port)
	case !isServerError(err):
		return nil, err
	}
	if err == nil && len(listed) > 0 && hostless == 0 {
		return mergeReplicas(s.key, listed), nil
	}
	r, err = s.query(ctx, "read processlist", processlistSQL)
	if err != nil {
		if isServerError(err) {
			return mergeReplicas(s.key, listed), nil
		}
		return nil, err
	}
	return mergeReplicas(s.key, listed, newHosts(listed, parseProcesslistReplicas(r.Maps(), s.key.Port))), nil
}

// newHosts returns the keys of found whose host is not the host of a key in
// listed.
func newHosts(listed, found []dbpilot.InstanceKey) []dbpilot.InstanceKey {
	hosts := make(map[string]bool, len(listed))
	for _, k := range listed {
		hosts[k.Normalized().Host] = true
	}
	var out []dbpilot.InstanceKey
	for _, k := range found {
		if !hosts[k.Normalized().Host] {
			out = append(out, k)
		}
	}
	return out
}

// Inspector implements dbpilot.Inspector. It keeps one connection pool per
// instance, opened on first use and reopened after a connection failure, and
// remembers each server's flavor and version to save a round trip. It is safe
// for concurrent use; calls for one instance run one at a time.
type Inspector struct {
	opts Options
	// share and shareAge: see ShareStatus.
	share    StatusShare
	shareAge time.Duration

	mu     sync.Mutex
	closed bool
	conns  map[dbpilot.InstanceKey]*inspectorConn // by normalized key
}

// inspectorConn is the state kept for one instance. sem holds a token while an
// inspection of the instance runs; db and id belong to the token holder.
type inspectorConn struct {
	sem    chan struct{}
	db     *DB
	id     *serverIdent
	galera *galeraHistory // nil until a Galera node was inspected
}

// NewInspector returns an Inspector that connects with opts.
func NewInspector(opts Options) *Inspector {
	// Its statements are its own (no user input): several go in one round
	// trip (session.prefetch).
	opts.MultiStatements = true
	return &Inspector{opts: opts.withDefaults(), conns: make(map[dbpilot.InstanceKey]*inspectorConn)}
}

var _ dbpilot.Inspector = (*Inspector)(nil)

// ShareStatus makes inspections of a server already inspected take its
// status from share when it was read at most maxAge ago, instead of
// reading it again. Call it before the first Inspect.
func (in *Inspector) ShareStatus(share StatusShare, maxAge time.Duration) {
	in.share, in.shareAge = share, maxAge
}

// sharedStatus is the status of key that share holds, when fresh enough;
// nil otherwise.
func (in *Inspector) sharedStatus(key dbpilot.InstanceKey) map[string]string {
	if in.share == nil {
		return nil
	}
	st, at := in.share.SharedStatus(key)
	if age := time.Since(at); st == nil || age > in.shareAge || age < -time.Second {
		return nil
	}
	return st
}

var errInspectorClosed = dbpilot.Errorf(dbpilot.EUNAVAIL, "mysql: inspector closed")

// Inspect reads the state of the server at key (see DB.Inspect). It returns
// the error, and no Instance, when the server cannot be reached; callers
// record the unreachable instance themselves. The returned Instance's Key is
// key as given.
func (in *Inspector) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	c, err := in.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return in.inspectHeld(ctx, c, key)
}

// InspectOr inspects key through the inspector's connection when it is
// idle and open, and through spare's otherwise: never waiting for an
// inspection of key in flight (a crawl), nor opening a connection of its
// own. The failure path confirms this way: warm connections most of the
// time, its own (spare) when monitoring holds them.
func (in *Inspector) InspectOr(ctx context.Context, key dbpilot.InstanceKey, spare *Inspector) (*dbpilot.Instance, error) {
	nk := key.Normalized()
	in.mu.Lock()
	c := in.conns[nk]
	in.mu.Unlock()
	if c != nil {
		select {
		case c.sem <- struct{}{}:
			in.mu.Lock()
			current := !in.closed && in.conns[nk] == c
			in.mu.Unlock()
			if current && c.db != nil {
				return in.inspectHeld(ctx, c, key)
			}
			<-c.sem
		default:
		}
	}
	return spare.Inspect(ctx, key)
}

// InspectReplicaOr re-reads a replica's channels, the only part of it a
// failure's confirmation needs, in one statement (SHOW ALL SLAVES STATUS,
// SHOW REPLICA STATUS) instead of a whole inspection: through the
// inspector's connection when idle, spare's otherwise (as InspectOr). It
// returns last with the channels read now, reachable; a connection that
// never inspected the server (its flavor unknown) inspects it whole.
func (in *Inspector) InspectReplicaOr(ctx context.Context, last *dbpilot.Instance, spare *Inspector) (*dbpilot.Instance, error) {
	key := last.Key
	nk := key.Normalized()
	for _, x := range []*Inspector{in, spare} {
		x.mu.Lock()
		c := x.conns[nk]
		x.mu.Unlock()
		if c == nil {
			continue
		}
		select {
		case c.sem <- struct{}{}:
		default:
			continue // an inspection in flight holds it
		}
		x.mu.Lock()
		current := !x.closed && x.conns[nk] == c
		x.mu.Unlock()
		if !current || c.db == nil || c.id == nil {
			<-c.sem
			continue
		}
		s := session{q: c.db, key: key, user: x.opts.User}
		channels, err := s.readChannels(ctx, *c.id)
		if err != nil && dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL {
			c.db.Close()
			c.db, c.id = nil, nil
		}
		<-c.sem
		if err != nil {
			return nil, err
		}
		fresh := *last
		fresh.Channels, fresh.Reachable, fresh.LastError, fresh.ObservedAt = channels, true, "", time.Now()
		return &fresh, nil
	}
	return in.InspectOr(ctx, key, spare)
}

// inspectHeld inspects key through c, whose token the caller took, and
// gives the token back.
func (in *Inspector) inspectHeld(ctx context.Context, c *inspectorConn, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	defer func() { <-c.sem }()
	reused := c.db != nil
	inst, err := in.inspectOnce(ctx, c, key)
	if err != nil && reused && dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL && ctx.Err() == nil {
		// A pooled connection broke (the server restarted or died): try once
		// on a fresh connection, so that a restarted server is read at once
		// and a dead one is reported by the connect error.
		inst, err = in.inspectOnce(ctx, c, key)
	}
	return inst, err
}

// inspectOnce inspects key through c's connection, opening it if needed. The
// caller holds c's token.
func (in *Inspector) inspectOnce(ctx context.Context, c *inspectorConn, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	if c.db == nil {
		db, err := Open(ctx, key, in.opts)
		if err != nil {
			return nil, err
		}
		c.db, c.id = db, nil
	}
	s := session{q: c.db, key: key, user: in.opts.User}
	if c.id != nil {
		s.shared = in.sharedStatus(key)
	}
	inst, id, err := s.inspect(ctx, c.id)
	if err != nil {
		if dbpilot.ErrorCode(err) == dbpilot.EUNAVAIL {
			// The connection may be broken or stuck: start afresh.
			c.db.Close()
			c.db, c.id = nil, nil
		}
		return nil, err
	}
	c.id = id
	if inst.Galera != nil {
		c.galera = c.galera.apply(inst)
	} else {
		c.galera = nil
	}
	return inst, nil
}

// acquire returns key's state holding its token, waiting for an inspection
// in flight.
func (in *Inspector) acquire(ctx context.Context, key dbpilot.InstanceKey) (*inspectorConn, error) {
	nk := key.Normalized()
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil, errInspectorClosed
	}
	c := in.conns[nk]
	if c == nil {
		c = &inspectorConn{sem: make(chan struct{}, 1)}
		in.conns[nk] = c
	}
	in.mu.Unlock()
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, Classify(ctx.Err(), key, in.opts.User, "inspect")
	}
	// Close or Forget may have dropped c while we waited.
	in.mu.Lock()
	closed, current := in.closed, in.conns[nk] == c
	in.mu.Unlock()
	if closed || !current {
		<-c.sem
		if closed {
			return nil, errInspectorClosed
		}
		return in.acquire(ctx, key)
	}
	return c, nil
}

// Forget closes the connection to key, if any, and drops what the inspector
// remembers of it: for instances that left the fleet. It waits for an
// inspection of key in flight.
func (in *Inspector) Forget(key dbpilot.InstanceKey) error {
	nk := key.Normalized()
	in.mu.Lock()
	c := in.conns[nk]
	delete(in.conns, nk)
	in.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.close()
}

func (c *inspectorConn) close() error {
	c.sem <- struct{}{}
	defer func() { <-c.sem }()
	if c.db == nil {
		return nil
	}
	err := c.db.Close()
	c.db, c.id = nil, nil
	return err
}

// Close closes every connection, waiting for inspections in flight. Inspect
// fails after Close.
func (in *Inspector) Close() error {
	in.mu.Lock()
	in.closed = true
	conns := in.conns
	in.conns = map[dbpilot.InstanceKey]*inspectorConn{}
	in.mu.Unlock()
	var errs []error
	for _, c := range conns {
		if err := c.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// galeraStatusNames are the wsrep status variables Inspect reads.
var galeraStatusNames = []string{
	"wsrep_provider_name", "wsrep_provider_version", "wsrep_local_state_uuid",
	"wsrep_local_state", "wsrep_local_state_comment", "wsrep_cluster_status", "wsrep_cluster_size",
	"wsrep_cluster_state_uuid", "wsrep_cluster_conf_id", "wsrep_local_index", "wsrep_ready", "wsrep_connected",
	"wsrep_incoming_addresses", "wsrep_desync_count", "wsrep_last_committed",
	"wsrep_flow_control_paused_ns", "wsrep_flow_control_paused", "wsrep_flow_control_sent", "wsrep_flow_control_recv",
	"wsrep_local_recv_queue", "wsrep_local_recv_queue_avg", "wsrep_local_send_queue", "wsrep_local_send_queue_avg",
	"wsrep_cert_deps_distance",
}

// galeraVariablesSQL reads the wsrep variables Inspect uses, on a Galera
// node only.
const galeraVariablesSQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_cluster_address', " +
	"'wsrep_cluster_name', 'wsrep_node_name', 'wsrep_node_address', 'wsrep_node_incoming_address', 'wsrep_desync', " +
	"'wsrep_sst_method', 'wsrep_provider_options')"

// galeraLoaded reports whether status (lower-cased names) comes from a
// server running a Galera provider: MariaDB without one prints placeholder
// wsrep variables with an empty provider name and state uuid.
func galeraLoaded(status map[string]string) bool {
	return status["wsrep_provider_name"] != "" || status["wsrep_local_state_uuid"] != "" && status["wsrep_local_state_uuid"] != zeroUUID
}

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// parseGalera reads a Galera node's state from its status (SHOW GLOBAL STATUS
// rows, lower-cased names) and wsrep variables (nil when they could not be
// read). Values are read leniently: what a provider version does not print
// or prints otherwise stays zero, and never fails the inspection.
func parseGalera(status, vars map[string]string) *dbpilot.GaleraState {
	num := func(m map[string]string, name string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSpace(m[name]), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0
		}
		return f
	}
	integer := func(name string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(status[name]), 10, 64)
		if err != nil {
			return int64(num(status, name))
		}
		return n
	}
	counter := func(name string) uint64 {
		n, err := strconv.ParseUint(strings.TrimSpace(status[name]), 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	flag := func(m map[string]string, name string) bool {
		b, _ := parseBool(m[name])
		return b
	}
	g := &dbpilot.GaleraState{
		LocalState:        dbpilot.GaleraNodeState(integer("wsrep_local_state")),
		LocalStateComment: status["wsrep_local_state_comment"],
		ClusterStatus:     status["wsrep_cluster_status"],
		ClusterSize:       int(integer("wsrep_cluster_size")),
		ClusterStateUUID:  status["wsrep_cluster_state_uuid"],
		ClusterConfID:     integer("wsrep_cluster_conf_id"),
		LocalIndex:        int(integer("wsrep_local_index")),
		Ready:             flag(status, "wsrep_ready"),
		Connected:         flag(status, "wsrep_connected"),
		IncomingAddresses: parseIncomingAddresses(status["wsrep_incoming_addresses"]),
		DesyncCount:       int(integer("wsrep_desync_count")),
		LastCommitted:     integer("wsrep_last_committed"),
		ProviderName:      status["wsrep_provider_name"],
		ProviderVersion:   status["wsrep_provider_version"],
		GaleraCounters: dbpilot.GaleraCounters{
			FlowControlPausedNS: counter("wsrep_flow_control_paused_ns"),
			FlowControlSent:     counter("wsrep_flow_control_sent"),
			FlowControlRecv:     counter("wsrep_flow_control_recv"),
			LocalRecvQueue:      integer("wsrep_local_recv_queue"),
		},
		FlowControlPaused: num(status, "wsrep_flow_control_paused"),
		LocalRecvQueueAvg: num(status, "wsrep_local_recv_queue_avg"),
		LocalSendQueue:    integer("wsrep_local_send_queue"),
		LocalSendQueueAvg: num(status, "wsrep_local_send_queue_avg"),
		CertDepsDistance:  num(status, "wsrep_cert_deps_distance"),
	}
	if vars != nil {
		g.ClusterName = vars["wsrep_cluster_name"]
		g.ClusterAddress = vars["wsrep_cluster_address"]
		g.NodeName = vars["wsrep_node_name"]
		g.NodeAddress = vars["wsrep_node_address"]
		g.NodeIncomingAddress = vars["wsrep_node_incoming_address"]
		g.Desync = flag(vars, "wsrep_desync")
		g.SSTMethod = vars["wsrep_sst_method"]
		g.FCLimit = int(providerOption(vars["wsrep_provider_options"], "gcs.fc_limit"))
	}
	return g
}

// parseIncomingAddresses reads wsrep_incoming_addresses, "host:port,..." in
// the members' order. Entries that name no address a client could use
// (AUTO, an unspecified address, garbage) are left out.
func parseIncomingAddresses(s string) []dbpilot.InstanceKey {
	var out []dbpilot.InstanceKey
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" || strings.EqualFold(a, "AUTO") {
			continue
		}
		k, err := dbpilot.ParseInstanceKey(a)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(strings.Trim(k.Host, "[]")); ip != nil && ip.IsUnspecified() {
			continue
		}
		out = append(out, k)
	}
	return out
}

// providerOption returns the number an option of wsrep_provider_options
// ("a = 1; gcs.fc_limit = 16; ...") is set to, or 0.
func providerOption(opts, name string) float64 {
	for _, kv := range strings.Split(opts, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) != name {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0
		}
		return f
	}
	return 0
}

// galeraHistory is what an Inspector remembers of one Galera node between
// inspections: the last sample, since when the node is in its state, and
// the members its cluster's views listed.
type galeraHistory struct {
	last       dbpilot.GaleraSample
	uptime     time.Duration
	since      time.Time
	changeSeen bool
	stateUUID  string
	members    map[dbpilot.InstanceKey]time.Time // normalized address → last seen in a view
	addrs      map[dbpilot.InstanceKey]dbpilot.InstanceKey
}

// Bounds of the Galera history an Inspector keeps.
const (
	// galeraMaxPrevious: an older sample is not offered as Previous (the
	// node was not inspected for a long time; its window says little).
	galeraMaxPrevious = 10 * time.Minute
	// galeraMemberTTL: a member missing from the views for longer is
	// forgotten (it was removed from the cluster for good).
	galeraMemberTTL = time.Hour
)

// apply fills g's history fields from h and records g's sample in h. h is
// nil on the first inspection; the returned history replaces it.
func (h *galeraHistory) apply(inst *dbpilot.Instance) *galeraHistory {
	g := inst.Galera
	now := inst.ObservedAt
	cur := dbpilot.GaleraSample{At: now, LocalState: g.LocalState, GaleraCounters: g.GaleraCounters}
	sameRun := h != nil && inst.Uptime >= h.uptime && !now.Before(h.last.At) &&
		g.FlowControlPausedNS >= h.last.FlowControlPausedNS && g.FlowControlSent >= h.last.FlowControlSent &&
		g.FlowControlRecv >= h.last.FlowControlRecv
	next := &galeraHistory{last: cur, uptime: inst.Uptime, since: now, stateUUID: g.ClusterStateUUID,
		members: map[dbpilot.InstanceKey]time.Time{}, addrs: map[dbpilot.InstanceKey]dbpilot.InstanceKey{}}
	if sameRun {
		if now.Sub(h.last.At) <= galeraMaxPrevious {
			prev := h.last
			g.Previous = &prev
		}
		if h.last.LocalState == g.LocalState {
			next.since, next.changeSeen = h.since, h.changeSeen
		} else {
			next.changeSeen = true
		}
	}
	g.StateSince, g.StateChangeSeen = next.since, next.changeSeen

	// Members: those of earlier views of the same cluster that this view
	// lacks are former members.
	if h != nil && h.stateUUID == g.ClusterStateUUID {
		for k, seen := range h.members {
			if now.Sub(seen) <= galeraMemberTTL {
				next.members[k], next.addrs[k] = seen, h.addrs[k]
			}
		}
	}
	current := map[dbpilot.InstanceKey]bool{}
	for _, k := range g.IncomingAddresses {
		n := k.Normalized()
		current[n] = true
		next.members[n], next.addrs[n] = now, k
	}
	for n := range next.members {
		if !current[n] {
			g.FormerMembers = append(g.FormerMembers, next.addrs[n])
		}
	}
	slices.SortFunc(g.FormerMembers, func(a, b dbpilot.InstanceKey) int {
		return cmp.Or(strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	return next
}
