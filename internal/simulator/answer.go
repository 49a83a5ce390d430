package simulator

import (
	"strconv"
	"strings"
	"time"
)

// Errors the simulator answers, with MariaDB's numbers and texts.
var (
	errReadOnly = &sqlError{1290, "HY000", "The MariaDB server is running with the --read-only option so it cannot execute this statement"}
	errNoHBTab  = &sqlError{1146, "42S02", "Table 'dbpilot.heartbeat' doesn't exist"}
)

func errUnknownVar(name string) *sqlError {
	return &sqlError{1193, "HY000", "Unknown system variable '" + name + "'"}
}

func errUnknown() *sqlError {
	return &sqlError{1064, "42000", "You have an error in your SQL syntax; dbpilot-sim does not know this statement"}
}

// query answers one COM_QUERY into r. It returns false when the session
// must end (the instance died during a SLEEP).
func (c *conn) query(q string, r *response) bool {
	f := c.in.fleet
	q = strings.TrimRight(strings.TrimSpace(q), ";")
	// SET STATEMENT var=value[, ...] FOR stmt: the statement, under
	// settings the simulator does not enforce (max_statement_time).
	if len(q) > 14 && strings.EqualFold(q[:14], "SET STATEMENT ") {
		if i := strings.Index(strings.ToUpper(q), " FOR "); i > 0 {
			q = strings.TrimSpace(q[i+5:])
		}
	}
	f.statsMu.Lock()
	f.queries++
	f.kinds[statementKind(q)]++
	f.statsMu.Unlock()
	u := strings.ToUpper(q)
	now := time.Now()
	in := c.in
	switch {
	case strings.HasPrefix(u, "SELECT") && strings.Contains(u, "SLEEP("):
		return c.sleep(q, u, r)
	case strings.HasPrefix(u, "SELECT @@"):
		list := q[len("SELECT "):]
		if i := strings.Index(u, " LIMIT "); i >= 0 { // the mariadb client's @@version_comment
			list = q[len("SELECT "):i]
		}
		in.selectVariables(list, r, now)
	case strings.HasPrefix(u, "SHOW GLOBAL STATUS"), strings.HasPrefix(u, "SHOW STATUS"), strings.HasPrefix(u, "SHOW SESSION STATUS"):
		in.showStatus(q, u, r, now)
	case strings.HasPrefix(u, "SHOW GLOBAL VARIABLES"), strings.HasPrefix(u, "SHOW VARIABLES"), strings.HasPrefix(u, "SHOW SESSION VARIABLES"):
		in.showVariables(q, u, r, now)
	case u == "SHOW ALL SLAVES STATUS", u == "SHOW SLAVE STATUS", u == "SHOW REPLICA STATUS", u == "SHOW ALL REPLICAS STATUS":
		in.replicaStatus(r, now)
	case u == "SHOW SLAVE HOSTS", u == "SHOW REPLICA HOSTS":
		r.columns("Server_id", "Host", "Port", "Master_id")
		for _, rep := range in.liveReplicas() {
			r.row(strconv.FormatUint(uint64(rep.ServerID), 10), f.opt.Host, strconv.Itoa(rep.Port), strconv.FormatUint(uint64(in.ServerID), 10))
		}
		r.eof()
	case u == "SHOW BINARY LOGS", u == "SHOW MASTER LOGS":
		r.columns("Log_name", "File_size")
		r.row("mysql-bin.000001", "1048576")
		r.row("mysql-bin.000002", strconv.FormatUint(binlogPos(in.appliedSeq(now)), 10))
		r.eof()
	case u == "SHOW MASTER STATUS", u == "SHOW BINLOG STATUS":
		r.columns("File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB")
		r.row("mysql-bin.000002", strconv.FormatUint(binlogPos(in.appliedSeq(now)), 10), "", "")
		r.eof()
	case u == "SHOW ENGINE INNODB STATUS":
		r.columns("Type", "Name", "Status")
		r.row("InnoDB", "", in.innodbStatus(now))
		r.eof()
	case strings.Contains(u, "INFORMATION_SCHEMA.INNODB_METRICS"):
		if strings.Contains(u, "STATUS = 'ENABLED'") {
			r.err(&sqlError{1054, "42S22", "Unknown column 'STATUS' in 'WHERE'"})
			break
		}
		r.columns(f.tmpl.innodbMetrics.cols...)
		for _, p := range f.tmpl.metricsPayloads {
			r.rawRow(p)
		}
		r.eof()
	case strings.Contains(u, "INFORMATION_SCHEMA.GLOBAL_STATUS") && strings.Contains(u, "UNION ALL"):
		in.semiSync(q, r, now)
	case strings.Contains(u, "PERFORMANCE_SCHEMA.EVENTS_STATEMENTS_SUMMARY_BY_DIGEST"):
		in.digests(r, now)
	case strings.Contains(u, "PERFORMANCE_SCHEMA.SETUP_CONSUMERS"):
		in.consumers(r)
	case strings.HasPrefix(u, "SELECT DISTINCT USER FROM MYSQL.USER"): // the liveness standby's fence
		r.columns("User")
		r.row("repl")
		r.eof()
	case strings.Contains(u, "INFORMATION_SCHEMA.PROCESSLIST"):
		c.processlist(u, r, now)
	case strings.HasPrefix(u, "SHOW PROCESSLIST"), strings.HasPrefix(u, "SHOW FULL PROCESSLIST"):
		c.showProcesslist(r, now)
	case strings.Contains(u, "INFORMATION_SCHEMA.INNODB_TRX"):
		r.columns("TRX", "OLDEST")
		r.row("0", "0")
		r.eof()
	case strings.Contains(u, "DBPILOT.HEARTBEAT") || strings.HasPrefix(u, "CREATE DATABASE"):
		in.heartbeat(u, r, now)
	case strings.HasPrefix(u, "SELECT CONNECTION_ID()"):
		r.columns("CONNECTION_ID()")
		r.row(strconv.FormatUint(uint64(c.id), 10))
		r.eof()
	case strings.HasPrefix(u, "SELECT MASTER_GTID_WAIT("):
		r.columns(q[len("SELECT "):])
		r.row("0")
		r.eof()
	case u == "SELECT 1":
		r.columns("1")
		r.row("1")
		r.eof()
	case u == "SELECT VERSION()":
		r.columns("VERSION()")
		r.row(serverVersion)
		r.eof()
	case strings.HasPrefix(u, "SET "):
		in.set(u, r)
	case strings.HasPrefix(u, "STOP "), strings.HasPrefix(u, "START "), strings.HasPrefix(u, "RESET "),
		strings.HasPrefix(u, "CHANGE MASTER"):
		in.control(q, u, r, now)
	case strings.HasPrefix(u, "KILL "), strings.HasPrefix(u, "FLUSH "), strings.HasPrefix(u, "USE "),
		u == "BEGIN", u == "COMMIT", u == "ROLLBACK", strings.HasPrefix(u, "START TRANSACTION"), strings.HasPrefix(u, "DO "):
		r.ok(0)
	default:
		f.noteUnknown(q)
		r.err(errUnknown())
	}
	return true
}

