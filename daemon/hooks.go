package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// HookResult is the outcome of one hook command.
type HookResult struct {
	Command  string
	ExitCode int
	TimedOut bool
	Output   string // combined output, truncated
	Err      error
	Took     time.Duration
}

// hookStarted, when set, is told the process group of each hook started
// and ended (started=false): serve records them so that a serve killed
// mid-hook has its next start kill what is left (killLeftoverHooks).
type hookTracker func(pgid int, started bool)

// runHook runs one command through /bin/sh -c in its own process group, with
// env added to the environment, and kills the whole group at timeout.
func runHook(ctx context.Context, command string, env map[string]string, timeout time.Duration) HookResult {
	return runHookTracked(ctx, command, env, timeout, nil)
}

// runHookTracked is runHook telling track of the hook's process group. The
// shell gets SIGKILL if serve dies (Linux: the parent-death signal, so the
// thread that started it is kept for the hook's life).
func runHookTracked(ctx context.Context, command string, env map[string]string, timeout time.Duration, track hookTracker) HookResult {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	res := HookResult{Command: command}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = hookProcAttr()
	if err := cmd.Start(); err != nil {
		res.Err, res.ExitCode = err, -1
		return res
	}
	if track != nil {
		track(cmd.Process.Pid, true)
		defer track(cmd.Process.Pid, false)
	}
	if env["DBPILOT_PHASE"] == "pre-failover" {
		go func() { time.Sleep(300 * time.Millisecond); faultPoint("in-pre-failover-hook") }()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		res.TimedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		res.Err = ctx.Err()
	}
	res.Took = time.Since(start)
	s := out.String()
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	res.Output = strings.TrimSpace(s)
	var ee *exec.ExitError
	switch {
	case res.TimedOut:
		res.ExitCode = -1
		res.Err = fmt.Errorf("killed after the %s timeout", timeout)
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		res.Err = fmt.Errorf("exit status %d", res.ExitCode)
	case err != nil:
		res.ExitCode = -1
		if res.Err == nil {
			res.Err = err
		}
	}
	return res
}
