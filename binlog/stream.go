package binlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Defaults of Options.
const (
	DefaultHeartbeat        = 2 * time.Second
	DefaultProgressInterval = time.Second
)

// closeTimeout bounds the connection that ends a stream.
const closeTimeout = 5 * time.Second

// errPurged is the server's error 1236: the start position is not in its
// binary logs.
const errPurged = 1236

// Options configures a Streamer.
type Options struct {
	Key  dbpilot.InstanceKey // the server to read from
	Conn mysql.Options       // credentials and timeouts; the account needs REPLICATION SLAVE (and REPLICATION CLIENT / BINLOG MONITOR)
	Dir  string              // the archive directory
	// From is where a new archive starts: after this position (MariaDB:
	// a GTID list as gtid_slave_pos, MySQL: a GTID set), as a replica's
	// gtid_slave_pos. "" starts at the oldest binary log the server has.
	// An archive that holds files already resumes after its last complete
	// transaction and ignores From.
	From string
	// SemiSync acknowledges every transaction as a semi-sync replica once
	// it is written and synced to the partial file (the primary must have
	// rpl_semi_sync_master_enabled=ON).
	SemiSync bool
	// ServerID is the replica server id the stream registers with; it must
	// differ from every server's and replica's. 0 picks a random one in
	// 2130706432..2147483646.
	ServerID uint32
	// Heartbeat is the period of the server's heartbeats when it has
	// nothing to send (default DefaultHeartbeat); the connection is deemed
	// lost after three periods without an event.
	Heartbeat time.Duration
	// StopAtEnd stops Run, with a nil error, once the archive holds every
	// transaction the server had written when Run connected.
	StopAtEnd bool
	// OnProgress, when set, is called from the stream's goroutine at most
	// every ProgressInterval (default DefaultProgressInterval) and after
	// each finished file. It must not block.
	OnProgress       func(Progress)
	ProgressInterval time.Duration
	Logger           *slog.Logger // nil: discard

	// writeHook wraps the archive's file writers (tests inject faults).
	writeHook func(path string, w io.Writer) io.Writer
	// stopAt stops the stream at a step of finishing a file (tests: the
	// archive as a crash there leaves it; see writer.step).
	stopAt string
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	if o.Dir == "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "binlog: no archive directory (--out DIR)")
	}
	if o.Key.Host == "" || o.Key.Port == 0 {
		return dbpilot.Errorf(dbpilot.EINVALID, "binlog: no server to stream from")
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.ServerID == 0 {
		o.ServerID = 0x7f000000 + uint32(rand.IntN(0x00ffffff))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// Progress is a snapshot of a stream.
type Progress struct {
	Source        string    `json:"source"`
	Flavor        string    `json:"flavor"`
	File          string    `json:"file"`     // the server file being written
	Position      string    `json:"position"` // after the last archived transaction
	LastGTID      string    `json:"last_gtid"`
	LastEventTime time.Time `json:"last_event_time"`
	// Lag is how far the archive is behind the server: the age of the
	// last transaction when it was written; 0 when the server said it had
	// nothing more (heartbeat).
	Lag           time.Duration `json:"lag"`
	Bytes         int64         `json:"bytes"` // written by this Run
	Events        int64         `json:"events"`
	Transactions  int64         `json:"transactions"`
	FilesFinished int           `json:"files_finished"`
	SemiSync      bool          `json:"semi_sync"` // acknowledging as a semi-sync replica
	CaughtUp      bool          `json:"caught_up"` // a heartbeat came: nothing more to send now
}

// Streamer copies a server's binary logs into an archive directory, as a
// replica connected with GTID would receive them. See the package doc for
// the archive's format.
type Streamer struct {
	opts Options

	mu       sync.Mutex
	prog     Progress
	lastCall time.Time

	w      *writer
	target *position // StopAtEnd: the server's position at connect
	stop   context.CancelFunc
	done   bool // reached target
	herr   error
	seen   bool // an FDE or heartbeat on this connection

	received atomic.Int64 // events received on this connection (watch)
	silent   atomic.Bool  // watch ended a connection that went silent
}

// New returns a Streamer for opts (validated).
func New(opts Options) (*Streamer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Streamer{opts: opts, prog: Progress{Source: opts.Key.String()}}, nil
}

// Progress returns the current progress.
func (s *Streamer) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prog
}

// serverInfo is what Run reads from the server before streaming.
type serverInfo struct {
	flavor   string
	version  string
	serverID uint32
	end      string // gtid_binlog_pos / gtid_executed
	semiSync bool
}

func readServer(ctx context.Context, key dbpilot.InstanceKey, opts mysql.Options) (serverInfo, error) {
	var si serverInfo
	db, err := mysql.Open(ctx, key, opts)
	if err != nil {
		return si, err
	}
	defer db.Close()
	r, err := db.Query(ctx, "SELECT @@version, @@server_id, @@log_bin")
	if err != nil {
		return si, err
	}
	if len(r.Values) == 0 {
		return si, dbpilot.Errorf(dbpilot.EINTERNAL, "binlog: %s returned no version", key)
	}
	row := r.Values[0]
	si.version = mysql.Str(row, 0)
	fmt.Sscan(mysql.Str(row, 1), &si.serverID)
	if mysql.Str(row, 2) != "1" {
		return si, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "binlog: %s does not write binary logs (log_bin is OFF)", key)
	}
	si.flavor = FlavorMySQL
	q := "SELECT @@gtid_executed"
	if strings.Contains(strings.ToLower(si.version), "mariadb") {
		si.flavor = FlavorMariaDB
		q = "SELECT @@gtid_binlog_pos"
	}
	si.end, _, err = db.QueryValue(ctx, q)
	if err != nil {
		return si, err
	}
	si.end = strings.Join(strings.Fields(si.end), "")
	vars, err := db.Query(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('rpl_semi_sync_master_enabled', 'rpl_semi_sync_source_enabled')")
	if err == nil {
		for _, v := range vars.NameValues() {
			if v == "ON" {
				si.semiSync = true
			}
		}
	}
	return si, nil
}

// Run streams until ctx is cancelled (it returns ctx's error after the
// partial file is flushed and synced), until the server's position at
// connect is archived with StopAtEnd (nil), or until an error: the
// connection lost (EUNAVAIL), the archive out of space (EUNAVAIL, see
// the message), the start position purged from the server (ENOTFOUND, a
// *PurgedError naming the oldest position), the archive locked by another
// stream (ECONFLICT). Run again to resume after the last complete
// transaction.
func (s *Streamer) Run(ctx context.Context) (err error) {
	o := s.opts
	s.done, s.herr, s.seen, s.target = false, nil, false, nil
	si, err := readServer(ctx, o.Key, o.Conn)
	if err != nil {
		return err
	}
	from, err := parsePosition(si.flavor, o.From)
	if err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: start position %q", o.From)
	}
	w, err := openWriter(o.Dir, si.flavor, from, o.Key.String(), si.serverID)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	start, err := s.prepare(w, si)
	if err != nil {
		return err
	}
	gset, err := startGTIDSet(si.flavor, start)
	if err != nil {
		return err
	}
	conns := &streamConns{dial: mysql.DialBounded(mysql.DialBlocking(o.Conn.Dial), o.Conn.ConnectTimeout)}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.stop = cancel
	s.silent.Store(false)
	go s.watch(runCtx, cancel)
	w.startConnection()
	if s.reached() && w.f != nil {
		return nil
	}
	syncer := replication.NewBinlogSyncer(s.syncerConfig(si.flavor, conns.dialer))
	stream, err := syncer.StartSyncGTID(gset)
	if err != nil {
		conns.close(syncer)
		return s.classify(ctx, err, si, start)
	}
	_, err = stream.GetEvent(runCtx) // events go to HandleEvent; this waits for the end
	conns.close(syncer)
	s.report(true)
	switch {
	case s.herr != nil:
		return s.herr
	case s.done:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case s.silent.Load():
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "binlog: stream from %s lost: nothing received for %s (the server sends a heartbeat every %s)", s.opts.Key, 3*o.Heartbeat, o.Heartbeat)
	}
	return s.classify(ctx, err, si, start)
}

