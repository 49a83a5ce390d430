//go:build unix

package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// BlackHole returns HOST:PORT on 127.0.0.1 where a TCP connect hangs: a
// socket listening with a backlog of 0 whose accept queue is filled by one
// connection that is never accepted, so that the kernel drops further SYNs
// (net.ipv4.tcp_abort_on_overflow=0, the default). It works offline, on
// loopback. The test fails if a connect there does not hang. Everything is
// closed when the test ends.
func BlackHole(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("testutil: black hole: socket: %v", err)
	}
	f := os.NewFile(uintptr(fd), "blackhole") // closes fd
	t.Cleanup(func() { f.Close() })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("testutil: black hole: bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatalf("testutil: black hole: listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("testutil: black hole: getsockname: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Fill the accept queue (backlog 0 holds one connection), then check
	// that a connect hangs.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return addr
			}
			t.Fatalf("testutil: black hole: connect to %s: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
		if i == 4 {
			t.Fatalf("testutil: black hole: %s still accepts connections after %d (the kernel does not drop SYNs on a full accept queue here)", addr, i+1)
		}
	}
}
