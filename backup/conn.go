package backup

import (
	"context"
	"net"

	"github.com/dbpilot/dbpilot/mysql"
)

// readBufSize is the socket read size of dump and restore connections. The
// driver reads the socket 4 KiB at a time; a bulk result of hundreds of
// megabytes then costs a system call per 4 KiB, which was the largest CPU
// cost of a dump.
const readBufSize = 128 << 10

// bufferedConn reads the socket in large blocks.
type bufferedConn struct {
	net.Conn
	buf  []byte
	r, w int
}

func (c *bufferedConn) Read(p []byte) (int, error) {
	if c.r == c.w {
		if len(p) >= len(c.buf) {
			return c.Conn.Read(p)
		}
		n, err := c.Conn.Read(c.buf)
		if n <= 0 {
			return 0, err
		}
		c.r, c.w = 0, n
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	return n, nil
}

// withBufferedReads makes the connections of opts read in large blocks
// (TCP only; a Unix socket connection is left as it is).
func withBufferedReads(opts mysql.Options) mysql.Options {
	if opts.Socket != "" {
		return opts
	}
	dial := opts.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	opts.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(1 << 20)
		}
		return &bufferedConn{Conn: c, buf: make([]byte, readBufSize)}, nil
	}
	return opts
}
