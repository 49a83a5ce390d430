package mysql

import (
	"math"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
)

// This file turns what servers print (SHOW ... STATUS rows, variables, the
// processlist) into dbpilot types. It does no I/O, so that every function can
// be tested on recorded outputs (testdata/) and fuzzed.

// DetectFlavor names the server family from @@version and @@version_comment:
// MariaDB when either says "MariaDB", Percona Server when the comment says
// "Percona", MySQL otherwise.
func DetectFlavor(version, versionComment string) dbpilot.Flavor {
	v, c := strings.ToLower(version), strings.ToLower(versionComment)
	switch {
	case strings.Contains(v, "mariadb") || strings.Contains(c, "mariadb"):
		return dbpilot.FlavorMariaDB
	case strings.Contains(c, "percona") || strings.Contains(v, "percona"):
		return dbpilot.FlavorPercona
	}
	return dbpilot.FlavorMySQL
}

// parseServerVersion parses @@version. MariaDB's protocol handshake once
// carried a "5.5.5-" prefix for old clients; strip it should it ever show up.
func parseServerVersion(version string, flavor dbpilot.Flavor) (dbpilot.Version, error) {
	s := version
	if flavor == dbpilot.FlavorMariaDB && strings.HasPrefix(s, "5.5.5-") {
		s = strings.TrimPrefix(s, "5.5.5-")
	}
	v, err := dbpilot.ParseVersion(s)
	if err != nil {
		return v, err
	}
	v.Raw = version
	return v, nil
}

// canonicalName maps a column, variable or status name to one vocabulary:
// lower case, with MySQL 8.0.22+'s "source" and "replica" words replaced by
// "master" and "slave" word by word. So Source_Host, Master_Host and
// master_host all read "master_host"; Seconds_Behind_Source reads
// "seconds_behind_master"; Rpl_semi_sync_source_clients reads
// "rpl_semi_sync_master_clients"; log_replica_updates reads
// "log_slave_updates". Words that merely start alike (Replicate_Do_DB) stay.
func canonicalName(name string) string {
	if c, ok := canonicalNames.Load(name); ok {
		return c.(string)
	}
	c := foldName(name)
	// Servers print a few hundred distinct names; the bound only guards
	// against a caller passing arbitrary strings.
	if canonicalCount.Load() < maxCanonicalNames {
		if _, loaded := canonicalNames.LoadOrStore(strings.Clone(name), c); !loaded {
			canonicalCount.Add(1)
		}
	}
	return c
}

// canonicalNames caches canonicalName: replica status, variables and status
// are read every second on every instance, with the same names each time.
var (
	canonicalNames sync.Map // name -> canonical name
	canonicalCount atomic.Int32
)

const maxCanonicalNames = 8192

func foldName(name string) string {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(name)), "_")
	for i, p := range parts {
		switch p {
		case "source":
			parts[i] = "master"
		case "replica":
			parts[i] = "slave"
		case "replicas":
			parts[i] = "slaves"
		}
	}
	return strings.Join(parts, "_")
}

// canonicalRow returns row with every key passed through canonicalName. Should
// two columns fold into one name (no server prints that), the one whose
// original name sorts first wins, so that the result does not depend on map
// order.
func canonicalRow(row map[string]string) map[string]string {
	out := make(map[string]string, len(row))
	for k, v := range row {
		ck := canonicalName(k)
		if _, dup := out[ck]; dup {
			return canonicalRowSorted(row)
		}
		out[ck] = v
	}
	return out
}

// canonicalRowSorted is canonicalRow for a row where two names fold into
// one: the first in sorted order wins.
func canonicalRowSorted(row map[string]string) map[string]string {
	keys := make([]string, 0, len(row))
	for k := range row {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(row))
	for _, k := range keys {
		ck := canonicalName(k)
		if _, dup := out[ck]; !dup {
			out[ck] = row[k]
		}
	}
	return out
}

// fields reads typed values from a canonical row, remembering the first
// malformed one.
type fields struct {
	row  valueRow
	what string // "replica status", for errors
	err  error
}

// valueRow is one row of values by canonical name: a map, or a result's
// row with its columns' positions (indexedRow: no map per row).
type valueRow interface {
	get(name string) (string, bool)
}

type mapRow map[string]string

