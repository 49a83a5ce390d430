package mysql

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dbpilot/dbpilot"
)

// The slow query log: the fallback source of statement statistics when
// performance_schema is off. DetectStatementSource picks the source of an
// instance; NewStatementReader reads it. A SlowLogReader reads the log file
// (SlowLogParser) or the mysql.slow_log table incrementally and groups
// statements by Fingerprint into the DigestSnapshot that
// performance_schema's digest table gives.

// SlowEntry is one statement of a slow query log.
type SlowEntry struct {
	// Time is when the statement ran: its "SET timestamp=N;" line (whole
	// seconds), else the last "# Time:" header; zero when neither was seen.
	Time     time.Time
	User     string // the account's user ("root" of "root[root] @ localhost []")
	Host     string // its host name, or address when the name is empty
	ThreadID uint64
	// Schema is the default schema: MariaDB's "Schema:" field, else the last
	// "use db;" line of the log (MySQL writes one only when the schema
	// differs from the previous entry's).
	Schema       string
	QueryTime    time.Duration
	LockTime     time.Duration
	RowsSent     uint64
	RowsExamined uint64
	RowsAffected uint64
	// Errno is MySQL's error number (log_slow_extra); 0 without it.
	Errno uint64
	// NoIndexUsed is MariaDB's "Full_scan: Yes" (log_slow_verbosity
	// query_plan).
	NoIndexUsed bool
	// TmpDiskTables and SortMergePasses are MariaDB's Tmp_table_on_disk and
	// Merge_passes, or MySQL's Created_tmp_disk_tables and
	// Sort_merge_passes (log_slow_extra).
	TmpDiskTables   uint64
	SortMergePasses uint64
	// Text is the statement without its final ";", at most MaxStatement
	// bytes of it (Truncated says it was longer).
	Text      string
	Truncated bool
}

// MaxStatement is the most of one statement's text a SlowLogParser keeps;
// the rest is read and dropped, so that memory stays bounded whatever the
// log holds.
const MaxStatement = 64 << 10

// SlowLogParser reads the entries of a slow query log file, MariaDB's or
// MySQL's, from a stream:
//
//	/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-log (Debian). started with:
//	Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock
//	Time		    Id Command	Argument
//	# Time: 261126  6:08:19
//	# User@Host: app[app] @  [10.0.0.7]
//	# Thread_id: 7  Schema: shop  QC_hit: No
//	# Query_time: 0.000356  Lock_time: 0.000032  Rows_sent: 1  Rows_examined: 1
//	# Rows_affected: 0  Bytes_sent: 196
//	use `shop`;
//	SET timestamp=1795673299;
//	SELECT * FROM t WHERE id = 1;
//
// An entry starts at "# Time:" or "# User@Host:"; its other "#" lines are
// fields (those it does not know, such as MariaDB's "# explain:", are
// skipped); "use db;" and "SET timestamp=N;" lines before the statement
// qualify it; the statement runs to the next entry or to the server's own
// header lines (written at start and at FLUSH SLOW LOGS). A line starting
// with "#" inside a statement is part of it (a comment), as the server
// writes nothing else there.
type SlowLogParser struct {
	r *bufio.Reader
	// Tail holds back, at the end of the stream, an entry that may still be
	// being written: one whose last line has no newline or whose statement
	// does not end with ";" (the server ends every statement with ";\n").
	// Offset then points at its start, to read it again later.
	Tail bool

	pos     int64  // bytes consumed from r
	resume  int64  // Offset: where reading may resume
	line    []byte // the current line, without its newline, at most MaxStatement bytes
	lineCut bool   // the current line was longer
	pending []byte // a line read that starts the next entry
	pendAt  int64  // its offset
	hasPend bool
	schema  string    // the last "use db;"
	time    time.Time // the last "# Time:"
	eof     bool
	// partialAt is the offset of a last line without newline held back
	// (Tail), -1 when none.
	partialAt int64
}

// NewSlowLogParser returns a parser reading r.
func NewSlowLogParser(r io.Reader) *SlowLogParser {
	return &SlowLogParser{r: bufio.NewReaderSize(r, 64<<10), partialAt: -1}
}

// Offset is the number of bytes of the stream that the entries returned so
// far (and the lines around them that are no entry) took: where a later
// read of the same file resumes.
func (p *SlowLogParser) Offset() int64 { return p.resume }