// sleep holds the session for SLEEP(n) seconds, or until the instance dies
// (then the connection is gone and false is returned).
func (c *conn) sleep(q, u string, r *response) bool {
	i := strings.Index(u, "SLEEP(")
	j := strings.IndexByte(u[i:], ')')
	if j < 0 {
		r.err(errUnknown())
		return true
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(u[i+6:i+j]), 64)
	if err != nil || secs < 0 {
		r.err(errUnknown())
		return true
	}
	c.in.sleepers.Add(1)
	defer c.in.sleepers.Add(-1)
	t := time.NewTimer(time.Duration(secs * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.done:
		return false
	}
	r.columns(q[i : i+j+1])
	r.row("0")
	r.eof()
	return true
}

// selectVariables answers SELECT @@global.a, @@b, ...: one row, each column
// named as written.
func (in *Instance) selectVariables(list string, r *response, now time.Time) {
	items := strings.Split(list, ",")
	vals := make([]string, len(items))
	for i, it := range items {
		it = strings.TrimSpace(it)
		items[i] = it
		if strings.EqualFold(it, "NULL") {
			vals[i] = Null
			continue
		}
		name := strings.ToLower(strings.TrimPrefix(it, "@@"))
		for _, scope := range []string{"global.", "session.", "local."} {
			name = strings.TrimPrefix(name, scope)
		}
		v, ok := in.variable(name, now)
		if !ok || !strings.HasPrefix(it, "@@") {
			r.err(errUnknownVar(name))
			return
		}
		vals[i] = selectValue(v)
	}
	r.columns(items...)
	r.row(vals...)
	r.eof()
}

// filter is the WHERE/LIKE of SHOW ... STATUS|VARIABLES: nil matches all.
type filter struct {
	in   map[string]bool // Variable_name IN (...), lower-cased
	like string          // LIKE pattern, lower-cased
}

func (f *filter) match(lower string) bool {
	switch {
	case f == nil:
		return true
	case f.in != nil:
		return f.in[lower]
	}
	return likeMatch(f.like, lower)
}

// parseFilter reads "... LIKE 'pat'" or "... WHERE Variable_name IN ('a', 'b')"
// or "... WHERE Variable_name LIKE 'pat'".
func parseFilter(q, u string) *filter {
	if i := strings.Index(u, " IN ("); i >= 0 {
		j := strings.LastIndexByte(q, ')')
		if j < i {
			return &filter{in: map[string]bool{}}
		}
		f := &filter{in: map[string]bool{}}
		for _, s := range strings.Split(q[i+5:j], ",") {
			f.in[strings.ToLower(strings.Trim(strings.TrimSpace(s), "'\""))] = true
		}
		return f
	}
	if i := strings.Index(u, "LIKE '"); i >= 0 {
		rest := q[i+6:]
		if j := strings.IndexByte(rest, '\''); j >= 0 {
			return &filter{like: strings.ToLower(rest[:j])}
		}
	}
	return nil
}

// likeMatch matches SQL LIKE: % any run, _ one character, \ escapes.
func likeMatch(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '%':
			for len(pat) > 0 && pat[0] == '%' {
				pat = pat[1:]
			}
			if pat == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if likeMatch(pat, s[i:]) {
					return true
				}
			}
			return false
		case '_':
			if s == "" {
				return false
			}
			pat, s = pat[1:], s[1:]
		case '\\':
			if len(pat) > 1 {
				pat = pat[1:]
			}
			fallthrough
		default:
			if s == "" || s[0] != pat[0] {
				return false
			}
			pat, s = pat[1:], s[1:]
		}
	}
	return s == ""
}

