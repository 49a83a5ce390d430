package simulator

import (
	"bufio"
	"crypto/rand"
	"net"
	"strings"
	"time"
)

// conn is one client session.
type conn struct {
	in   *Instance
	nc   net.Conn
	id   uint32
	user string
	// done is closed when the instance dies, to end a SLEEP at once.
	done chan struct{}
	// since is when the session started (processlist Time).
	since time.Time
}

// accept serves ln until it is closed.
func (in *Instance) accept(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		c := &conn{in: in, nc: nc, id: in.fleet.connID.Add(1), done: make(chan struct{}), since: time.Now()}
		in.mu.Lock()
		if in.ln != ln || !in.alive.Load() {
			in.mu.Unlock()
			nc.Close()
			continue
		}
		in.conns[c] = struct{}{}
		in.mu.Unlock()
		go c.run()
	}
}

// shutdown closes the listener and resets every connection.
func (in *Instance) shutdown() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ln != nil {
		in.ln.Close()
		in.ln = nil
	}
	for c := range in.conns {
		if tc, ok := c.nc.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with a reset, as a crashed server's kernel does
		}
		c.nc.Close()
		close(c.done)
		delete(in.conns, c)
	}
}

// drop forgets the connection once its session ended.
func (c *conn) drop() {
	c.in.mu.Lock()
	if _, ok := c.in.conns[c]; ok {
		delete(c.in.conns, c)
		close(c.done)
	}
	c.in.mu.Unlock()
	c.nc.Close()
}

// run speaks the protocol until the client quits or the instance dies.
func (c *conn) run() {
	defer c.drop()
	var scramble [20]byte
	_, _ = rand.Read(scramble[:])
	for i := range scramble {
		scramble[i] = scramble[i]&0x7f | 1 // printable-ish, never 0
	}
	if _, err := c.nc.Write(handshake(c.id, scramble)); err != nil {
		return
	}
	pr := &packetReader{r: bufio.NewReaderSize(c.nc, 1024)}
	p, err := pr.next()
	if err != nil {
		return
	}
	hello, err := parseHello(p)
	if err != nil {
		return
	}
	c.user = hello.user
	r := newResponse(pr.seq)
	r.ok(0)
	if !c.flush(r) {
		return
	}
	for {
		p, err := pr.next()
		if err != nil || len(p) == 0 {
			return
		}
		r := newResponse(pr.seq)
		switch p[0] {
		case comQuit:
			r.release()
			return
		case comPing, comInitDB, comResetConn:
			r.ok(0)
		case comSetOption:
			r.eof()
		case comQuery:
			// Several statements (CLIENT_MULTI_STATEMENTS): one result
			// each, until one fails.
			stmts := splitStatements(string(p[1:]))
			alive := true
			for i, q := range stmts {
				r.more = i < len(stmts)-1
				if alive = c.query(q, r); !alive || r.failed {
					break
				}
			}
			if !alive {
				r.release()
				return
			}
		default:
			r.err(&sqlError{1047, "08S01", "Unknown command"})
		}
		if !c.flush(r) {
			return
		}
	}
}

func (c *conn) flush(r *response) bool {
	_, err := c.nc.Write(r.buf)
	r.release()
	return err == nil
}

// splitStatements splits a query into its statements at the semicolons
// outside quotes; a trailing one ends the last statement.
func splitStatements(q string) []string {
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == ';':
			if s := strings.TrimSpace(q[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(q[start:]); s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}
