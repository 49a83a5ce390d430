package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/testutil"
)

// serversUnder lists live server processes whose --defaults-file lies under dir.
func serversUnder(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte("--defaults-file="+dir)) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestDeployInterrupted sends SIGINT (what Ctrl-C sends) to a real dbpilot
// process while it deploys: no server may survive and nothing may be left.
func TestDeployInterrupted(t *testing.T) {
	testutil.RequireServer(t)
	home := testutil.Home(t)
	bin := filepath.Join(t.TempDir(), "dbpilot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "sandbox", "deploy", "intr", "--topology", "replication", "--nodes", "3", "--port-base", "19800")
	cmd.Env = append(os.Environ(), "DBPILOT_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for _, pid := range serversUnder(home) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// Interrupt once servers are running (or, failing that, after 20 s:
	// on a loaded machine the first server may take a while to start).
	deadline := time.Now().Add(20 * time.Second)
	for len(serversUnder(home)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	sawServers := len(serversUnder(home)) > 0
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		if err == nil {
			t.Logf("deploy finished before the interrupt took effect:\n%s", stderr.String())
			exec.Command(bin, "sandbox", "destroy", "intr").Run()
			if sawServers {
				t.Fatal("deploy ignored SIGINT")
			}
			return
		}
	case <-time.After(60 * time.Second):
		t.Fatal("dbpilot did not exit within 60 s of SIGINT")
	}
	if !sawServers {
		t.Fatal("no server process appeared within 20 s of deploy")
	}
	// The servers it killed may take a moment to be reaped.
	testutil.WaitFor(t, 5*time.Second, "no server left after the interrupted deploy", func() (bool, string) {
		p := serversUnder(home)
		return len(p) == 0, fmt.Sprintf("%v\n%s", p, stderr.String())
	})
	if _, err := os.Stat(filepath.Join(home, "sandboxes", "intr")); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left after an interrupted deploy (%v)", err)
	}
	if !strings.Contains(stderr.String(), "removing sandbox intr") {
		t.Errorf("no clean-up message:\n%s", stderr.String())
	}
}
