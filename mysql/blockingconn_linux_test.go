//go:build linux

package mysql

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// loopback returns a blocking connection and the server side of a
// loopback TCP connection.
func loopback(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := DialBlocking(nil)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	if _, ok := c.(*blockingConn); !ok {
		t.Fatalf("DialBlocking returned %T, want *blockingConn", c)
	}
	return c, srv
}

func TestBlockingConnReadWrite(t *testing.T) {
	c, srv := loopback(t)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(srv, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("server read %q, %v", buf, err)
	}
	if _, err := srv.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
	// A large write is written whole.
	big := make([]byte, 4<<20)
	done := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.Discard, srv, int64(len(big)))
		done <- err
	}()
	if n, err := c.Write(big); err != nil || n != len(big) {
		t.Fatalf("write %d of %d: %v", n, len(big), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The peer's close is EOF.
	srv.Close()
	if _, err := c.Read(buf); !errors.Is(err, io.EOF) {
		t.Errorf("read after the peer closed: %v, want EOF", err)
	}
}

func TestBlockingConnDeadline(t *testing.T) {
	c, _ := loopback(t)
	if err := c.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("%v is not a timeout net.Error", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("returned after %v, before the deadline", waited)
	}
	// No deadline: the option is cleared.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := c.(*blockingConn).recvTimeout.Load(); got != 0 {
		t.Errorf("SO_RCVTIMEO kept at %v after clearing the deadline", time.Duration(got))
	}
}

// Close from another goroutine wakes a read blocked on the socket, and
// later reads and writes fail with net.ErrClosed.
func TestBlockingConnCloseWakesRead(t *testing.T) {
	c, _ := loopback(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read block
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked read returned %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the blocked read")
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v, want net.ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestTimeoutChanged(t *testing.T) {
	for _, tc := range []struct {
		old, d time.Duration
		want   bool
	}{
		{0, 0, false},
		{0, time.Second, true},
		{time.Second, 0, true},
		{time.Second, time.Second - time.Millisecond, false}, // the driver's now+timeout, a little later
		{time.Second, 800 * time.Millisecond, true},
		{time.Second, 2 * time.Second, true},
	} {
		if got := timeoutChanged(tc.old, tc.d); got != tc.want {
			t.Errorf("timeoutChanged(%v, %v) = %v, want %v", tc.old, tc.d, got, tc.want)
		}
	}
}
