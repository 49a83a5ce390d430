package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBridgeCutAndRestore carries a real TCP echo server through both
// halves of the bridge (in one namespace: the inside half listens on
// another port) and cuts and restores the path with the cut file.
func TestBridgeCutAndRestore(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	port := echo.Addr().(*net.TCPAddr).Port

	var mu sync.Mutex
	var logged []string
	logf := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, a...))
	}
	dir := t.TempDir()
	out, err := unixToTCP(fwdSocket(dir, port), tcpAddr(port), cutPath(dir, port), logf)
	if err != nil {
		t.Fatal(err)
	}
	in, err := tcpToUnix("127.0.0.1:0", fwdSocket(dir, port), "", logf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); out.serve() }()
	go func() { defer wg.Done(); in.serve() }()
	go func() { defer wg.Done(); out.watch(done, 10*time.Millisecond) }()
	t.Cleanup(func() {
		close(done)
		out.close()
		in.close()
		wg.Wait()
	})
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", in.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	c1 := dial()
	if err := echoes(c1, "before the cut"); err != nil {
		t.Fatalf("through the bridge: %v", err)
	}

	if err := os.WriteFile(cutPath(dir, port), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The open connection is closed, without a byte.
	_ = c1.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c1.Read(make([]byte, 16)); err == nil || isTimeout(err) {
		t.Errorf("open connection after the cut: read %d byte(s), %v; want it closed", n, err)
	}
	// A new one is accepted and closed before anything comes back.
	if err := echoes(dial(), "during the cut"); err == nil || isTimeout(err) {
		t.Errorf("new connection during the cut: %v; want it closed", err)
	}

	if err := os.Remove(cutPath(dir, port)); err != nil {
		t.Fatal(err)
	}
	// Restored once the watcher has seen the file go.
	var last error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if last = echoes(dial(), "after the restore"); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("after the restore: %v", last)
	}

	mu.Lock()
	defer mu.Unlock()
	text := strings.Join(logged, "\n")
	for _, want := range []string{"cut: 1 open connection(s) closed", "restored: "} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
}

// echoes writes msg on c and reads it back, within 5 s.
func echoes(c net.Conn, msg string) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return fmt.Errorf("read %q, want %q", buf, msg)
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