// showStatus answers SHOW GLOBAL STATUS [LIKE | WHERE].
func (in *Instance) showStatus(q, u string, r *response, now time.Time) {
	flt := parseFilter(q, u)
	r.columns("Variable_name", "Value")
	st := in.fleet.tmpl.status
	for i := range st {
		nv := &st[i]
		if !flt.match(nv.lower) {
			continue
		}
		if nv.dyn == nil {
			r.rawRow(nv.payload)
			continue
		}
		r.row(nv.name, in.statusValue(nv, now))
	}
	r.eof()
}

// showVariables answers SHOW GLOBAL VARIABLES [LIKE | WHERE].
func (in *Instance) showVariables(q, u string, r *response, now time.Time) {
	flt := parseFilter(q, u)
	r.columns("Variable_name", "Value")
	vs := in.fleet.tmpl.variables
	for i := range vs {
		nv := &vs[i]
		if !flt.match(nv.lower) {
			continue
		}
		if nv.dyn == nil {
			r.rawRow(nv.payload)
			continue
		}
		v, _ := in.variable(nv.lower, now)
		r.row(nv.name, v)
	}
	r.eof()
}

// semiSync answers the semisync collector's union of
// information_schema.GLOBAL_STATUS and GLOBAL_VARIABLES (upper-case names).
func (in *Instance) semiSync(q string, r *response, now time.Time) {
	u := strings.ToUpper(q)
	flt := parseFilter(q, u)
	if flt == nil || flt.in != nil {
		flt = &filter{like: `rpl\_semi\_sync\_%`}
	}
	r.columns("KIND", "VARIABLE_NAME", "VARIABLE_VALUE")
	st := in.fleet.tmpl.status
	for i := range st {
		if nv := &st[i]; flt.match(nv.lower) {
			v := nv.value
			if nv.dyn != nil {
				v = in.statusValue(nv, now)
			}
			r.row("status", strings.ToUpper(nv.name), v)
		}
	}
	vs := in.fleet.tmpl.variables
	for i := range vs {
		if nv := &vs[i]; flt.match(nv.lower) {
			v, _ := in.variable(nv.lower, now)
			r.row("variable", strings.ToUpper(nv.name), v)
		}
	}
	r.eof()
}