// prepare readies the archive's writer w for a stream from the server si
// (a new source's file begun, StopAtEnd's target set, the progress's
// start) and returns the position the stream starts from.
func (s *Streamer) prepare(w *writer, si serverInfo) (position, error) {
	o := s.opts
	w.hook, w.stopAt = o.writeHook, o.stopAt
	if err := w.newSource(si.serverID); err != nil { // a failover: the old source's file is finished
		return position{}, err
	}
	w.syncCommits = o.SemiSync
	s.w = w
	w.onFinish = func(IndexEntry) { s.report(true) }
	if o.StopAtEnd {
		t, err := parsePosition(si.flavor, si.end)
		if err != nil {
			return position{}, dbpilot.WrapError(dbpilot.EINTERNAL, err, "binlog: server position %q", si.end)
		}
		s.target = &t
	}
	start := w.position()
	s.mu.Lock()
	s.prog.Flavor, s.prog.Position, s.prog.SemiSync = si.flavor, start.String(), o.SemiSync && si.semiSync
	s.mu.Unlock()
	if o.SemiSync && !si.semiSync {
		o.Logger.Warn("semi-sync requested but the server has rpl_semi_sync_master_enabled OFF: not acknowledging", "server", o.Key.String())
	}
	return start, nil
}

// startGTIDSet is start in the replication library's form.
func startGTIDSet(flavor string, start position) (gomysql.GTIDSet, error) {
	var gset gomysql.GTIDSet
	var err error
	if flavor == FlavorMariaDB {
		gset, err = gomysql.ParseMariadbGTIDSet(start.String())
	} else {
		gset, err = gomysql.ParseMysqlGTIDSet(start.String())
	}
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "binlog: start position %q", start.String())
	}
	return gset, nil
}

