package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// runCLI runs dbpilot in-process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p
}

func TestBadInput(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DBPILOT_HOME", home)
	t.Setenv("DBPILOT_PASSWORD", "s3cr3t-pw")
	port := closedPort(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unreachable host", []string{"inspect", fmt.Sprintf("127.0.0.1:%d", port)}, 2, fmt.Sprintf("connect on 127.0.0.1:%d: connection refused", port)},
		{"unreachable topology", []string{"topology", fmt.Sprintf("127.0.0.1:%d", port)}, 2, "connection refused"},
		{"unreachable analyze", []string{"analyze", fmt.Sprintf("127.0.0.1:%d", port)}, 2, "connection refused"},
		{"malformed address", []string{"inspect", "127.0.0.1:notaport"}, 2, `invalid instance address "127.0.0.1:notaport"`},
		{"malformed address 2", []string{"topology", "user@db:3306"}, 2, "invalid instance address"},
		{"no target", []string{"analyze"}, 2, "name a server as HOST:PORT or a sandbox with --sandbox NAME"},
		{"both targets", []string{"inspect", "--sandbox", "x", "127.0.0.1:3306"}, 2, "either HOST:PORT or --sandbox"},
		{"unknown sandbox", []string{"inspect", "--sandbox", "nosuch"}, 2, `no sandbox named "nosuch"`},
		{"unknown sandbox status", []string{"sandbox", "status", "nosuch"}, 2, `no sandbox named "nosuch"`},
		{"unknown sandbox destroy", []string{"sandbox", "destroy", "nosuch"}, 2, `no sandbox named "nosuch"`},
		{"bad sandbox name", []string{"sandbox", "deploy", "../x"}, 2, "invalid sandbox name"},
		{"bad topology", []string{"sandbox", "deploy", "x", "--topology", "star"}, 2, `unknown topology "star"`},
		{"missing binary", []string{"sandbox", "deploy", "x", "--basedir", home}, 2, "no server binary (mariadbd or mysqld) found"},
		{"zero nodes", []string{"sandbox", "deploy", "x", "--nodes", "0"}, 2, "sandbox: --nodes 0: give at least 1 node"},
		{"negative nodes", []string{"sandbox", "deploy", "x", "--topology", "single", "--nodes", "-2"}, 2, "sandbox: --nodes -2: give at least 1 node"},
		{"option off loopback", []string{"sandbox", "deploy", "x", "--option", "bind_address=0.0.0.0"}, 2, "sandbox: --option bind_address=0.0.0.0 would make the sandbox listen beyond loopback"},
		{"bad option", []string{"sandbox", "deploy", "x", "--option", "novalue"}, 2, `invalid --option "novalue"`},
		{"unknown flag", []string{"inspect", "--nope"}, 2, "unknown flag: --nope"},
		{"invalid gtid", []string{"gtid", "canonical", "0-1-x"}, 2, `invalid MariaDB GTID set "0-1-x" at position 4`},
		{"invalid mysql gtid", []string{"gtid", "canonical", "3e11fa47-71ca-11e1-9e33-c80aa9429562:5-2"}, 2, "at position"},
		{"gtid errant found", []string{"gtid", "errant", "0-1-10,0-2-3", "0-1-12"}, 1, ""},
		{"gtid errant none", []string{"gtid", "errant", "0-1-10", "0-1-12"}, 0, ""},
		{"dump where escapes its parentheses", []string{"dump", fmt.Sprintf("127.0.0.1:%d", port), "--out", filepath.Join(home, "d"), "--where", "db.t:secret=1)) OR ((1=1"}, 2, "--where for db.t is not one SQL expression: the ')' at byte 9"},
		{"dump where with a comment", []string{"dump", fmt.Sprintf("127.0.0.1:%d", port), "--out", filepath.Join(home, "d"), "--where", "db.t:a = 1 -- x"}, 2, "comment"},
		{"bad threshold", []string{"analyze", "127.0.0.1:3306", "--lag-threshold", "0s"}, 2, "--lag-threshold"},
		{"negative max lag", []string{"switchover", "main", "--config", "x.yaml", "--max-lag", "-1s"}, 2, "--max-lag -1s is negative"},
		{"negative drain timeout", []string{"switchover", "main", "--config", "x.yaml", "--drain-timeout", "-5s"}, 2, "--drain-timeout -5s is negative"},
		{"negative relocate max lag", []string{"relocate", "127.0.0.1:3307", "--below", "127.0.0.1:3306", "--max-lag", "-1s"}, 2, "--max-lag -1s is negative"},
		{"bad duration", []string{"inspect", "127.0.0.1:3306", "--connect-timeout", "1x"}, 2, `"1x" is not a duration: give seconds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if tt.want != "" && !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.want)
			}
			if tt.code == 2 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("error is not one line: %q", errOut)
			}
			if strings.Contains(out+errOut, "s3cr3t-pw") {
				t.Errorf("password printed: %q %q", out, errOut)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "sandboxes")); len(entries) > 0 {
		t.Errorf("failed deploys left %v", entries)
	}
}

func TestCredentialsFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "creds.cnf")
	os.WriteFile(p, []byte("[mysqld]\nuser=wrong\n[client]\nuser = monitor\npassword = \"pw\"\n"), 0o644)
	if _, err := mysql.ReadCredentialsFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable credentials file accepted: %v", err)
	}
	os.Chmod(p, 0o600)
	c, err := mysql.ReadCredentialsFile(p)
	if err != nil || c.User != "monitor" || c.Password != "pw" {
		t.Errorf("readCredentialsFile = %+v, %v", c, err)
	}
	t.Setenv("DBPILOT_USER", "envuser")
	tf := targetFlags{credentials: p, password: "flagpw"}
	c, err = tf.credentialsFromFlags()
	if err != nil || c.User != "envuser" || c.Password != "flagpw" {
		t.Errorf("precedence wrong: %+v, %v", c, err)
	}
}

// TestCLIEndToEnd drives the commands a user runs against a real sandbox.
func TestCLIEndToEnd(t *testing.T) {
	testutil.RequireServer(t)
	testutil.Home(t)
	t.Cleanup(func() { sandbox.Destroy("e2e") })
	code, out, errOut := runCLI(t, "sandbox", "deploy", "e2e", "--topology", "replication", "--nodes", "3", "--semi-sync", "--port-base", "19700")
	if code != 0 {
		t.Fatalf("deploy: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "node3  127.0.0.1:19703  replica") {
		t.Errorf("deploy output:\n%s", out)
	}
	code, out, _ = runCLI(t, "sandbox", "list")
	if code != 0 || !strings.Contains(out, "e2e") || !strings.Contains(out, "19701-19703") {
		t.Errorf("list: %d\n%s", code, out)
	}
	code, out, errOut = runCLI(t, "topology", "--sandbox", "e2e")
	if code != 0 {
		t.Fatalf("topology: exit %d\n%s\n%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "127.0.0.1:19701") || !strings.HasPrefix(lines[1], "+ 127.0.0.1:1970") ||
		!strings.Contains(lines[0], "semi:primary") || !strings.Contains(lines[2], "ok") {
		t.Errorf("topology:\n%s", out)
	}
	code, out, _ = runCLI(t, "analyze", "--sandbox", "e2e")
	if code != 0 || !strings.Contains(out, "healthy") {
		t.Errorf("analyze of a fresh sandbox: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--sandbox", "e2e", "--node", "2", "--json")
	var inst struct {
		Flavor   string `json:"flavor"`
		ReadOnly bool   `json:"read_only"`
		Channels []struct {
			IO  string `json:"io_running"`
			SQL bool   `json:"sql_running"`
		} `json:"channels"`
	}
	if err := json.Unmarshal([]byte(out), &inst); err != nil || code != 0 {
		t.Fatalf("inspect --json: %d %v\n%s", code, err, out)
	}
	if inst.Flavor != "mariadb" || !inst.ReadOnly || len(inst.Channels) != 1 || inst.Channels[0].IO != "Yes" || !inst.Channels[0].SQL {
		t.Errorf("inspect node2: %+v", inst)
	}
	// A writable replica makes analyze exit 1.
	if code, _, e := runCLI(t, "sandbox", "sql", "e2e", "node3", "SET GLOBAL read_only=0"); code != 0 {
		t.Fatalf("sql: %s", e)
	}
	code, out, _ = runCLI(t, "analyze", "--sandbox", "e2e")
	if code != 1 || !strings.Contains(out, "ReplicaNotReadOnly") || !strings.Contains(out, "127.0.0.1:19703") {
		t.Errorf("analyze with a writable replica: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "sandbox", "sql", "e2e", "2", "SELECT @@server_id AS id")
	if code != 0 || !strings.Contains(out, "19702") {
		t.Errorf("sql: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "sandbox", "env", "e2e")
	if code != 0 || !strings.Contains(out, "export NODE1_PORT=19701") {
		t.Errorf("env: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "sandbox", "stop", "e2e", "node2")
	if code != 0 {
		t.Errorf("stop: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "sandbox", "status", "e2e")
	if code != 1 || !strings.Contains(out, "down") {
		t.Errorf("status with a stopped node: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "topology", "--sandbox", "e2e")
	if code != 1 || !strings.Contains(out, "unreachable") {
		t.Errorf("topology with a stopped node: exit %d\n%s", code, out)
	}
	if code, _, errOut = runCLI(t, "sandbox", "deploy", "e2e"); code != 2 || !strings.Contains(errOut, "already exists") {
		t.Errorf("deploy over existing: %d %s", code, errOut)
	}
	if code, out, errOut = runCLI(t, "sandbox", "destroy", "e2e"); code != 0 {
		t.Errorf("destroy: %d %s %s", code, out, errOut)
	}
}

func TestGTIDCommand(t *testing.T) {
	u := "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"gtid", "canonical", "1-2-5, 0-1-100"}, 0, "0-1-100,1-2-5\n"},
		{[]string{"gtid", "canonical", strings.ToUpper(u) + ":4-9:1-3"}, 0, u + ":1-9\n"},
		{[]string{"gtid", "union", "0-1-5", "0-1-7,1-2-3"}, 0, "0-1-7,1-2-3\n"},
		{[]string{"gtid", "union", u + ":1-3", u + ":5"}, 0, u + ":1-3:5\n"},
		{[]string{"gtid", "subtract", "0-1-10", "0-1-4"}, 0, "0-1:5-10\n"},
		{[]string{"gtid", "subtract", u + ":1-10", u + ":2-4"}, 0, u + ":1:5-10\n"},
		{[]string{"gtid", "errant", "0-1-10,0-2-3", "0-1-12"}, 1, "0-2-3\n"},
		{[]string{"gtid", "errant", u + ":1-10", u + ":1-12"}, 0, "\n"},
		{[]string{"gtid", "compare", "0-1-10,1-2-3", "0-1-12,1-3-3"}, 0, "domain 0: 0-1-10 behind 0-1-12\ndomain 1: 1-2-3 diverged 1-3-3\n"},
		{[]string{"gtid", "canonical", "--flavor", "postgres", "0-1-1"}, 2, ""},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, tt.args...)
		if code != tt.code || out != tt.out {
			t.Errorf("%v: exit %d, stdout %q (stderr %q); want %d, %q", tt.args, code, out, errOut, tt.code, tt.out)
		}
	}
}
