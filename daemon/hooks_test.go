package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunHook(t *testing.T) {
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "env")
	res := runHook(ctx, `echo "$DBPILOT_CLUSTER $DBPILOT_NEW_PRIMARY" > `+out, map[string]string{"DBPILOT_CLUSTER": "main", "DBPILOT_NEW_PRIMARY": "h:2"}, 5*time.Second)
	if res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("hook: %+v", res)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "main h:2" {
		t.Errorf("hook saw env %q", b)
	}
	res = runHook(ctx, "echo no; exit 3", nil, 5*time.Second)
	if res.ExitCode != 3 || res.Err == nil || res.Output != "no" {
		t.Errorf("failing hook: %+v", res)
	}
	// A hook that hangs, with a child holding its output, is killed at the timeout.
	start := time.Now()
	res = runHook(ctx, "sleep 30 & sleep 30", nil, 300*time.Millisecond)
	if !res.TimedOut || res.Err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("hanging hook: %+v after %s", res, time.Since(start))
	}
}
