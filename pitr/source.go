package pitr

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot/gtid"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// sourceVersion is the version a replica sees. MariaDB replicas look for
// "MariaDB" to speak MariaDB's GTID protocol; the "5.5.5-" prefix is how
// MariaDB 10+ servers present themselves.
const sourceVersion = "5.5.5-10.11.99-MariaDB-dbpilot-pitr"

// SourceUser is the account a replica uses to connect to the source.
const SourceUser = "dbpilot_pitr"

// Source serves a planned part of an archive to a replica over the MySQL
// replication protocol: it answers the replica IO thread's handshake and
// queries, COM_REGISTER_SLAVE and COM_BINLOG_DUMP, then sends an
// artificial Rotate, each file's Format_description and Gtid_list, and the
// planned transactions after the replica's GTID connect state up to the
// plan's until position (excluded ones as empty transactions), then
// heartbeats until the replica disconnects.
type Source struct {
	scan     *Scan
	plan     *Plan
	ln       net.Listener
	password string
	conf     *server.Server
	serverID uint32
	log      *slog.Logger

	until   map[uint32]uint64
	exclude map[gtid.MariaGTID]bool

	// Sent counts transactions, events and event bytes sent (since the
	// start).
	SentTxns   atomic.Int64
	SentEvents atomic.Int64
	SentBytes  atomic.Int64

	opt SourceOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	errMu  sync.Mutex
	err    error
}

// SourceOptions tune how a Source serves.
type SourceOptions struct {
	// Pace, when above 0, replays at Pace times the recorded pace: each
	// transaction is sent no earlier than the time between its GTID
	// event's timestamp and the first sent one's, divided by Pace, after
	// the first was sent (2: twice as fast as it was written). 0: as fast
	// as the replica reads (restore, and replay's default).
	Pace float64
}

// StartSource listens on listen (HOST:PORT; port 0 picks one) and serves
// plan's transactions of the scanned archive to replicas that log in as
// SourceUser with the generated password.
func StartSource(ctx context.Context, listen string, s *Scan, p *Plan, log *slog.Logger) (*Source, error) {
	return StartSourceWith(ctx, listen, s, p, log, SourceOptions{})
}

// StartSourceWith is StartSource with options.
func StartSourceWith(ctx context.Context, listen string, s *Scan, p *Plan, log *slog.Logger, o SourceOptions) (*Source, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var pw [16]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return nil, fmt.Errorf("pitr: generate the source's password: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("pitr: listen for the target on %s: %w", listen, err)
	}
	src := &Source{
		scan: s, plan: p, ln: ln, password: hex.EncodeToString(pw[:]), log: log,
		conf:    server.NewServer(sourceVersion, gmysql.DEFAULT_COLLATION_ID, gmysql.AUTH_NATIVE_PASSWORD, nil, nil),
		until:   map[uint32]uint64{},
		exclude: map[gtid.MariaGTID]bool{},
		conns:   map[net.Conn]bool{},
		opt:     o,
	}
	src.prepare()
	src.ctx, src.cancel = context.WithCancel(ctx)
	src.wg.Add(1)
	go src.accept()
	return src, nil
}

// prepare fills the until and exclude maps and the server id from the
// plan and the scan.
func (src *Source) prepare() {
	s, p := src.scan, src.plan
	for _, g := range p.Until {
		src.until[g.Domain] = g.Seq
	}
	for _, g := range p.Exclude {
		src.exclude[g] = true
	}
	// The source speaks as the server that wrote the archive.
	for _, f := range s.Files {
		if f.Err == nil && f.ServerID != 0 {
			src.serverID = f.ServerID
		}
	}
}