// readLine reads one line into p.line, without its "\n" (and "\r"), keeping
// at most MaxStatement bytes of it. complete is false for a last line
// without newline; err is io.EOF at the end (with complete false and maybe
// a partial line) or a read error.
func (p *SlowLogParser) readLine() (start int64, complete bool, err error) {
	start = p.pos
	p.line = p.line[:0]
	for {
		frag, err := p.r.ReadSlice('\n')
		p.pos += int64(len(frag))
		if room := MaxStatement + 2 - len(p.line); room > 0 {
			p.line = append(p.line, frag[:min(room, len(frag))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		complete = err == nil
		if complete {
			p.line = bytes.TrimSuffix(bytes.TrimSuffix(p.line, []byte("\n")), []byte("\r"))
		}
		p.lineCut = len(p.line) > MaxStatement
		if p.lineCut {
			p.line = p.line[:MaxStatement]
		}
		if err != nil {
			return start, false, err
		}
		return start, true, nil
	}
}

// lineKind classifies a line of the log.
type lineKind int

const (
	lineText   lineKind = iota // statement text, "use", "SET timestamp"
	lineStart                  // "# Time:" or "# User@Host:": an entry's first line
	lineField                  // another "#" line
	lineServer                 // the server's header lines
)

func classify(line []byte) lineKind {
	switch {
	case bytes.HasPrefix(line, []byte("# Time:")) || bytes.HasPrefix(line, []byte("# User@Host:")):
		return lineStart
	case bytes.HasPrefix(line, []byte("#")):
		return lineField
	case bytes.HasSuffix(line, []byte("started with:")) && bytes.Contains(line, []byte(", Version: ")),
		bytes.HasPrefix(line, []byte("Tcp port: ")),
		bytes.HasPrefix(line, []byte("Time ")) && bytes.HasSuffix(bytes.TrimSpace(line), []byte("Command\tArgument")),
		bytes.HasPrefix(line, []byte("Time\t")) && bytes.Contains(line, []byte("Argument")):
		return lineServer
	}
	return lineText
}

// Next returns the next entry, or io.EOF at the end of the stream (see
// Tail), or a read error.
func (p *SlowLogParser) Next() (*SlowEntry, error) {
	var (
		e       *SlowEntry
		sawUser bool // e has its "# User@Host:" line
		text    []byte
		inText  bool // e's statement has started
		stamped bool // e's "SET timestamp" line was read: the statement follows
	)
	// end answers at the end of the stream: the entry in hand if it is
	// whole.
	end := func() (*SlowEntry, error) {
		whole := !p.Tail || p.partialAt < 0 && bytes.HasSuffix(bytes.TrimRight(text, " \t\r\n"), []byte(";"))
		if e != nil && inText && whole {
			p.resume = p.pos
			return p.finish(e, text), nil
		}
		if !p.Tail {
			p.resume = p.pos
		} else if e == nil {
			if p.partialAt >= 0 {
				p.resume = p.partialAt
			} else {
				p.resume = p.pos
			}
		}
		return nil, io.EOF
	}
	for {
		var at int64
		switch {
		case p.hasPend:
			p.line = append(p.line[:0], p.pending...)
			at, p.hasPend = p.pendAt, false
		case p.eof:
			return end()
		default:
			var (
				complete bool
				err      error
			)
			at, complete, err = p.readLine()
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			if !complete {
				p.eof = true
				if len(p.line) == 0 {
					return end()
				}
				if p.Tail {
					p.partialAt = at // may still be being written
					return end()
				}
			}
		}
		kind := classify(p.line)
		if e == nil {
			switch kind {
			case lineStart:
				e, stamped = &SlowEntry{Schema: p.schema}, false
				sawUser = p.header(e, p.line)
			case lineServer:
				p.schema = "" // the server (re)opened the log
				p.resume = p.pos
			default:
				// Text or fields without an entry: the tail of one whose
				// start was not read.
				p.resume = p.pos
			}
			continue
		}
		switch {
		case kind == lineServer || kind == lineStart && (inText || sawUser):
			// The next entry (or a server header) ends this one.
			p.pending = append(p.pending[:0], p.line...)
			p.pendAt, p.hasPend = at, true
			p.resume = at
			if !inText {
				// An entry without statement: drop it, go on with the next.
				e = nil
				continue
			}
			return p.finish(e, text), nil
		case inText:
			if p.lineCut {
				e.Truncated = true
			}
			if len(text) <= MaxStatement {
				text = append(text, '\n')
				text = append(text, p.line...)
			} else {
				e.Truncated = true
			}
		case kind == lineStart || kind == lineField:
			if bytes.HasPrefix(p.line, []byte("# administrator command: ")) {
				// MySQL: COM_QUIT, COM_PING... in the statement's place.
				text, inText = append(text[:0], bytes.TrimPrefix(p.line, []byte("# "))...), true
				continue
			}
			if p.header(e, p.line) {
				sawUser = true
			}
		default:
			if !stamped && p.meta(e, p.line) {
				stamped = bytes.HasPrefix(bytes.TrimSpace(p.line), []byte("SET timestamp="))
				continue
			}
			text, inText = append(text[:0], p.line...), true
			e.Truncated = p.lineCut
		}
	}
}

// finish completes e with its statement text.
func (p *SlowLogParser) finish(e *SlowEntry, text []byte) *SlowEntry {
	t := bytes.TrimRight(text, " \t\r\n")
	t = bytes.TrimSuffix(t, []byte(";"))
	if len(t) > MaxStatement {
		t, e.Truncated = t[:MaxStatement], true
	}
	if e.Truncated {
		for len(t) > 0 && !utf8.Valid(t[max(0, len(t)-utf8.UTFMax):]) {
			t = t[:len(t)-1] // do not cut a character in two
		}
	}
	e.Text = string(t)
	if e.Time.IsZero() {
		e.Time = p.time
	}
	return e
}

// meta reads a "use db;" or "SET timestamp=N;" line before the statement.
func (p *SlowLogParser) meta(e *SlowEntry, line []byte) bool {
	s := string(bytes.TrimSpace(line))
	switch {
	case len(s) > 4 && strings.EqualFold(s[:4], "use ") && strings.HasSuffix(s, ";") && !strings.ContainsAny(s[4:len(s)-1], " \t"):
		db := strings.TrimSuffix(s[4:], ";")
		if len(db) >= 2 && db[0] == '`' && db[len(db)-1] == '`' {
			db = strings.ReplaceAll(db[1:len(db)-1], "``", "`")
		}
		p.schema = db
		e.Schema = db
		return true
	case strings.HasPrefix(s, "SET timestamp=") && strings.HasSuffix(s, ";"):
		if n, err := strconv.ParseInt(s[len("SET timestamp="):len(s)-1], 10, 64); err == nil {
			e.Time = time.Unix(n, 0)
		}
		return true
	}
	return false
}

// header reads the fields of a "#" line into e; it reports whether the
// line is "# User@Host:".
func (p *SlowLogParser) header(e *SlowEntry, line []byte) bool {
	s := strings.TrimSpace(strings.TrimPrefix(string(line), "#"))
	switch {
	case strings.HasPrefix(s, "Time:"):
		if t, ok := parseSlowTime(strings.TrimSpace(s[len("Time:"):])); ok {
			p.time = t
		}
		return false
	case strings.HasPrefix(s, "User@Host:"):
		e.User, e.Host = parseUserHost(strings.TrimSpace(s[len("User@Host:"):]))
		if i := strings.Index(s, " Id: "); i >= 0 {
			// MySQL: "# User@Host: root[root] @ localhost []  Id:     8"
			e.ThreadID, _ = strconv.ParseUint(strings.TrimSpace(s[i+len(" Id: "):]), 10, 64)
		}
		return true
	}
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		k, ok := strings.CutSuffix(f[i], ":")
		if !ok {
			continue
		}
		v := ""
		if i+1 < len(f) && !strings.HasSuffix(f[i+1], ":") {
			v = f[i+1]
			i++
		}
		num := func() uint64 { n, _ := strconv.ParseUint(v, 10, 64); return n }
		switch k {
		case "Query_time":
			e.QueryTime = parseSlowSeconds(v)
		case "Lock_time":
			e.LockTime = parseSlowSeconds(v)
		case "Rows_sent":
			e.RowsSent = num()
		case "Rows_examined":
			e.RowsExamined = num()
		case "Rows_affected":
			e.RowsAffected = num()
		case "Thread_id":
			e.ThreadID = num()
		case "Schema":
			e.Schema = v
		case "Errno":
			e.Errno = num()
		case "Full_scan":
			e.NoIndexUsed = v == "Yes"
		case "Tmp_table_on_disk":
			if v == "Yes" {
				e.TmpDiskTables = 1
			}
		case "Created_tmp_disk_tables":
			e.TmpDiskTables = num()
		case "Merge_passes", "Sort_merge_passes":
			e.SortMergePasses = num()
		}
	}
	return false
}

// parseUserHost reads "user[priv_user] @ host [ip]".
func parseUserHost(s string) (user, host string) {
	u, h, _ := strings.Cut(s, "@")
	if i := strings.IndexByte(u, '['); i >= 0 {
		u = u[:i]
	}
	user = strings.TrimSpace(u)
	h = strings.TrimSpace(h)
	name, ip, _ := strings.Cut(h, "[")
	host = strings.TrimSpace(name)
	if host == "" {
		ip, _, _ = strings.Cut(ip, "]")
		host = strings.TrimSpace(ip)
	}
	if i := strings.Index(host, " Id:"); i >= 0 {
		host = strings.TrimSpace(host[:i])
	}
	return user, host
}

// parseSlowTime reads a "# Time:" value: MySQL 5.7+'s RFC 3339
// ("2026-11-26T06:08:15.123456Z", UTC or with an offset per
// log_timestamps), or MariaDB's and older MySQL's "261126  6:08:15" (local
// time).
func parseSlowTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	f := strings.Fields(s)
	if len(f) != 2 {
		return time.Time{}, false
	}
	if len(f[1]) == 7 { // "6:08:15"
		f[1] = "0" + f[1]
	}
	t, err := time.ParseInLocation("060102 15:04:05", f[0]+" "+f[1], time.Local)
	return t, err == nil
}

// parseSlowSeconds reads "0.000116" (the log's Query_time) or a TIME value
// "00:00:01.501367" (the slow_log table's query_time) exactly, to the
// microsecond; a bad value is 0.
func parseSlowSeconds(s string) time.Duration {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var whole int64
	for _, part := range strings.Split(strings.SplitN(s, ".", 2)[0], ":") {
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil || n < 0 || whole > (1<<62)/60/int64(time.Second) {
			return 0
		}
		whole = whole*60 + n
	}
	d := time.Duration(whole) * time.Second
	if _, frac, ok := strings.Cut(s, "."); ok {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		n, err := strconv.ParseInt(frac, 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		for i := len(frac); i < 9; i++ {
			n *= 10
		}
		d += time.Duration(n)
	}
	if neg {
		return 0
	}
	return d
}

// StatementSource is where an instance's statement statistics come from
// (DetectStatementSource).
type StatementSource struct {
	// Source is one of dbpilot.QuerySourcePerformanceSchema,
	// QuerySourceSlowLogTable, QuerySourceSlowLogFile and QuerySourceNone.
	Source string
	// Path is the slow log file (absolute), for QuerySourceSlowLogFile.
	Path string
	// Reason says in one line why this source: for QuerySourceNone, what
	// to turn on; for a slow log, what it sees (statements slower than
	// long_query_time).
	Reason string
	// LongQueryTime is the server's long_query_time: a slow log holds only
	// statements that took longer.
	LongQueryTime time.Duration
	Flavor        dbpilot.Flavor
	Version       string
}

const statementSourceSQL = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('version', 'version_comment', 'performance_schema', 'slow_query_log', 'log_output', 'slow_query_log_file', 'datadir', 'long_query_time')"

// DetectStatementSource reads, in one statement, what decides where the
// statements of the server at key can be read: performance_schema when it
// is on; else the slow query log when it is on, from the mysql.slow_log
// table when log_output has TABLE, else from its file when log_output has
// FILE and the file can be read here (the server runs on this host);
// otherwise QuerySourceNone, with a Reason that tells what to turn on. An
// error is a failure to ask the server.
func DetectStatementSource(ctx context.Context, q Querier, key dbpilot.InstanceKey) (StatementSource, error) {
	return detectStatementSource(ctx, q, key, true)
}

// DetectSlowLogSource is DetectStatementSource without performance_schema:
// the slow log, whether performance_schema is on or off.
func DetectSlowLogSource(ctx context.Context, q Querier, key dbpilot.InstanceKey) (StatementSource, error) {
	return detectStatementSource(ctx, q, key, false)
}

func detectStatementSource(ctx context.Context, q Querier, key dbpilot.InstanceKey, ps bool) (StatementSource, error) {
	s := session{q: q, key: key}
	r, err := s.query(ctx, "read statement source variables", statementSourceSQL)
	if err != nil {
		return StatementSource{}, err
	}
	vars := r.NameValues()
	src := StatementSource{Version: vars["version"]}
	src.Flavor = DetectFlavor(src.Version, vars["version_comment"])
	if lqt, err := strconv.ParseFloat(vars["long_query_time"], 64); err == nil && lqt >= 0 && lqt < maxSeconds {
		src.LongQueryTime = time.Duration(lqt * float64(time.Second))
	}
	on := func(v string) bool { return strings.EqualFold(v, "ON") || v == "1" }
	psOn := on(vars["performance_schema"])
	if ps && psOn {
		src.Source, src.Reason = dbpilot.QuerySourcePerformanceSchema, "performance_schema=ON"
		return src, nil
	}
	psState := "performance_schema is off"
	if psOn {
		psState = "performance_schema is on (not used)"
	}
	// What the slow log sees, for the reasons below.
	sees := "every statement (long_query_time=0)"
	if src.LongQueryTime > 0 {
		sees = fmt.Sprintf("only statements slower than long_query_time=%s; SET GLOBAL long_query_time=0 to see all", src.LongQueryTime)
	}
	output := strings.ToUpper(vars["log_output"])
	hasOutput := func(o string) bool { return slices.Contains(strings.Split(output, ","), o) }
	path := vars["slow_query_log_file"]
	if path != "" && !filepath.IsAbs(path) && vars["datadir"] != "" {
		path = filepath.Join(vars["datadir"], path)
	}
	switch {
	case !on(vars["slow_query_log"]):
		src.Source = dbpilot.QuerySourceNone
		src.Reason = fmt.Sprintf("%s on %s and the slow query log is off: set performance_schema=ON in the server's option file ([mysqld]) and restart it, or SET GLOBAL slow_query_log=ON, log_output='TABLE', long_query_time=0", psState, key)
	case hasOutput("TABLE"):
		src.Source = dbpilot.QuerySourceSlowLogTable
		src.Reason = psState + "; reading the slow query log table mysql.slow_log: " + sees
	case hasOutput("FILE"):
		if err := localFile(ctx, key, path); err != nil {
			src.Source = dbpilot.QuerySourceNone
			src.Reason = fmt.Sprintf("%s on %s and its slow query log file %s cannot be read here (%v): run dbpilot on the server's host, or SET GLOBAL log_output='FILE,TABLE', or set performance_schema=ON and restart", psState, key, path, err)
			break
		}
		src.Source, src.Path = dbpilot.QuerySourceSlowLogFile, path
		src.Reason = psState + "; reading the slow query log file " + path + ": " + sees
	default:
		src.Source = dbpilot.QuerySourceNone
		src.Reason = fmt.Sprintf("%s on %s and the slow query log goes nowhere (log_output=%s): SET GLOBAL log_output='TABLE', or set performance_schema=ON and restart", psState, key, vars["log_output"])
	}
	return src, nil
}

// localFile returns nil when the server at key runs on this host (a
// loopback address, this host's name, or one of its addresses) and path
// can be opened.
func localFile(ctx context.Context, key dbpilot.InstanceKey, path string) error {
	if path == "" {
		return errors.New("slow_query_log_file is empty")
	}
	if !isThisHost(ctx, key.Host) {
		return fmt.Errorf("%s is not this host", key.Host)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// isThisHost reports whether host names this machine.
func isThisHost(ctx context.Context, host string) bool {
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	if name, err := os.Hostname(); err == nil && strings.EqualFold(host, name) {
		return true
	}
	ips := []string{host}
	if net.ParseIP(host) == nil {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		if ips, err = net.DefaultResolver.LookupHost(lctx, host); err != nil {
			return false
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			continue
		}
		if ip.IsLoopback() {
			return true
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// StatementReader reads the statement statistics of one instance, from any
// source: each Snapshot returns counters cumulative since the source's
// start (performance_schema) or the reader's (a slow log), for
// DigestDeltas. A reader is kept across calls (serve's statements collector
// calls it every interval on its monitoring session) and holds no file or
// session between them. When Snapshot fails because the server changed
// (performance_schema or log_output), detect the source again.
type StatementReader interface {
	Snapshot(ctx context.Context, q Querier) (*DigestSnapshot, error)
}

// SlowLogOptions tunes a SlowLogReader (and NewStatementReader).
type SlowLogOptions struct {
	// Examples keeps the literals of sample statements; by default they
	// are replaced by "?" (RedactLiterals). Passwords (statements with
	// IDENTIFIED or PASSWORD) are redacted either way.
	Examples bool
	// FromStart counts what the log already holds at the first Snapshot;
	// by default the first Snapshot only notes where the log ends, and
	// counts start there.
	FromStart bool
	// MaxDigests is the most fingerprints kept (default 10000); the
	// statements of others are counted in a row with Digest "", as
	// performance_schema does when its digest table is full (Lost counts
	// them).
	MaxDigests int
	// MaxBytesPerRead bounds what one Snapshot reads of the log file
	// (default 64 MiB); the rest is read by the next calls.
	MaxBytesPerRead int64
	// MaxRowsPerRead bounds the rows one Snapshot reads of mysql.slow_log
	// (default 20000); the rest is read by the next calls.
	MaxRowsPerRead int
	// User names the account in errors.
	User string
}

func (o SlowLogOptions) withDefaults() SlowLogOptions {
	if o.MaxDigests <= 0 {
		o.MaxDigests = 10000
	}
	if o.MaxBytesPerRead <= 0 {
		o.MaxBytesPerRead = 64 << 20
	}
	if o.MaxRowsPerRead <= 0 {
		o.MaxRowsPerRead = 20000
	}
	return o
}

// NewStatementReader returns the reader of src for the instance at key:
// performance_schema's digest table (ReadDigestsFrom), or a SlowLogReader.
// A QuerySourceNone source is an error (EUNSUPPORTED) carrying its Reason.
func NewStatementReader(key dbpilot.InstanceKey, src StatementSource, opts SlowLogOptions) (StatementReader, error) {
	switch src.Source {
	case dbpilot.QuerySourcePerformanceSchema:
		return &digestTableReader{key: key, user: opts.User, opts: DigestOptions{Examples: opts.Examples}}, nil
	case dbpilot.QuerySourceSlowLogTable, dbpilot.QuerySourceSlowLogFile:
		return NewSlowLogReader(key, src, opts)
	case dbpilot.QuerySourceNone:
		reason := src.Reason
		if reason == "" {
			reason = "no statement source on " + key.String()
		}
		return nil, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "%s", reason)
	}
	return nil, dbpilot.Errorf(dbpilot.EINVALID, "mysql: unknown statement source %q for %s", src.Source, key)
}

// digestTableReader is the StatementReader of performance_schema.
type digestTableReader struct {
	key  dbpilot.InstanceKey
	user string
	opts DigestOptions
}

func (r *digestTableReader) Snapshot(ctx context.Context, q Querier) (*DigestSnapshot, error) {
	return ReadDigestsFrom(ctx, q, r.key, r.user, r.opts)
}

// SlowLogReader reads an instance's slow query log, from where the last
// Snapshot stopped, and keeps per (schema, Fingerprint) counters since the
// reader started. The file is opened and closed by each Snapshot (nothing
// is held between calls); the table is read with a cursor on when the
// statements ended.
// Safe for concurrent use.
type SlowLogReader struct {
	key  dbpilot.InstanceKey
	src  StatementSource
	opts SlowLogOptions

	mu      sync.Mutex
	started bool
	// The file: the one read last, and where its unread part starts.
	file   os.FileInfo
	offset int64
	mark   []byte // the last bytes before offset
	// The table: the largest start_time read, and the rows read at it
	// (rows come back at the cursor, and several may share a microsecond).
	cursor   string
	atCursor map[string]struct{}

	digests  map[string]*Digest // by Digest.key()
	overflow Digest             // statements beyond MaxDigests
}

// NewSlowLogReader returns a reader of the slow log src names
// (QuerySourceSlowLogTable, or QuerySourceSlowLogFile with its Path).
func NewSlowLogReader(key dbpilot.InstanceKey, src StatementSource, opts SlowLogOptions) (*SlowLogReader, error) {
	switch src.Source {
	case dbpilot.QuerySourceSlowLogTable:
	case dbpilot.QuerySourceSlowLogFile:
		if src.Path == "" {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "mysql: slow log reader for %s: no file", key)
		}
	default:
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "mysql: slow log reader for %s: source %q is no slow log", key, src.Source)
	}
	return &SlowLogReader{key: key, src: src, opts: opts.withDefaults(), digests: map[string]*Digest{}}, nil
}

// Snapshot reads what the log gained since the last call and returns the
// counters since the reader started (the first call without FromStart
// returns none: it notes where the log ends). The file is read on this
// host and q is not used; the table is read through q.
func (r *SlowLogReader) Snapshot(ctx context.Context, q Querier) (*DigestSnapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := r.started || r.opts.FromStart
	var err error
	if r.src.Source == dbpilot.QuerySourceSlowLogFile {
		err = r.readFile(count)
	} else {
		err = r.readTable(ctx, q, count)
	}
	if err != nil {
		return nil, err
	}
	r.started = true
	snap := &DigestSnapshot{
		Key: r.key, At: time.Now(), Flavor: r.src.Flavor, Version: r.src.Version,
		Source: r.src.Source, SourceDetail: r.src.Path, Enabled: true, Capacity: 0,
		Lost:    r.overflow.Count,
		Digests: make([]Digest, 0, len(r.digests)+1),
	}
	for _, d := range r.digests {
		snap.Digests = append(snap.Digests, *d)
	}
	if r.overflow.Count > 0 {
		snap.Digests = append(snap.Digests, r.overflow)
	}
	sort.Slice(snap.Digests, func(i, j int) bool { return snap.Digests[i].key() < snap.Digests[j].key() })
	return snap, nil
}

// readFile reads the file from r.offset, up to MaxBytesPerRead, counting
// the entries when count. A file replaced (rotated: another inode) or
// shorter than the offset (truncated) is read from its start.
func (r *SlowLogReader) readFile(count bool) error {
	path := r.src.Path
	f, err := os.Open(path)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: read slow log of %s", r.key)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: read slow log of %s", r.key)
	}
	if r.file == nil || !os.SameFile(r.file, fi) || fi.Size() < r.offset || !r.markHolds(f) {
		r.offset = 0
	}
	r.file = fi
	defer r.setMark(f)
	if !count {
		r.offset = fi.Size() // start at the end; a partial entry there is skipped as headless
		return nil
	}
	if fi.Size() == r.offset {
		return nil
	}
	if _, err := f.Seek(r.offset, io.SeekStart); err != nil {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: read slow log of %s", r.key)
	}
	limit := r.opts.MaxBytesPerRead
	p := NewSlowLogParser(io.LimitReader(f, limit))
	// Hold back an entry the server may be writing, unless a single entry
	// fills the whole read: then take it, cut, rather than never move.
	p.Tail = true
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return dbpilot.WrapError(dbpilot.EUNAVAIL, err, "mysql: read slow log %s of %s", path, r.key)
		}
		r.add(e.Schema, e.Text, e.QueryTime, e.RowsExamined, e.RowsSent, e.Errno != 0, e.NoIndexUsed, e.TmpDiskTables, e.SortMergePasses, formatSeen(e.Time))
	}
	if p.Offset() == 0 && fi.Size()-r.offset >= limit {
		r.offset += limit
	} else {
		r.offset += p.Offset()
	}
	return nil
}