// replicaStatus answers SHOW ALL SLAVES STATUS: the recorded MariaDB 10.11
// row with this instance's source, positions and thread states.
func (in *Instance) replicaStatus(r *response, now time.Time) {
	t := in.fleet.tmpl
	f := in.fleet
	f.topo.RLock()
	src, io, sql, stopped := in.source, in.ioRunning, in.sqlRunning, in.stoppedSeq
	f.topo.RUnlock()
	r.columns(t.replicaCols...)
	if src == nil {
		r.eof()
		return
	}
	applied := in.cluster.seq(now)
	received := applied
	if !sql {
		applied = stopped
	}
	connected := io && src.alive.Load()
	row := append([]string(nil), t.replicaRow...)
	set := func(col, v string) {
		for i, c := range t.replicaCols {
			if c == col {
				row[i] = v
				return
			}
		}
	}
	srcKey := f.opt.Host + ":" + strconv.Itoa(src.Port)
	set("Master_Host", f.opt.Host)
	set("Master_Port", strconv.Itoa(src.Port))
	set("Master_Log_File", "mysql-bin.000002")
	set("Relay_Master_Log_File", "mysql-bin.000002")
	set("Read_Master_Log_Pos", strconv.FormatUint(binlogPos(received), 10))
	set("Exec_Master_Log_Pos", strconv.FormatUint(binlogPos(applied), 10))
	set("Relay_Log_Pos", strconv.FormatUint(binlogPos(applied)+299, 10))
	set("Master_Server_Id", strconv.FormatUint(uint64(src.ServerID), 10))
	set("Gtid_IO_Pos", in.cluster.gtidString(received))
	set("Gtid_Slave_Pos", in.cluster.gtidString(applied))
	set("Executed_log_entries", strconv.FormatUint(applied*3, 10))
	set("Slave_received_heartbeats", strconv.FormatUint(uint64(in.uptime(now)), 10))
	set("Slave_heartbeat_period", "1.000")
	switch {
	case connected:
		set("Slave_IO_Running", "Yes")
		set("Slave_IO_State", "Waiting for master to send event")
		set("Last_IO_Errno", "0")
		set("Last_IO_Error", "")
	case io:
		set("Slave_IO_Running", "Connecting")
		set("Slave_IO_State", "Reconnecting after a failed master event read")
		set("Last_IO_Errno", "2003")
		set("Last_IO_Error", "error reconnecting to master 'repl@"+srcKey+"' - retry-time: 1  maximum-retries: 100000  message: Can't connect to server on '"+f.opt.Host+"' (111 \"Connection refused\")")
	default:
		set("Slave_IO_Running", "No")
		set("Slave_IO_State", "")
	}
	if sql {
		set("Slave_SQL_Running", "Yes")
		set("Slave_SQL_State", "Slave has read all relay log; waiting for more updates")
		set("Slave_SQL_Running_State", "Slave has read all relay log; waiting for more updates")
	} else {
		set("Slave_SQL_Running", "No")
		set("Slave_SQL_State", "")
		set("Slave_SQL_Running_State", "")
	}
	if connected && sql {
		set("Seconds_Behind_Master", "0")
	} else {
		set("Seconds_Behind_Master", Null)
	}
	r.row(row...)
	r.eof()
}

