package testutil

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TSDBServer is a real Prometheus or VictoriaMetrics server started by a
// test on a free loopback port, with its data in the test's temporary
// directory. It is killed (with its process group) when the test ends.
type TSDBServer struct {
	// URL is the server's base, http://127.0.0.1:PORT; WriteURL its
	// remote-write endpoint.
	URL, WriteURL string
	Name          string

	t      testing.TB
	bin    string
	args   []string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
}

// StartPrometheus starts the Debian package prometheus with its
// remote-write receiver on (--web.enable-remote-write-receiver). It skips
// the test when the binary is missing, and fails it with CI=true.
func StartPrometheus(t testing.TB) *TSDBServer {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	writeFile(t, cfg, "global: {scrape_interval: 15s}\n")
	addr := freeAddr(t)
	return startTSDB(t, "prometheus", "/api/v1/write", addr,
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver")
}

// StartVictoriaMetrics starts the Debian package victoria-metrics (single
// node), answering queries without its default 30 s latency offset and
// without a result cache, so that what was written is visible at once.
func StartVictoriaMetrics(t testing.TB) *TSDBServer {
	t.Helper()
	addr := freeAddr(t)
	return startTSDB(t, "victoria-metrics", "/api/v1/write", addr,
		"-storageDataPath="+filepath.Join(t.TempDir(), "data"), "-httpListenAddr="+addr,
		"-search.latencyOffset=0s", "-search.disableCache", "-retentionPeriod=1y")
}

func startTSDB(t testing.TB, name, writePath, addr string, args ...string) *TSDBServer {
	t.Helper()
	if testing.Short() {
		t.Skipf("integration test: needs a real %s (skipped with -short)", name)
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		if InCI() {
			t.Fatalf("CI=true and the %s binary is not installed (make test-deps installs it)", name)
		}
		t.Skipf("%s not installed (make test-deps installs it)", name)
	}
	s := &TSDBServer{URL: "http://" + addr, WriteURL: "http://" + addr + writePath, Name: name, t: t, bin: bin, args: args, log: &syncBuffer{}}
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("%s log (last 4 KB):\n%s", name, s.log.tail(4096))
		}
	})
	s.Start()
	return s
}

// Start starts the server (again, after Stop: same port, same data) and
// waits until it answers.
func (s *TSDBServer) Start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, s.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.Name, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	go func() { cmd.Wait(); close(exited) }()
	waitReady := func() (bool, string) {
		select {
		case <-exited:
			s.t.Fatalf("%s exited at start:\n%s", s.Name, s.log.tail(4096))
		default:
		}
		resp, err := http.Get(s.URL + "/api/v1/query?query=1")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}
	WaitFor(s.t, 60*time.Second, s.Name+" answers queries", waitReady)
}

// Stop stops the server gracefully (SIGTERM, so that it keeps what it
// received) and waits for it to exit.
func (s *TSDBServer) Stop() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.kill()
		s.t.Fatalf("%s did not stop within 30s of SIGTERM", s.Name)
	}
	s.cmd = nil
}

func (s *TSDBServer) kill() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// Flush makes what the server received searchable at once: VictoriaMetrics
// shows new series only after ~10 s otherwise (/internal/force_flush);
// Prometheus needs nothing.
func (s *TSDBServer) Flush() {
	s.t.Helper()
	if s.Name != "victoria-metrics" {
		return
	}
	resp, err := http.Get(s.URL + "/internal/force_flush")
	if err != nil {
		s.t.Fatalf("%s: force flush: %v", s.Name, err)
	}
	resp.Body.Close()
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testutil: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a process' stdout and stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	if len(s) > n {
		s = fmt.Sprintf("...%s", s[len(s)-n:])
	}
	return s
}
