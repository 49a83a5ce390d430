package mysql

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DialFunc opens a network connection (net.Dialer.DialContext's shape);
// an alias, so that it fits the dialer types of the client libraries.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// DialBounded returns a dialer for clients that have no connect timeout of
// their own covering the handshake (go-mysql's client, under the binlog
// syncers): each connection dial opens must connect within timeout, and
// the server's greeting and the authentication exchange must end within
// the same timeout from the dial's start. dial nil is a net.Dialer; timeout
// 0 is DefaultConnectTimeout.
//
// The handshake is over when the client sends its first command: the
// first packet it writes with sequence number 0 after the server spoke
// (handshake responses carry 1, 3, ...). From then on the connection is
// the client's, with the deadlines the client set on it.
func DialBounded(dial DialFunc, timeout time.Duration) DialFunc {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		deadline := time.Now().Add(timeout)
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		c, err := dial(dctx, network, addr)
		if err != nil {
			if ctx.Err() == nil && (dctx.Err() != nil || isTimeout(err)) {
				return nil, &ConnectTimeoutError{After: timeout}
			}
			return nil, err
		}
		hc := &handshakeConn{Conn: c, timeout: timeout, deadline: deadline}
		if err := c.SetDeadline(deadline); err != nil {
			_ = c.Close()
			return nil, err
		}
		return hc, nil
	}
}

// handshakeConn holds a deadline on its connection until the handshake is
// over (see DialBounded); deadlines the client sets meanwhile are kept to
// that bound and restored after.
type handshakeConn struct {
	net.Conn
	timeout  time.Duration
	deadline time.Time
	over     atomic.Bool

	mu     sync.Mutex // guards the fields below and the switch to over
	spoke  bool       // the server sent something
	rd, wd time.Time  // the client's own deadlines
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.over.Load() {
		return n, err
	}
	if n > 0 {
		c.mu.Lock()
		c.spoke = true
		c.mu.Unlock()
	}
	return n, c.handshakeErr(err)
}

func (c *handshakeConn) Write(b []byte) (int, error) {
	if !c.over.Load() {
		c.mu.Lock()
		if !c.over.Load() && c.spoke && len(b) >= 4 && b[3] == 0 {
			// The first command: the handshake is over.
			if err := c.Conn.SetReadDeadline(c.rd); err != nil {
				c.mu.Unlock()
				return 0, err
			}
			if err := c.Conn.SetWriteDeadline(c.wd); err != nil {
				c.mu.Unlock()
				return 0, err
			}
			c.over.Store(true)
		}
		c.mu.Unlock()
	}
	n, err := c.Conn.Write(b)
	if c.over.Load() {
		return n, err
	}
	return n, c.handshakeErr(err)
}

// handshakeErr names the connect timeout when err is its deadline's.
func (c *handshakeConn) handshakeErr(err error) error {
	if err != nil && isTimeout(err) && !time.Now().Before(c.deadline) {
		return &ConnectTimeoutError{After: c.timeout}
	}
	return err
}

func (c *handshakeConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(&c.rd, t, c.Conn.SetReadDeadline)
}

func (c *handshakeConn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(&c.wd, t, c.Conn.SetWriteDeadline)
}

func (c *handshakeConn) setDeadline(own *time.Time, t time.Time, set func(time.Time) error) error {
	if c.over.Load() {
		return set(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over.Load() {
		return set(t)
	}
	*own = t
	if t.IsZero() || t.After(c.deadline) {
		t = c.deadline
	}
	return set(t)
}