// processlist answers the statements on information_schema.PROCESSLIST
// that dbpilot sends.
func (c *conn) processlist(u string, r *response, now time.Time) {
	in := c.in
	switch {
	case strings.Contains(u, "GROUP BY"): // the processlist collector
		r.columns("USER", "HOST", "COMMAND", "STATE", "THREADS", "SECONDS", "OLDEST_QUERY")
		if reps := in.liveReplicas(); len(reps) > 0 {
			r.row("repl", in.fleet.opt.Host, "Binlog Dump", "Master has sent all binlog to slave; waiting for more updates",
				strconv.Itoa(len(reps)), strconv.Itoa(len(reps)*int(in.uptime(now))), Null)
		}
		in.mu.Lock()
		idle := len(in.conns) - 1 - int(in.sleepers.Load())
		in.mu.Unlock()
		if idle > 0 {
			r.row(c.user, in.fleet.opt.Host, "Sleep", "", strconv.Itoa(idle), "0", Null)
		}
		if in.replicaSource() != nil {
			io := "Waiting for master to send event"
			if !in.ioConnected() {
				io = "Reconnecting after a failed master event read"
			}
			up := strconv.Itoa(int(in.uptime(now)))
			r.row("system user", "", "Slave_IO", io, "1", up, Null)
			r.row("system user", "", "Slave_SQL", "Slave has read all relay log; waiting for more updates", "1", up, Null)
			r.row("system user", "", "Slave_worker", "Waiting for work from SQL thread", "2", up, Null)
		}
		r.eof()
	case strings.Contains(u, "'BINLOG DUMP%'"): // inspection's fallback
		r.columns("ID", "USER", "HOST", "COMMAND")
		for i, rep := range in.liveReplicas() {
			r.row(strconv.Itoa(1000+i), "repl", in.fleet.opt.Host+":"+strconv.Itoa(40000+rep.Port%20000), "Binlog Dump")
		}
		r.eof()
	case strings.Contains(u, "'SLAVE_WORKER'"): // replication workers
		r.columns("STATE")
		if in.replicaSource() != nil {
			r.row("Waiting for work from SQL thread")
			r.row("Waiting for work from SQL thread")
		}
		r.eof()
	default:
		c.showProcesslistColumns(r, []string{"ID", "USER", "COMMAND", "INFO"}, now)
	}
}

func (c *conn) showProcesslist(r *response, now time.Time) {
	c.showProcesslistColumns(r, []string{"Id", "User", "Host", "db", "Command", "Time", "State", "Info", "Progress"}, now)
}

// showProcesslistColumns lists the client sessions with the named columns.
func (c *conn) showProcesslistColumns(r *response, cols []string, now time.Time) {
	in := c.in
	in.mu.Lock()
	sessions := make([]*conn, 0, len(in.conns))
	for s := range in.conns {
		sessions = append(sessions, s)
	}
	in.mu.Unlock()
	r.columns(cols...)
	for _, s := range sessions {
		vals := make([]string, len(cols))
		for i, col := range cols {
			switch strings.ToUpper(col) {
			case "ID":
				vals[i] = strconv.FormatUint(uint64(s.id), 10)
			case "USER":
				vals[i] = s.user
			case "HOST":
				vals[i] = s.nc.RemoteAddr().String()
			case "COMMAND":
				vals[i] = "Sleep"
				if s == c {
					vals[i] = "Query"
				}
			case "TIME":
				vals[i] = strconv.Itoa(int(now.Sub(s.since).Seconds()))
			case "PROGRESS":
				vals[i] = "0.000"
			case "STATE":
				vals[i] = ""
			default:
				vals[i] = Null
			}
		}
		r.row(vals...)
	}
	r.eof()
}

// heartbeat answers the heartbeat collector's statements on
// dbpilot.heartbeat, shared by the cluster as replication would.
func (in *Instance) heartbeat(u string, r *response, now time.Time) {
	cl := in.cluster
	switch {
	case strings.HasPrefix(u, "CREATE DATABASE"), strings.HasPrefix(u, "CREATE TABLE"):
		if in.readOnly.Load() {
			r.err(errReadOnly)
			return
		}
		if strings.HasPrefix(u, "CREATE TABLE") {
			cl.mu.Lock()
			cl.hbTable = true
			cl.mu.Unlock()
		}
		r.ok(0)
	case strings.HasPrefix(u, "REPLACE INTO"):
		if in.readOnly.Load() {
			r.err(errReadOnly)
			return
		}
		cl.mu.Lock()
		ok := cl.hbTable
		if ok {
			cl.hbServerID, cl.hbTS = in.ServerID, now
		}
		cl.mu.Unlock()
		if !ok {
			r.err(errNoHBTab)
			return
		}
		r.ok(1)
	case strings.HasPrefix(u, "SELECT"):
		id, ts, ok := in.heartbeatRow(now)
		if !ok {
			r.err(errNoHBTab)
			return
		}
		r.columns("server_id", "UNIX_TIMESTAMP(ts)", "UNIX_TIMESTAMP(NOW(6))")
		if id != 0 {
			r.row(strconv.FormatUint(uint64(id), 10), unixMicros(ts), unixMicros(now))
		}
		r.eof()
	default:
		in.fleet.noteUnknown(u)
		r.err(errUnknown())
	}
}

