//go:build linux

package mysql

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A blocking connection reads and writes its socket with blocking system
// calls on a thread of its own, as a C client does, instead of through Go's
// network poller. For a request-response loop (a benchmark's connection
// waiting for each answer) this saves the poller's round: the would-block
// read, the epoll wait and the goroutine wake-up, about 40% of the client's
// CPU per statement measured with bench/bench.sh. The price is an OS thread
// per connection blocked in a read, so it is for a bounded number of busy
// connections (Options.BlockingIO), not for a pool of idle ones.
//
// Deadlines become the socket's SO_RCVTIMEO and SO_SNDTIMEO: a read or
// write that waits longer fails with os.ErrDeadlineExceeded. The driver
// sets a deadline of now+timeout before each packet; the socket option is
// only set again when that span changes by more than an eighth, so the
// common case costs no extra system call. Close shuts the socket down
// first, which wakes a read blocked in another goroutine (the driver's
// cancel path), and closes the descriptor once no read or write is using
// it, so that a descriptor number reused by the process is never read.

// BlockingIOSupported reports whether blocking connections exist on this
// platform.
const BlockingIOSupported = true

// DialBlocking connects like dial (or a net.Dialer when nil) and returns
// the connection as a blocking one.
func DialBlocking(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var (
			nc  net.Conn
			err error
		)
		if dial != nil {
			nc, err = dial(ctx, network, addr)
		} else {
			var d net.Dialer
			nc, err = d.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		bc, err := newBlockingConn(nc)
		if err != nil {
			// Not a socket of our own (a test's proxy pipe, say): the
			// connection as it is works, only slower.
			return nc, nil //nolint:nilerr // fallback by design
		}
		return bc, nil
	}
}

// blockingConn is a socket read and written with blocking system calls.
type blockingConn struct {
	fd          int
	local       net.Addr
	remote      net.Addr
	refs        atomic.Int32 // 1 for the open connection, +1 per read or write in progress
	closed      atomic.Bool
	recvTimeout atomic.Int64 // SO_RCVTIMEO set, in ns (0: none)
	sendTimeout atomic.Int64 // SO_SNDTIMEO set, in ns (0: none)
}

// newBlockingConn takes nc's socket over: it duplicates the descriptor,
// closes nc and puts the duplicate in blocking mode.
func newBlockingConn(nc net.Conn) (*blockingConn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("mysql: %T has no socket", nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) {
		fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, fmt.Errorf("mysql: duplicate socket: %w", dupErr)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("mysql: blocking socket: %w", err)
	}
	c := &blockingConn{fd: fd, local: nc.LocalAddr(), remote: nc.RemoteAddr()}
	c.refs.Store(1)
	_ = nc.Close() // the duplicate keeps the socket open
	return c, nil
}

// acquire takes a reference for one read or write; false once closed.
func (c *blockingConn) acquire() bool {
	if c.closed.Load() {
		return false
	}
	for {
		n := c.refs.Load()
		if n <= 0 {
			return false
		}
		if c.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the descriptor.
func (c *blockingConn) release() {
	if c.refs.Add(-1) == 0 {
		_ = unix.Close(c.fd)
	}
}

// Read reads what the socket has, waiting for at least one byte.
func (c *blockingConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if !c.acquire() {
		return 0, net.ErrClosed
	}
	defer c.release()
	for {
		n, err := unix.Read(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			if c.closed.Load() {
				return 0, net.ErrClosed
			}
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
		case n == 0:
			if c.closed.Load() {
				return 0, net.ErrClosed
			}
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of b.
func (c *blockingConn) Write(b []byte) (int, error) {
	if !c.acquire() {
		return 0, net.ErrClosed
	}
	defer c.release()
	done := 0
	for done < len(b) {
		n, err := unix.Write(c.fd, b[done:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return done, os.ErrDeadlineExceeded
		case err != nil:
			if c.closed.Load() {
				return done, net.ErrClosed
			}
			return done, &net.OpError{Op: "write", Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
		}
		done += n
	}
	return done, nil
}

// Close shuts the socket down (waking a blocked read) and closes it once
// no read or write uses it.
func (c *blockingConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	c.release()
	return nil
}

func (c *blockingConn) LocalAddr() net.Addr  { return c.local }
func (c *blockingConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both timeouts.
func (c *blockingConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline turns t into SO_RCVTIMEO (see the file's comment).
func (c *blockingConn) SetReadDeadline(t time.Time) error {
	return c.setTimeout(&c.recvTimeout, unix.SO_RCVTIMEO, t)
}

// SetWriteDeadline turns t into SO_SNDTIMEO.
func (c *blockingConn) SetWriteDeadline(t time.Time) error {
	return c.setTimeout(&c.sendTimeout, unix.SO_SNDTIMEO, t)
}

func (c *blockingConn) setTimeout(cur *atomic.Int64, opt int, t time.Time) error {
	var d time.Duration
	if !t.IsZero() {
		d = time.Until(t)
		if d < time.Microsecond {
			d = time.Microsecond // passed: fail the next wait at once
		}
	}
	old := time.Duration(cur.Load())
	if !timeoutChanged(old, d) {
		return nil
	}
	if !c.acquire() {
		return net.ErrClosed
	}
	defer c.release()
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, opt, &tv); err != nil {
		return fmt.Errorf("mysql: socket timeout: %w", err)
	}
	cur.Store(int64(d))
	return nil
}

// timeoutChanged reports whether a socket timeout of old must be set to
// d: when one of them is none (0) and the other not, or they differ by
// more than an eighth of old.
func timeoutChanged(old, d time.Duration) bool {
	if (old == 0) != (d == 0) {
		return true
	}
	diff := old - d
	if diff < 0 {
		diff = -diff
	}
	return diff > old/8
}
