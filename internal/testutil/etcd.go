package testutil

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/etcdhttp"
)

// EtcdCluster is an etcd cluster on loopback started by a test from the
// etcd binary (Debian's etcd-server), stopped when the test ends.
type EtcdCluster struct {
	t         testing.TB
	bin       string
	tls       *tls.Config // for https:// endpoints
	Endpoints []string
	members   []*etcdMember
}

type etcdMember struct {
	args []string
	cmd  *exec.Cmd
	log  *os.File
	dir  string
}

// StartEtcd starts an n-member etcd cluster and waits until it has a
// leader. Without the etcd binary the test is skipped, or fails with
// CI=true.
func StartEtcd(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	return startEtcd(t, n, nil)
}

// StartEtcdTLS is StartEtcd with https:// client URLs served with f's
// server certificate, and client certificates signed by f's CA required.
func StartEtcdTLS(t testing.TB, n int, f TLSFiles) *EtcdCluster {
	t.Helper()
	return startEtcd(t, n, &f)
}

func startEtcd(t testing.TB, n int, tf *TLSFiles) *EtcdCluster {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if InCI() {
			t.Fatalf("etcd not found (Debian package etcd-server; scripts/install-deps.sh installs it): %v", err)
		}
		t.Skip("etcd not found; install etcd-server (scripts/install-deps.sh)")
	}
	c := &EtcdCluster{t: t, bin: bin}
	scheme := "http://"
	if tf != nil {
		scheme = "https://"
		c.tls = tf.ClientConfig(t)
	}
	var peers []string
	type ports struct{ client, peer string }
	var ps []ports
	for i := range n {
		p := ports{client: freeAddr(t), peer: freeAddr(t)}
		ps = append(ps, p)
		peers = append(peers, fmt.Sprintf("m%d=http://%s", i, p.peer))
		c.Endpoints = append(c.Endpoints, scheme+p.client)
	}
	base := t.TempDir()
	for i, p := range ps {
		dir := filepath.Join(base, fmt.Sprintf("m%d", i))
		m := &etcdMember{dir: dir, args: []string{
			"--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", scheme + p.client, "--advertise-client-urls", scheme + p.client,
			"--listen-peer-urls", "http://" + p.peer, "--initial-advertise-peer-urls", "http://" + p.peer,
			"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(base),
			"--heartbeat-interval", "50", "--election-timeout", "500",
		}}
		if tf != nil {
			m.args = append(m.args, "--cert-file", tf.ServerCert, "--key-file", tf.ServerKey,
				"--trusted-ca-file", tf.CA, "--client-cert-auth")
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.members = append(c.members, m)
	}
	t.Cleanup(func() {
		for i := range c.members {
			c.kill(i)
		}
	})
	for i := range c.members {
		c.Start(i)
	}
	c.WaitHealthy()
	return c
}

// Start starts member i (again).
func (c *EtcdCluster) Start(i int) {
	c.t.Helper()
	m := c.members[i]
	if m.cmd != nil {
		return
	}
	log, err := os.OpenFile(filepath.Join(m.dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, m.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Debian's etcd 3.4 on amd64 needs no ETCD_UNSUPPORTED_ARCH.
	if err := cmd.Start(); err != nil {
		log.Close()
		c.t.Fatalf("start etcd member %d: %v", i, err)
	}
	m.cmd, m.log = cmd, log
}

// Stop stops member i (SIGKILL: a crash, not a leave).
func (c *EtcdCluster) Stop(i int) { c.kill(i) }

// Pause stops member i with SIGSTOP: its connections stay open and
// silent, as with a hung server. Resume continues it; the cleanup's
// SIGKILL ends a paused member too.
func (c *EtcdCluster) Pause(i int) { c.signal(i, syscall.SIGSTOP) }

// Resume continues member i after Pause.
func (c *EtcdCluster) Resume(i int) { c.signal(i, syscall.SIGCONT) }

func (c *EtcdCluster) signal(i int, sig syscall.Signal) {
	c.t.Helper()
	m := c.members[i]
	if m.cmd == nil {
		c.t.Fatalf("etcd member %d is not running", i)
	}
	if err := syscall.Kill(-m.cmd.Process.Pid, sig); err != nil {
		c.t.Fatalf("signal etcd member %d: %v", i, err)
	}
}

func (c *EtcdCluster) kill(i int) {
	m := c.members[i]
	if m.cmd == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	_ = m.cmd.Wait()
	m.log.Close()
	m.cmd = nil
}

// WaitHealthy waits until a write through every running member succeeds.
func (c *EtcdCluster) WaitHealthy() {
	c.t.Helper()
	cli := c.Client()
	WaitFor(c.t, 30*time.Second, "etcd cluster has a leader", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Put(ctx, etcdhttp.PutRequest{Key: []byte("/testutil/health"), Value: []byte(time.Now().String())})
		if err != nil {
			return false, err.Error() + "; " + c.logTail()
		}
		return true, ""
	})
}

// Client returns a client of the cluster (etcd's HTTP/JSON gateway),
// closed when the test ends.
func (c *EtcdCluster) Client() *etcdhttp.Client {
	c.t.Helper()
	cli, err := etcdhttp.New(etcdhttp.Config{Endpoints: c.Endpoints, DialTimeout: 2 * time.Second, TLS: c.tls})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

func (c *EtcdCluster) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.members[0].dir, "etcd.log"))
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}