func (m mapRow) get(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// indexedRow is a row of a result whose canonical column names index maps
// to positions; NULL reads as absent.
type indexedRow struct {
	index map[string]int
	vals  []*string
}

func (r indexedRow) get(name string) (string, bool) {
	i, ok := r.index[name]
	if !ok || i >= len(r.vals) || r.vals[i] == nil {
		return "", false
	}
	return *r.vals[i], true
}

func (f *fields) str(name string) string {
	v, _ := f.row.get(name)
	return v
}

func (f *fields) fail(name, val, want string) {
	if f.err == nil {
		f.err = dbpilot.Errorf(dbpilot.EINTERNAL, "%s: %s is %q, want %s", f.what, name, truncate(val, 64), want)
	}
}

func (f *fields) uint(name string, bits int) uint64 {
	v, ok := f.row.get(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, bits)
	if err != nil {
		f.fail(name, v, "an unsigned number")
		return 0
	}
	return n
}

func (f *fields) int(name string) int {
	v, ok := f.row.get(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		f.fail(name, v, "a number")
		return 0
	}
	return int(n)
}

// optInt64 returns nil for an absent (NULL) or empty value.
func (f *fields) optInt64(name string) *int64 {
	v, ok := f.row.get(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f.fail(name, v, "a number or NULL")
		return nil
	}
	return &n
}

func (f *fields) bool(name string) bool {
	v, ok := f.row.get(name)
	if !ok {
		return false
	}
	b, valid := parseBool(v)
	if !valid {
		f.fail(name, v, "ON/OFF, YES/NO or 1/0")
	}
	return b
}

// seconds reads a decimal number of seconds such as "30.000".
func (f *fields) seconds(name string) time.Duration {
	v, ok := f.row.get(name)
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return 0
	}
	d, valid := parseSeconds(v)
	if !valid {
		f.fail(name, v, "a number of seconds")
	}
	return d
}

// parseBool reads the spellings servers use for booleans.
func parseBool(v string) (b, ok bool) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true, true
	case "0", "OFF", "NO", "FALSE", "":
		return false, true
	}
	return false, false
}

// maxSeconds bounds parsed durations well inside time.Duration's range; the
// largest heartbeat period a server accepts is 4294967 s.
const maxSeconds = 1 << 32