// ServeRate is how fast the source serves a plan by itself.
type ServeRate struct {
	Txns    int64         `json:"transactions"`
	Events  int64         `json:"events"`
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// EventsPerSec is the events sent per second.
func (r ServeRate) EventsPerSec() float64 { return float64(r.Events) / max(r.Elapsed.Seconds(), 1e-9) }

// TxnsPerSec is the transactions sent per second.
func (r ServeRate) TxnsPerSec() float64 { return float64(r.Txns) / max(r.Elapsed.Seconds(), 1e-9) }

// MeasureServe serves plan's transactions after from, as a dump to a
// replica at from would get them (files, Format_descriptions, events,
// packet framing), to a sink that discards them: the source's own serving
// rate, with no replica to wait for (o.Pace 0: as fast as it can).
func MeasureServe(ctx context.Context, s *Scan, p *Plan, from gtid.MariaList, o SourceOptions) (ServeRate, error) {
	src := &Source{scan: s, plan: p, log: slog.New(slog.DiscardHandler), until: map[uint32]uint64{}, exclude: map[gtid.MariaGTID]bool{}, opt: o}
	src.prepare()
	src.ctx, src.cancel = context.WithCancel(ctx)
	defer src.cancel()
	cw := &countWriter{w: io.Discard}
	d := &dumper{s: src, pw: &packetWriter{w: bufio.NewWriterSize(cw, 256<<10), seq: 1}, from: from,
		alg: src.checksum(), stop: errors.New("until reached")}
	t0 := time.Now()
	if err := d.serve(); err != nil {
		return ServeRate{}, err
	}
	return ServeRate{Txns: src.SentTxns.Load(), Events: src.SentEvents.Load(), Bytes: cw.n, Elapsed: time.Since(t0)}, nil
}

// Addr is the address the source listens on.
func (s *Source) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// Password is the one-time password of SourceUser.
func (s *Source) Password() string { return s.password }

// ServerID is the server_id the source reports.
func (s *Source) ServerID() uint32 { return s.serverID }

// Err is the last error of a replica's session, if any.
func (s *Source) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

func (s *Source) setErr(err error) {
	s.errMu.Lock()
	s.err = err
	s.errMu.Unlock()
}

// Close stops listening, closes every session and waits for them.
func (s *Source) Close() {
	s.cancel()
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Source) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.session(c)
		}()
	}
}

// session is one replica connection.
func (s *Source) session(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(1 << 20)
	}
	h := &handler{src: s, raw: c, vars: map[string]string{}}
	p := server.NewInMemoryProvider()
	p.AddUser(SourceUser, s.password)
	conn, err := s.conf.NewCustomizedConn(c, p, h)
	if err != nil {
		s.log.Debug("pitr source: handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	for s.ctx.Err() == nil && !h.done {
		if err := conn.HandleCommand(); err != nil {
			if !errors.Is(err, io.EOF) && !h.done && s.ctx.Err() == nil {
				s.log.Debug("pitr source: session ended", "err", err)
			}
			return
		}
	}
}

// handler answers one replica session.
type handler struct {
	src  *Source
	raw  net.Conn
	vars map[string]string // user variables the replica set
	done bool
}

var setVar = regexp.MustCompile(`(?is)^\s*SET\s+@([a-z_0-9]+)\s*:?=\s*(.*?)\s*;?\s*$`)

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

func (h *handler) UseDB(string) error { return nil }

func result(names []string, row ...any) (*gmysql.Result, error) {
	var rows [][]any
	if row != nil {
		rows = [][]any{row}
	}
	rs, err := gmysql.BuildSimpleResultset(names, rows, false)
	if err != nil {
		return nil, err
	}
	return gmysql.NewResult(rs), nil
}

func (h *handler) HandleQuery(q string) (*gmysql.Result, error) {
	s := h.src
	s.log.Debug("pitr source: query", "q", q)
	if m := setVar.FindStringSubmatch(q); m != nil {
		h.vars[strings.ToLower(m[1])] = unquote(m[2])
		return nil, nil
	}
	uq := strings.ToUpper(strings.TrimSpace(q))
	switch {
	case strings.HasPrefix(uq, "SET "):
		return nil, nil
	case uq == "SELECT UNIX_TIMESTAMP()":
		return result([]string{"UNIX_TIMESTAMP()"}, strconv.FormatInt(time.Now().Unix(), 10))
	case strings.HasPrefix(uq, "SHOW VARIABLES LIKE 'SERVER_ID'"):
		return result([]string{"Variable_name", "Value"}, "server_id", strconv.FormatUint(uint64(s.serverID), 10))
	case uq == "SELECT @@GLOBAL.SERVER_ID":
		return result([]string{"@@GLOBAL.SERVER_ID"}, strconv.FormatUint(uint64(s.serverID), 10))
	case uq == "SELECT @MASTER_BINLOG_CHECKSUM":
		alg := "NONE"
		if s.checksum() == checksumCRC32 {
			alg = "CRC32"
		}
		return result([]string{"@master_binlog_checksum"}, alg)
	case uq == "SELECT @@GLOBAL.GTID_DOMAIN_ID":
		return result([]string{"@@GLOBAL.gtid_domain_id"}, "0")
	case strings.HasPrefix(uq, "SELECT @@GLOBAL.") || strings.HasPrefix(uq, "SELECT @@"):
		name := strings.TrimSpace(q[strings.Index(q, "@"):])
		return result([]string{name}, "")
	case strings.HasPrefix(uq, "SELECT @"):
		name := strings.TrimSpace(q[strings.Index(q, "@"):])
		return result([]string{name}, h.vars[strings.ToLower(strings.TrimPrefix(name, "@"))])
	case strings.HasPrefix(uq, "SELECT"), strings.HasPrefix(uq, "SHOW"):
		// Nothing else is needed by a replica; answer with an empty set.
		return result([]string{"Value"})
	}
	return nil, nil
}

