package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// ProcessOptions tunes how server processes are started.
type ProcessOptions struct {
	// KillWithParent makes the kernel kill the server when the process that
	// started it exits (Linux PR_SET_PDEATHSIG). Tests use it so that no
	// mariadbd outlives a crashed test binary.
	KillWithParent bool
	// StartTimeout bounds the wait for a node to accept connections
	// (Galera joiners wait at least 3 minutes: state transfer comes first).
	StartTimeout time.Duration
	// Log receives progress lines of multi-step starts (a Galera bootstrap,
	// joins); nil discards them.
	Log func(format string, args ...any)
}

func (o ProcessOptions) startTimeout() time.Duration {
	if o.StartTimeout <= 0 {
		return 60 * time.Second
	}
	return o.StartTimeout
}

// startNode starts the node's server in its own session (so a Ctrl-C at the
// terminal reaches dbpilot, which then cleans up, and not the server), with
// output going to its error log.
func startNode(s Server, n *Node, po ProcessOptions) (*os.Process, error) {
	return startNodeWith(s, n, po, nil, nil)
}

// startNodeWith is startNode with extra server arguments (after
// --defaults-file) and environment variables (KEY=VALUE, overriding ours).
func startNodeWith(s Server, n *Node, po ProcessOptions, args, env []string) (*os.Process, error) {
	if pid, ok := runningPid(n); ok {
		return nil, dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: %s is already running (pid %d)", n.Name, pid)
	}
	// A server just killed may hold its port for a moment while its threads
	// exit: wait a little before calling the port taken.
	for _, p := range n.Ports() {
		if err := waitPortFree(p, 5*time.Second); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(n.ErrorLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open error log of %s: %w", n.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(s.Mysqld, append([]string{"--defaults-file=" + n.Config}, args...)...)
	cmd.Dir = n.Dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if po.KillWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: start %s (%s): %w", n.Name, s.Mysqld, err)
	}
	// Reap the child if it exits while we are alive; otherwise it is
	// re-parented when dbpilot exits and keeps running.
	go func() { _ = cmd.Wait() }()
	return cmd.Process, nil
}

// waitReady waits until the node accepts a connection with creds (through
// its socket), its process dies, or the timeout passes. Errors quote the tail
// of the node's error log.
func waitReady(ctx context.Context, n *Node, proc *os.Process, creds mysql.Credentials, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sandbox: wait for %s: %w", n.Name, err)
		}
		if proc != nil && !processAlive(proc.Pid) {
			return dbpilot.Errorf(dbpilot.EUNAVAIL, "sandbox: %s (port %d) exited during start-up; error log %s ends with:\n%s", n.Name, n.Port, n.ErrorLog, logTail(n.ErrorLog, 12))
		}
		if fileExists(n.Socket) {
			db, err := mysql.Open(ctx, n.Key(), mysql.Options{Credentials: creds, Socket: n.Socket, ConnectTimeout: time.Second})
			if err == nil {
				db.Close()
				return nil
			}
			lastErr = err
			if dbpilot.ErrorCode(err) == dbpilot.EAUTH {
				return err
			}
		}
		if time.Now().After(deadline) {
			msg := ""
			if lastErr != nil {
				msg = " (last error: " + lastErr.Error() + ")"
			}
			return dbpilot.Errorf(dbpilot.EUNAVAIL, "sandbox: %s (port %d) did not accept connections within %s%s; error log %s ends with:\n%s", n.Name, n.Port, timeout, msg, n.ErrorLog, logTail(n.ErrorLog, 12))
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logTail returns the last n lines of a file, indented.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (cannot read: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// runningPid reads the node's pid file and reports whether that process is
// alive and is this node's server (its command line names the node's config).
func runningPid(n *Node) (int, bool) {
	b, err := os.ReadFile(n.PidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	if !processAlive(pid) || !isNodeProcess(pid, n) {
		return 0, false
	}
	return pid, true
}

// isNodeProcess checks /proc/PID/cmdline for the node's config file, so that a
// reused pid is never signalled.
func isNodeProcess(pid int, n *Node) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		// No /proc (not Linux): trust the pid file.
		return !fileExists("/proc/self")
	}
	return bytes.Contains(b, []byte(n.Config))
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return !fileExists("/proc/self")
	}
	// Field 3 is the state; Z is a zombie. A zombie thread-group leader
	// whose other threads are still exiting still holds its files (the
	// listening socket): it counts as alive until its last thread is gone.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		return err == nil && len(tasks) > 1
	}
	return true
}

// findNodeProcesses finds server processes started with the node's config,
// by scanning /proc: it catches a server whose pid file is missing (killed
// during start-up).
func findNodeProcesses(n *Node) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("--defaults-file="+n.Config+"\x00")) || bytes.HasSuffix(b, []byte("--defaults-file="+n.Config)) {
			if processAlive(pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// stopNode stops the node's server: SIGTERM (a clean shutdown), then SIGKILL
// after timeout. It returns once no process of the node is alive.
func stopNode(n *Node, timeout time.Duration) error {
	pids := findNodeProcesses(n)
	if pid, ok := runningPid(n); ok && !containsInt(pids, pid) {
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return nil
	}
	defer killSessions(pids)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !anyAlive(pids) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !anyAlive(pids) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("sandbox: %s (pids %v) did not stop", n.Name, pids)
}

// killNode kills the node's server at once with SIGKILL (a crash, for drills and tests).
func killNode(n *Node) error {
	pids := findNodeProcesses(n)
	defer killSessions(pids)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !anyAlive(pids) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("sandbox: %s (pids %v) did not die", n.Name, pids)
}

// killSessions kills what is left of the sessions the servers led: a server
// is started in its own session (startNode), and helpers it ran — a Galera
// state transfer's script, socat, rsync daemon, mariabackup — stay in it and
// can outlive it, holding the node's ports.
func killSessions(leaders []int) {
	if len(leaders) == 0 {
		return
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	var left []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || containsInt(leaders, pid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// After "(comm)": state ppid pgrp session ...
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+1:])
		if len(f) < 4 {
			continue
		}
		if sid, err := strconv.Atoi(f[3]); err == nil && containsInt(leaders, sid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			left = append(left, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for anyAlive(left) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func anyAlive(pids []int) bool {
	for _, p := range pids {
		if processAlive(p) {
			return true
		}
	}
	return false
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkPortFree reports an error when something listens on 127.0.0.1:port.
func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return dbpilot.Errorf(dbpilot.ECONFLICT, "sandbox: port %d on 127.0.0.1 is in use; choose another --port-base", port)
	}
	l.Close()
	return nil
}

// waitPortFree retries checkPortFree until it succeeds or timeout passes.
func waitPortFree(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := checkPortFree(port)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