func parseSeconds(v string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > maxSeconds {
		return 0, false
	}
	return time.Duration(math.Round(f*1000)) * time.Millisecond, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// cleanGTIDSet removes the line breaks and blanks MySQL puts into long GTID
// sets ("uuid1:1-5,\nuuid2:1-3").
func cleanGTIDSet(s string) string {
	if !strings.ContainsAny(s, " \t\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), "")
}

// passwordLiteral finds the string literal after the SQL words that carry a
// password: IDENTIFIED [WITH plugin] BY|AS 'x', PASSWORD('x'),
// MASTER_PASSWORD='x', SOURCE_PASSWORD='x'.
var passwordLiteral = regexp.MustCompile(`(?i)(\bIDENTIFIED\s+(?:WITH\s+\S+\s+)?(?:BY|AS|USING)\s+(?:PASSWORD\s*)?\(?\s*|\bPASSWORD\s*\(\s*|\b(?:MASTER|SOURCE)_PASSWORD\s*=\s*)'(?:[^'\\]|\\.)*'`)

// redactPasswords hides passwords in replication error messages. MariaDB
// binlogs CREATE USER ... IDENTIFIED BY 'secret' as written, and a replica
// that fails to apply it quotes the statement in Last_SQL_Error.
func redactPasswords(s string) string {
	if u := strings.ToUpper(s); !strings.Contains(u, "PASSWORD") && !strings.Contains(u, "IDENTIFIED") {
		return s
	}
	return passwordLiteral.ReplaceAllString(s, "${1}'***'")
}

func ioState(v string) dbpilot.IOState {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes":
		return dbpilot.IORunning
	case "no", "":
		return dbpilot.IOStopped
	case "connecting":
		return dbpilot.IOConnecting
	case "preparing":
		return dbpilot.IOPreparing
	}
	return dbpilot.IOState(v) // a state dbpilot does not know; keep the server's word
}

// parseReplicaStatusRow reads one row of MariaDB's SHOW ALL SLAVES STATUS, or
// of MySQL's SHOW REPLICA STATUS (8.0.22+, Source_*/Replica_* columns) or
// SHOW SLAVE STATUS (older, Master_*/Slave_* columns). Column names are
// matched case-insensitively in either vocabulary (canonicalName), NULL
// columns are absent keys. A row with neither a host nor a thread state
// column is rejected; so is a malformed number.
//
// flavor decides UsingGTID: MariaDB's Using_Gtid as printed; for MySQL,
// "Auto_Position" when Auto_Position=1 and "No" otherwise.
//
// MySQL does not print the heartbeat period here (see
// performance_schema.replication_connection_configuration); MariaDB prints
// Slave_heartbeat_period.
func parseReplicaStatusRow(flavor dbpilot.Flavor, row map[string]string) (dbpilot.ReplicationChannel, error) {
	return parseCanonicalReplicaStatus(flavor, mapRow(canonicalRow(row)))
}

// parseCanonicalReplicaStatus is parseReplicaStatusRow of a row whose names
// are canonical already (mapRow of a canonical map, or indexedRow).
func parseCanonicalReplicaStatus(flavor dbpilot.Flavor, r valueRow) (dbpilot.ReplicationChannel, error) {
	_, hasHost := r.get("master_host")
	_, hasIO := r.get("slave_io_running")
	if !hasHost && !hasIO {
		return dbpilot.ReplicationChannel{}, dbpilot.Errorf(dbpilot.EINTERNAL, "replica status row has no Master_Host/Source_Host column")
	}
	f := &fields{row: r, what: "replica status"}
	var c dbpilot.ReplicationChannel
	if n, ok := r.get("connection_name"); ok {
		c.Name = n
	} else {
		c.Name, _ = r.get("channel_name") // Channel_name before 8.0.22, Channel_Name after
	}
	c.Source = dbpilot.InstanceKey{Host: f.str("master_host"), Port: int(f.uint("master_port", 16))}
	c.SourceUser = f.str("master_user")

	c.IORunning = ioState(f.str("slave_io_running"))
	c.SQLRunning = strings.EqualFold(strings.TrimSpace(f.str("slave_sql_running")), "yes")
	c.IOStateText = f.str("slave_io_state")
	c.SQLStateText = f.str("slave_sql_running_state")
	if _, ok := r.get("slave_sql_running_state"); !ok {
		c.SQLStateText = f.str("slave_sql_state") // MariaDB's SHOW ALL SLAVES STATUS has both
	}

	c.LastIOErrno = f.int("last_io_errno")
	c.LastIOError = redactPasswords(f.str("last_io_error"))
	c.LastSQLErrno = f.int("last_sql_errno")
	c.LastSQLError = redactPasswords(f.str("last_sql_error"))
	c.SecondsBehind = f.optInt64("seconds_behind_master")

	_, hasUsingGTID := r.get("using_gtid")
	_, hasAutoPos := r.get("auto_position")
	mysqlGTID := flavor.IsMySQLFamily() || (flavor != dbpilot.FlavorMariaDB && !hasUsingGTID && hasAutoPos)
	if mysqlGTID {
		c.UsingGTID = "No"
		if f.int("auto_position") == 1 {
			c.UsingGTID = "Auto_Position"
		}
	} else {
		c.UsingGTID = f.str("using_gtid")
	}
	c.GTIDIOPos = f.str("gtid_io_pos")
	c.RetrievedGTIDSet = cleanGTIDSet(f.str("retrieved_gtid_set"))
	c.ExecutedGTIDSet = cleanGTIDSet(f.str("executed_gtid_set"))

	c.SourceLogFile = f.str("master_log_file")
	c.ReadSourceLogPos = f.uint("read_master_log_pos", 64)
	c.RelaySourceLogFile = f.str("relay_master_log_file")
	c.ExecSourceLogPos = f.uint("exec_master_log_pos", 64)
	c.RelayLogSpace = f.uint("relay_log_space", 64)

	c.SourceServerID = uint32(f.uint("master_server_id", 32))
	c.SourceUUID = f.str("master_uuid")
	c.ConnectRetry = f.int("connect_retry")
	c.HeartbeatPeriod = f.seconds("slave_heartbeat_period")
	c.ReceivedHeartbeats = f.uint("slave_received_heartbeats", 64)
	// MariaDB has the period in the row; MySQL's comes from performance_schema
	// (applyHeartbeats) and stays unknown until read there.
	if _, ok := f.row.get("slave_heartbeat_period"); !ok {
		c.HeartbeatUnknown = true
	}
	c.SQLDelay = f.int("sql_delay")
	c.ParallelMode = f.str("parallel_mode")
	if f.err != nil {
		return dbpilot.ReplicationChannel{}, f.err
	}
	return c, nil
}

// parseSemiSync reads the semi-synchronous replication state from global
// variables (rpl_semi_sync_*_enabled, rpl_semi_sync_*_timeout in ms) and
// status (Rpl_semi_sync_*_status, Rpl_semi_sync_*_clients), in either the
// master/slave names (MariaDB; MySQL before 8.0.26 or with the old plugins) or
// the source/replica names (MySQL 8.0.26+ plugins). Keys are matched
// case-insensitively. A missing variable means the plugin is not loaded:
// that side is disabled. Malformed values read as off/zero.
func parseSemiSync(vars, status map[string]string) dbpilot.SemiSyncState {
	v, st := canonicalRow(vars), canonicalRow(status)
	on := func(m map[string]string, name string) bool {
		b, _ := parseBool(m[name])
		return b
	}
	num := func(m map[string]string, name string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(m[name]), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	var s dbpilot.SemiSyncState
	s.PrimaryEnabled = on(v, "rpl_semi_sync_master_enabled")
	s.PrimaryActive = on(st, "rpl_semi_sync_master_status")
	s.PrimaryClients = int(min(num(st, "rpl_semi_sync_master_clients"), math.MaxInt32))
	if ms := num(v, "rpl_semi_sync_master_timeout"); ms > 0 && ms <= maxSeconds*1000 {
		s.PrimaryTimeout = time.Duration(ms) * time.Millisecond
	}
	s.ReplicaEnabled = on(v, "rpl_semi_sync_slave_enabled")
	s.ReplicaActive = on(st, "rpl_semi_sync_slave_status")
	return s
}

// parseReplicaHosts reads SHOW SLAVE HOSTS (MariaDB, MySQL before 8.0.22) or
// SHOW REPLICAS (Server_Id, Host, Port, Source_Id, ...). Host is what the
// replica reports as report_host. MariaDB fills it with the replica's address
// when report_host is unset; MySQL leaves it empty. Rows without a host are
// counted in hostless and not returned. A port of 0 is taken as ownPort.
func parseReplicaHosts(rows []map[string]string, ownPort int) (keys []dbpilot.InstanceKey, hostless int) {
	for _, row := range rows {
		r := canonicalRow(row)
		host := strings.TrimSpace(r["host"])
		if host == "" {
			hostless++
			continue
		}
		port, err := strconv.Atoi(strings.TrimSpace(r["port"]))
		if err != nil || port <= 0 || port > 65535 {
			port = ownPort
		}
		keys = append(keys, dbpilot.InstanceKey{Host: host, Port: port})
	}
	return keys, hostless
}

// parseProcesslistReplicas finds the replicas connected to a server in its
// processlist (SHOW PROCESSLIST or information_schema.PROCESSLIST rows): the
// threads whose Command is "Binlog Dump" or "Binlog Dump GTID". The Host
// column holds the replica's client address and an ephemeral port, not the
// port the replica serves on. Like orchestrator, dbpilot then assumes the
// replica listens on the same port as this server (port), which holds in
// fleets that run every server on one port and not in a local sandbox.
func parseProcesslistReplicas(rows []map[string]string, port int) []dbpilot.InstanceKey {
	var keys []dbpilot.InstanceKey
	for _, row := range rows {
		r := canonicalRow(row)
		cmd := strings.ToLower(strings.TrimSpace(r["command"]))
		if cmd != "binlog dump" && cmd != "binlog dump gtid" {
			continue
		}
		host := processlistHost(r["host"])
		if host == "" {
			continue
		}
		keys = append(keys, dbpilot.InstanceKey{Host: host, Port: port})
	}
	return keys
}

// processlistHost returns the host part of a processlist Host column:
// "10.0.0.5:51234" → "10.0.0.5", "[fe80::1]:51234" and "fe80::1:51234" →
// "fe80::1", "db2" and "localhost" (no port: socket or name) as they are.
func processlistHost(h string) string {
	h = strings.TrimSpace(h)
	if h == "" {
		return ""
	}
	if strings.HasPrefix(h, "[") {
		if host, _, err := net.SplitHostPort(h); err == nil {
			return host
		}
		return strings.Trim(h, "[]")
	}
	i := strings.LastIndexByte(h, ':')
	if i <= 0 || !allDigits(h[i+1:]) {
		return h
	}
	host := h[:i]
	if strings.HasSuffix(host, ":") {
		return h // "::1": a bare IPv6 address, no port
	}
	return host
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// mergeReplicas returns the keys of lists, each once (compared normalized),
// without self, sorted by host and port so that output is stable.
func mergeReplicas(self dbpilot.InstanceKey, lists ...[]dbpilot.InstanceKey) []dbpilot.InstanceKey {
	seen := map[dbpilot.InstanceKey]bool{self.Normalized(): true}
	var out []dbpilot.InstanceKey
	for _, l := range lists {
		for _, k := range l {
			n := k.Normalized()
			if seen[n] {
				continue
			}
			seen[n] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Port < out[j].Port
	})
	return out
}