// markHolds reports whether the bytes before the offset are those read
// there last time: a file truncated and written again past the offset
// (same inode, not shorter) is not.
func (r *SlowLogReader) markHolds(f *os.File) bool {
	if len(r.mark) == 0 || r.offset < int64(len(r.mark)) {
		return true
	}
	buf := make([]byte, len(r.mark))
	if _, err := f.ReadAt(buf, r.offset-int64(len(buf))); err != nil {
		return false
	}
	return bytes.Equal(buf, r.mark)
}

// setMark keeps the bytes before the offset, for markHolds.
func (r *SlowLogReader) setMark(f *os.File) {
	n := min(r.offset, 64)
	r.mark = r.mark[:0]
	if n == 0 {
		return
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, r.offset-n); err == nil {
		r.mark = buf
	}
}

// seenLayout is how performance_schema prints FIRST_SEEN and LAST_SEEN,
// and the slow_log table its start_time.
const seenLayout = "2006-01-02 15:04:05.000000"

func formatSeen(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return t.Local().Format(seenLayout)
}

// The slow_log table is a CSV table without index: each read is a scan of
// the whole table (kept short by the server's own rotation, or by a DBA's
// TRUNCATE), whatever its WHERE; ORDER BY ... LIMIT sorts only the rows
// after the cursor, keeping the top ones. sql_text is cut at MaxStatement.
//
// The cursor is on when a statement ended (start_time + query_time), not on
// start_time: the row is written when the statement ends, so a statement
// that started before a read and ended after it has a start_time behind a
// start_time cursor and would never be seen. Rows are written in about the
// order their statements end; one written a moment after a later-ending
// one was read is caught by reading slowTableOverlap back from the cursor,
// the rows read then being told apart by their identity.
const (
	slowTableEnd      = "ADDTIME(start_time, query_time)"
	slowTableMaxSQL   = "SELECT MAX(" + slowTableEnd + ") FROM mysql.slow_log"
	slowTableRowsSQL  = "SELECT start_time, user_host, query_time, lock_time, rows_sent, rows_examined, db, LEFT(sql_text, 65536), thread_id, " + slowTableEnd + " AS end_time FROM mysql.slow_log"
	slowTableOrderSQL = " ORDER BY end_time LIMIT "
	slowTableOverlap  = time.Second
)