func (h *handler) HandleFieldList(string, string) ([]*gmysql.Field, error) { return nil, nil }

func (h *handler) HandleStmtPrepare(string) (int, int, any, error) {
	return 0, 0, nil, gmysql.NewError(gmysql.ER_UNKNOWN_ERROR, "prepared statements are not supported")
}

func (h *handler) HandleStmtExecute(any, string, []any) (*gmysql.Result, error) {
	return nil, gmysql.NewError(gmysql.ER_UNKNOWN_ERROR, "prepared statements are not supported")
}

func (h *handler) HandleStmtClose(any) error { return nil }

func (h *handler) HandleOtherCommand(cmd byte, data []byte) error {
	switch cmd {
	case gmysql.COM_REGISTER_SLAVE:
		return nil
	case gmysql.COM_BINLOG_DUMP:
		h.done = true
		err := h.src.dump(h.raw, h.vars)
		if err != nil && h.src.ctx.Err() == nil {
			h.src.setErr(err)
			h.src.log.Debug("pitr source: dump ended", "err", err)
		}
		// The session is over: close it rather than answer.
		h.raw.Close()
		return nil
	}
	return gmysql.NewError(gmysql.ER_UNKNOWN_COM_ERROR, fmt.Sprintf("command %d not supported by the dbpilot PITR source", cmd))
}

func (s *Source) checksum() byte {
	for _, f := range s.scan.Files {
		if f.Err == nil {
			return f.Checksum
		}
	}
	return checksumOff
}

// packetWriter frames binlog events as replication stream packets.
type packetWriter struct {
	w   *bufio.Writer
	seq byte
}

func (pw *packetWriter) event(ev []byte) error {
	// Payload: a 0x00 OK byte then the event, in packets of at most
	// 16 MiB - 1; a payload that fills the last one ends with an empty one.
	total := len(ev) + 1
	lead := true
	for {
		n := min(total, 0xffffff)
		hdr := [4]byte{byte(n), byte(n >> 8), byte(n >> 16), pw.seq}
		pw.seq++
		if _, err := pw.w.Write(hdr[:]); err != nil {
			return err
		}
		body := n
		if lead && n > 0 {
			if err := pw.w.WriteByte(0); err != nil {
				return err
			}
			body--
			lead = false
		}
		if _, err := pw.w.Write(ev[:body]); err != nil {
			return err
		}
		ev = ev[body:]
		total -= n
		if n < 0xffffff {
			return nil
		}
	}
}

// dump streams the planned events to a replica.
func (s *Source) dump(c net.Conn, vars map[string]string) error {
	from, err := gtid.ParseMariaList(vars["slave_connect_state"])
	if err != nil {
		return fmt.Errorf("replica connect state %q: %w", vars["slave_connect_state"], err)
	}
	hb := time.Second
	if ns, err := strconv.ParseInt(vars["master_heartbeat_period"], 10, 64); err == nil && ns > 0 && time.Duration(ns) < hb {
		hb = time.Duration(ns)
	}
	d := &dumper{s: s, pw: &packetWriter{w: bufio.NewWriterSize(c, 256<<10), seq: 1}, from: from,
		alg: s.checksum(), stop: errors.New("until reached")}
	s.log.Debug("pitr source: dump", "from", from.String(), "until", s.plan.Until.String())
	if err := d.serve(); err != nil {
		return err
	}
	d.keepAlive(c, hb)
	return nil
}

// serve sends the planned transactions after the replica's connect state.
func (d *dumper) serve() error {
	s := d.s
	first := d.start()
	// Each file is served as a source serves its binary logs: an
	// artificial Rotate naming it (with the checksum algorithm the replica
	// knows at that point: the announced one before the first file, then
	// the previous file's), then its own Format_description, which tells
	// the replica the file's checksum algorithm and server; the events of
	// a streamed archive's files may come from several servers (a
	// failover), each with its own settings. alg follows the last
	// Format_description sent, for the Rotates and heartbeats.
	if err := d.pw.event(rotateEvent(s.serverID, d.alg, d.file, 4)); err != nil {
		return err
	}
	for fi := first; fi >= 0 && fi < len(s.scan.Files) && len(d.left) > 0; fi++ {
		f := s.scan.Archive.Files[fi]
		if fi != first {
			if err := d.pw.event(rotateEvent(s.serverID, d.alg, f.Name, 4)); err != nil {
				return err
			}
		}
		if err := d.sendFile(f); err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("serve %s: %w", f.Name, err)
		}
		if err := d.pw.w.Flush(); err != nil {
			return err
		}
	}
	return d.pw.w.Flush()
}