func unixMicros(t time.Time) string {
	us := t.UnixMicro()
	return strconv.FormatInt(us/1e6, 10) + "." + leftPad(strconv.FormatInt(us%1e6, 10), 6)
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// set answers SET statements: SET GLOBAL read_only changes the instance,
// other settings are accepted.
func (in *Instance) set(u string, r *response) {
	compact := strings.ReplaceAll(u, " ", "")
	for _, p := range []string{"SETGLOBALREAD_ONLY=", "SET@@GLOBAL.READ_ONLY="} {
		if v, ok := strings.CutPrefix(compact, p); ok {
			on := v == "ON" || v == "1" || v == "TRUE"
			in.readOnly.Store(on)
		}
	}
	r.ok(0)
}

// control answers replication control statements, enough for dbpilot's
// failover to run: STOP/START [ALL] SLAVE[S], RESET SLAVE ALL, CHANGE
// MASTER TO MASTER_HOST, MASTER_PORT.
func (in *Instance) control(q, u string, r *response, now time.Time) {
	f := in.fleet
	f.topo.Lock()
	defer f.topo.Unlock()
	switch {
	case strings.HasPrefix(u, "STOP SLAVE"), strings.HasPrefix(u, "STOP ALL SLAVES"), strings.HasPrefix(u, "STOP REPLICA"):
		if in.source != nil && in.sqlRunning {
			in.stoppedSeq = in.cluster.seq(now)
		}
		if !strings.Contains(u, "SQL_THREAD") {
			in.ioRunning = false
		}
		if !strings.Contains(u, "IO_THREAD") {
			in.sqlRunning = false
		}
	case strings.HasPrefix(u, "START SLAVE"), strings.HasPrefix(u, "START ALL SLAVES"), strings.HasPrefix(u, "START REPLICA"):
		if in.source != nil {
			in.ioRunning, in.sqlRunning = true, true
		}
	case strings.HasPrefix(u, "RESET SLAVE"), strings.HasPrefix(u, "RESET REPLICA"):
		if strings.Contains(u, " ALL") {
			in.setSource(nil)
		}
	case strings.HasPrefix(u, "CHANGE MASTER"):
		port, ok := assignment(q, u, "MASTER_PORT")
		n, err := strconv.Atoi(port)
		src := f.byPort[n]
		if !ok || err != nil || src == nil || src == in {
			r.err(&sqlError{1210, "HY000", "Incorrect arguments to CHANGE MASTER: no simulated server on MASTER_PORT " + port})
			return
		}
		in.setSource(src)
		in.everReplica = true
	case strings.HasPrefix(u, "RESET MASTER"), strings.HasPrefix(u, "START TRANSACTION"):
	default:
		f.noteUnknown(q)
		r.err(errUnknown())
		return
	}
	r.ok(0)
}

// setSource rewires the instance under src (nil: none). The caller holds
// fleet.topo.
func (in *Instance) setSource(src *Instance) {
	if old := in.source; old != nil {
		for i, x := range old.replicas {
			if x == in {
				old.replicas = append(old.replicas[:i:i], old.replicas[i+1:]...)
				break
			}
		}
	}
	in.source = src
	if src != nil {
		src.replicas = append(src.replicas, in)
	} else {
		in.ioRunning, in.sqlRunning = false, false
	}
}

// assignment returns the value of NAME=value in a statement.
func assignment(q, u, name string) (string, bool) {
	i := strings.Index(u, name)
	if i < 0 {
		return "", false
	}
	rest := strings.TrimLeft(q[i+len(name):], " =")
	end := strings.IndexAny(rest, ", ")
	if end < 0 {
		end = len(rest)
	}
	return strings.Trim(rest[:end], "'\""), true
}