// readTable reads the rows of mysql.slow_log whose statements ended from
// the cursor on, counting them when count; without count (the first call)
// the cursor goes to the table's end.
func (r *SlowLogReader) readTable(ctx context.Context, q Querier, count bool) error {
	s := session{q: q, key: r.key, user: r.opts.User}
	if !count {
		m, err := s.query(ctx, "read the end of mysql.slow_log", slowTableMaxSQL)
		if err != nil {
			return err
		}
		if len(m.Values) > 0 && Str(m.Values[0], 0) != "" {
			r.cursor = strings.Clone(Str(m.Values[0], 0))
		}
	}
	query := slowTableRowsSQL
	var args []any
	from := r.cursor
	if r.cursor != "" {
		if t, err := time.Parse(seenLayout, r.cursor); err == nil {
			from = t.Add(-slowTableOverlap).Format(seenLayout)
		}
		query += " WHERE " + slowTableEnd + " >= ?"
		args = append(args, from)
	}
	query += slowTableOrderSQL + strconv.Itoa(r.opts.MaxRowsPerRead)
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		var e *dbpilot.Error
		if errors.As(err, &e) && e.Err != nil {
			err = e.Err
		}
		return Classify(err, r.key, r.opts.User, "read mysql.slow_log")
	}
	seen := r.atCursor
	if seen == nil {
		seen = map[string]struct{}{}
	}
	for _, row := range rows.Values {
		start, end := Str(row, 0), Str(row, 9)
		id := start + "\x00" + Str(row, 5) + "\x00" + Str(row, 2) + "\x00" + Str(row, 8) + "\x00" + Str(row, 7)
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		if end > r.cursor {
			r.cursor = strings.Clone(end)
		}
		if !count {
			continue
		}
		num := func(i int) uint64 { n, _ := strconv.ParseUint(Str(row, i), 10, 64); return n }
		r.add(Str(row, 6), Str(row, 7), parseSlowSeconds(Str(row, 2)), num(5), num(4), false, false, 0, 0, start)
	}
	// Keep the identities of the rows the next read reads again.
	if t, err := time.Parse(seenLayout, r.cursor); err == nil {
		keep := t.Add(-slowTableOverlap).Format(seenLayout)
		for id := range seen {
			start, rest, _ := strings.Cut(id, "\x00")
			_, rest, _ = strings.Cut(rest, "\x00")
			took, _, _ := strings.Cut(rest, "\x00")
			if st, err := time.Parse(seenLayout, start); err == nil && st.Add(parseSlowSeconds(took)).Format(seenLayout) < keep {
				delete(seen, id)
			}
		}
	}
	r.atCursor = seen
	return nil
}