// dumper is one dump to a replica.
type dumper struct {
	s    *Source
	pw   *packetWriter
	from gtid.MariaList  // the replica's connect state
	left map[uint32]bool // domains still to serve
	alg  byte            // checksum algorithm of the last Format_description sent
	file string          // the file being sent
	pos  uint32          // the position in it
	stop error           // sendFile's walk ends with it once every domain is served
	// pace: the wall clock and the event timestamp of the first
	// transaction sent (SourceOptions.Pace).
	paceWall time.Time
	paceTS   uint32
}

// pace waits, with SourceOptions.Pace set, until the transaction that
// begins at event timestamp ts is due; what was written so far is flushed
// first so that the replica is not kept waiting for it.
func (d *dumper) pace(ts uint32) error {
	rate := d.s.opt.Pace
	if rate <= 0 {
		return nil
	}
	if d.paceWall.IsZero() {
		d.paceWall, d.paceTS = time.Now(), ts
		return nil
	}
	if ts <= d.paceTS {
		return nil
	}
	due := d.paceWall.Add(time.Duration(float64(ts-d.paceTS) * float64(time.Second) / rate))
	wait := time.Until(due)
	if wait <= 0 {
		return nil
	}
	if err := d.pw.w.Flush(); err != nil {
		return err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-d.s.ctx.Done():
		return d.s.ctx.Err()
	case <-t.C:
		return nil
	}
}

// start notes the domains still to serve, sets the file to announce, and
// returns the index of the first file holding something to send (-1:
// none).
func (d *dumper) start() int {
	s := d.s
	d.left = map[uint32]bool{}
	for dom, u := range s.until {
		f, _ := d.from.DomainSeq(dom)
		if u > f.Seq {
			d.left[dom] = true
		}
	}
	first := -1
	for _, t := range s.scan.Txns {
		if wants(t.GTID, d.from, s.until) {
			first = t.File
			break
		}
	}
	d.file, d.pos = s.scan.Files[len(s.scan.Files)-1].Name, 4
	if first >= 0 {
		d.file = s.scan.Files[first].Name
	}
	return first
}

// sendFile sends the events of f the replica wants: the file's own
// Format_description and GTID lists, the planned transactions, and an
// empty transaction in place of an excluded one. Every domain served, it
// ends; the error is then nil.
func (d *dumper) sendFile(f File) error {
	s, pw := d.s, d.pw
	d.file, d.pos = f.Name, 4
	sending := false
	_, err := walkFile(s.ctx, f, false, func(w *walker, we walkEvent) error {
		if we.H.LogPos != 0 {
			d.pos = we.H.LogPos
		}
		if we.Txn == nil {
			switch we.H.Type {
			case evFormatDesc:
				d.alg = w.alg
				return pw.event(we.Raw)
			case evGTIDList, evBinlogCheckpt:
				return pw.event(we.Raw)
			}
			return nil
		}
		if we.Begin {
			g := we.Txn.GTID
			sending = false
			if !wants(g, d.from, s.until) {
				return nil
			}
			if err := d.pace(we.H.Timestamp); err != nil {
				return err
			}
			if s.exclude[g] {
				if err := pw.event(emptyGTIDEvent(we.Raw, w.alg)); err != nil {
					return err
				}
				if err := pw.event(commitEvent(we.H.ServerID, we.H.LogPos, we.H.Timestamp, w.alg)); err != nil {
					return err
				}
				s.SentEvents.Add(2)
				return s.sent(g, d.left, d.stop)
			}
			sending = true
		}
		if !sending {
			return nil
		}
		if err := pw.event(we.Raw); err != nil {
			return err
		}
		s.SentEvents.Add(1)
		s.SentBytes.Add(int64(len(we.Raw)))
		if we.End {
			sending = false
			return s.sent(we.Txn.GTID, d.left, d.stop)
		}
		return nil
	})
	if err == d.stop {
		return nil
	}
	return err
}

// keepAlive sends heartbeats, everything being sent, until the replica
// closes its connection c or the restore ends.
func (d *dumper) keepAlive(c net.Conn, hb time.Duration) {
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	t := time.NewTicker(hb)
	defer t.Stop()
	for {
		select {
		case <-d.s.ctx.Done():
			return
		case <-closed:
			return
		case <-t.C:
			if err := d.pw.event(heartbeatEvent(d.s.serverID, d.alg, d.file, d.pos)); err != nil {
				return
			}
			if err := d.pw.w.Flush(); err != nil {
				return
			}
		}
	}
}

// sent records a transaction sent; stop once every domain is served.
func (s *Source) sent(g gtid.MariaGTID, left map[uint32]bool, stop error) error {
	s.SentTxns.Add(1)
	if g.Seq >= s.until[g.Domain] {
		delete(left, g.Domain)
	}
	if len(left) == 0 {
		return stop
	}
	return nil
}
