package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayUsage checks replay's flags and the refusals that need no
// server: each exits 2 with one line naming what is wrong.
func TestReplayUsage(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	to := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	recorded, _ := filepath.Abs(filepath.Join("..", "..", "pitr", "testdata", "recorded"))
	gap := filepath.Join(t.TempDir(), "gap")
	if err := os.CopyFS(gap, os.DirFS(recorded)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(gap, "binlog.000004"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--binlogs", recorded}, "name the target"},
		{[]string{"replay", "--target", to}, "--binlogs DIR"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--modes", "fast"}, "not a parallel mode"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--threads", "4,x"}, "--threads"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--from-gtid", "0-1"}, "--from-gtid"},
		{[]string{"replay", "--binlogs", recorded, "--target", to, "--rate", "-1"}, "--rate"},
		// A gap is refused before a sandbox is deployed for --dump.
		{[]string{"replay", "--binlogs", gap, "--dump", "/nonexistent"}, "binlog.000004 is missing"},
		{[]string{"replay", "--binlogs", recorded, "--until-gtid", "0-1-99999", "--dump", "/nonexistent"}, "not a transaction of the archive"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
}