// syncerConfig configures the replication library's stream in raw mode,
// with s handling its events and dialer opening its connections.
func (s *Streamer) syncerConfig(flavor string, dialer func(ctx context.Context, network, addr string) (net.Conn, error)) replication.BinlogSyncerConfig {
	o := s.opts
	return replication.BinlogSyncerConfig{
		ServerID:        o.ServerID,
		Flavor:          flavor,
		Host:            o.Key.Host,
		Port:            uint16(o.Key.Port),
		User:            o.Conn.User,
		Password:        o.Conn.Password,
		SemiSyncEnabled: o.SemiSync,
		RawModeEnabled:  true,
		VerifyChecksum:  true,
		HeartbeatPeriod: o.Heartbeat,
		// No read deadline per packet: setting one per read cost a third
		// of the stream's CPU. watch (below) ends a connection that stays
		// silent for three heartbeat periods instead.
		ReadTimeout:             0,
		DisableRetrySync:        true,
		SynchronousEventHandler: s,
		Logger:                  slog.New(quiet{o.Logger.Handler()}),
		Dialer:                  dialer,
		// TLS as the other connections to the server (nil: plain text).
		TLSConfig: o.Conn.TLSConfig(o.Key),
	}
}

// streamConns are a stream's connections, closed when it ends.
//
// The library closes a stream by KILLing it from a new connection, whose
// handshake has no read deadline (ReadTimeout is 0): once the stream is
// ending, connections get one, so that closing the stream of a server that
// went silent does not hang.
type streamConns struct {
	// dial opens blocking sockets: a stream is one busy connection, read
	// without Go's network poller round per packet (less CPU while the
	// server writes). The library's handshake has no deadline of its own:
	// DialBounded holds each connection to the connect timeout until it is
	// logged in.
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	ending atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

// dialer is the library's Dialer.
func (sc *streamConns) dialer(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := sc.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if sc.ending.Load() {
		_ = c.SetDeadline(time.Now().Add(closeTimeout))
		return c, nil
	}
	sc.mu.Lock()
	sc.conns = append(sc.conns, c)
	sc.mu.Unlock()
	return c, nil
}

// close ends the stream of syncer.
func (sc *streamConns) close(syncer *replication.BinlogSyncer) {
	sc.ending.Store(true)
	// A read blocked in the socket ignores a deadline set after it began
	// (the library's way to stop it): closing the connection wakes it,
	// also when the server went silent.
	sc.mu.Lock()
	for _, c := range sc.conns {
		c.Close()
	}
	sc.mu.Unlock()
	syncer.Close() // waits for HandleEvent to return
}

// watch cancels the stream when nothing, not even a heartbeat, arrived
// for three heartbeat periods: the connection is gone without a word (a
// host down, a network cut).
func (s *Streamer) watch(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(s.opts.Heartbeat / 2)
	defer t.Stop()
	last, since := s.received.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := s.received.Load(); n != last {
				last, since = n, now
				continue
			}
			if now.Sub(since) > 3*s.opts.Heartbeat {
				s.silent.Store(true)
				cancel()
				return
			}
		}
	}
}

// HandleEvent is called by the replication library for each event, in its
// goroutine; it is not for other callers.
func (s *Streamer) HandleEvent(be *replication.BinlogEvent) error {
	s.received.Add(1)
	if s.done {
		return nil
	}
	e, err := parseEvent(be.RawData)
	if err != nil {
		s.herr = dbpilot.WrapError(dbpilot.EINTERNAL, err, "binlog: event from %s", s.opts.Key)
		return s.herr
	}
	res, err := s.w.add(e)
	if err != nil {
		s.herr = err
		return err
	}
	s.mu.Lock()
	p := &s.prog
	p.Bytes, p.Events, p.Transactions, p.FilesFinished = s.w.bytes, s.w.events, s.w.txns, s.w.finished
	if s.w.f != nil {
		p.File = s.w.name
	}
	if e.Type == typeHeartbeat {
		p.CaughtUp, p.Lag = true, 0
		s.seen = true
	} else if e.Type == typeFormatDesc {
		s.seen = true
	}
	if res.committed {
		now := time.Now()
		p.Position = s.w.position().String()
		p.LastGTID = s.w.t.cur
		p.LastEventTime = time.Unix(int64(e.Timestamp), 0).UTC()
		p.Lag = max(0, now.Sub(p.LastEventTime))
		p.CaughtUp = false
	}
	s.mu.Unlock()
	s.report(false)
	if s.reached() {
		s.done = true
		s.stop()
	}
	return nil
}