// add counts one statement. seen is when it ran, as seenLayout prints it.
func (r *SlowLogReader) add(schema, text string, took time.Duration, examined, sent uint64, failed, noIndex bool, tmpDisk, mergePasses uint64, seen string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	fp := Fingerprint(text)
	g := Digest{Schema: schema, Digest: FingerprintDigest(fp)}
	d, ok := r.digests[g.key()]
	if !ok {
		if len(r.digests) >= r.opts.MaxDigests {
			d = &r.overflow
		} else {
			g.Text = cutText(fp, maxDigestText)
			g.Schema = strings.Clone(schema)
			d = &g
			r.digests[g.key()] = d
		}
	}
	ps := uint64(took.Nanoseconds()) * 1000
	if d != &r.overflow && (d.Count == 0 || ps > d.MaxWait) {
		// The sample is the slowest statement, as pt-query-digest shows.
		d.Sample = r.sample(text)
	}
	d.Count++
	d.TotalWait += ps
	d.MaxWait = max(d.MaxWait, ps)
	d.RowsExamined += examined
	d.RowsSent += sent
	if failed {
		d.Errors++
	}
	if noIndex {
		d.NoIndexUsed++
	}
	d.TmpDiskTables += tmpDisk
	d.SortMergePasses += mergePasses
	if d.FirstSeen == "" || seen < d.FirstSeen {
		d.FirstSeen = strings.Clone(seen)
	}
	if seen > d.LastSeen {
		d.LastSeen = strings.Clone(seen)
	}
}

// maxDigestText bounds the text and sample kept per digest, as
// performance_schema_max_digest_length and max_sql_text_length do (1024 by
// default): 10000 digests of 64 KiB statements would be 640 MB.
const maxDigestText = 1024

// sample is an example statement as kept: redacted unless Examples, and
// always when it may hold a password.
func (r *SlowLogReader) sample(text string) string {
	if !r.opts.Examples || mayHoldPassword(text) {
		text = RedactLiterals(text)
	}
	return cutText(text, maxDigestText)
}

// mayHoldPassword reports whether a statement may carry a password in a
// literal (CREATE USER ... IDENTIFIED BY, SET PASSWORD, CHANGE MASTER ...
// MASTER_PASSWORD): the server writes such statements to the slow log as
// they were sent.
func mayHoldPassword(q string) bool {
	u := strings.ToUpper(q)
	return strings.Contains(u, "IDENTIFIED") || strings.Contains(u, "PASSWORD")
}

// cutText returns s cut to n bytes at a character boundary, with "..."
// when cut; the result is a copy (s may be a row's block of memory).
func cutText(s string, n int) string {
	if len(s) <= n {
		return strings.Clone(s)
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