// reached reports whether StopAtEnd's target is archived, at a
// transaction boundary.
func (s *Streamer) reached() bool {
	if s.target == nil || s.w.t.inTxn {
		return false
	}
	return (s.seen || s.w.f != nil) && s.w.position().covers(*s.target)
}

func (s *Streamer) report(force bool) {
	if s.opts.OnProgress == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(s.lastCall) < s.opts.ProgressInterval {
		return
	}
	s.lastCall = now
	s.opts.OnProgress(s.Progress())
}

// PurgedError is the server refusing the start position: its binary logs
// no longer (or never) hold the transactions after it.
type PurgedError struct {
	Server     string
	Requested  string // the position the stream asked to start after
	Oldest     string // the oldest position the server can start after
	OldestFile string // its first binary log
	Message    string // the server's own words
}

func (e *PurgedError) Error() string {
	return fmt.Sprintf("binlog: %s cannot send the transactions after %q: the oldest available position is %q (start of %s); stream from there or take a new backup (server: %s)",
		e.Server, e.Requested, e.Oldest, e.OldestFile, e.Message)
}

// classify turns the replication library's error into a dbpilot error.
func (s *Streamer) classify(ctx context.Context, err error, si serverInfo, start position) error {
	if err == nil {
		return dbpilot.Errorf(dbpilot.EUNAVAIL, "binlog: stream from %s ended", s.opts.Key)
	}
	var me *gomysql.MyError
	code := uint16(0)
	msg := err.Error()
	if errors.As(err, &me) {
		code, msg = me.Code, me.Message
	} else if i := strings.Index(msg, "ERROR 1236"); i >= 0 {
		code = errPurged
		msg = msg[i:]
	}
	switch code {
	case errPurged:
		pe := &PurgedError{Server: s.opts.Key.String(), Requested: start.String(), Message: msg}
		pe.OldestFile, pe.Oldest = oldestPosition(ctx, s.opts.Key, s.opts.Conn, si.flavor)
		return dbpilot.WrapError(dbpilot.ENOTFOUND, pe, "")
	case 1045:
		return dbpilot.WrapError(dbpilot.EAUTH, errors.New(msg), "binlog: connect to %s: access denied for user %q", s.opts.Key, s.opts.Conn.User)
	case 1227:
		return dbpilot.WrapError(dbpilot.EAUTH, errors.New(msg), "binlog: user %q on %s lacks REPLICATION SLAVE", s.opts.Conn.User, s.opts.Key)
	}
	if code != 0 {
		return dbpilot.WrapError(dbpilot.EUNAVAIL, errors.New(msg), "binlog: stream from %s", s.opts.Key)
	}
	return dbpilot.WrapError(dbpilot.EUNAVAIL, errors.New(firstLine(msg)), "binlog: stream from %s lost", s.opts.Key)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// oldestPosition reads the server's oldest binary log and the position at
// its start (MariaDB: BINLOG_GTID_POS(file, 4); MySQL: gtid_purged).
func oldestPosition(ctx context.Context, key dbpilot.InstanceKey, opts mysql.Options, flavor string) (file, pos string) {
	db, err := mysql.Open(ctx, key, opts)
	if err != nil {
		return "?", "?"
	}
	defer db.Close()
	r, err := db.Query(ctx, "SHOW BINARY LOGS")
	if err != nil || len(r.Values) == 0 {
		return "?", "?"
	}
	file = mysql.Str(r.Values[0], 0)
	if flavor == FlavorMariaDB {
		pos, _, err = db.QueryValue(ctx, "SELECT BINLOG_GTID_POS(?, 4)", file)
	} else {
		pos, _, err = db.QueryValue(ctx, "SELECT @@gtid_purged")
	}
	if err != nil {
		return file, "?"
	}
	return file, strings.Join(strings.Fields(pos), "")
}

// quiet passes the replication library's log records on at debug level:
// what matters of them reaches the caller as Run's error.
type quiet struct{ h slog.Handler }

func (q quiet) Enabled(ctx context.Context, _ slog.Level) bool {
	return q.h.Enabled(ctx, slog.LevelDebug)
}

func (q quiet) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return q.h.Handle(ctx, r)
}

func (q quiet) WithAttrs(a []slog.Attr) slog.Handler { return quiet{q.h.WithAttrs(a)} }
func (q quiet) WithGroup(n string) slog.Handler      { return quiet{q.h.WithGroup(n)} }
