package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

func checksums(t *testing.T, d *sandbox.Descriptor, tables string) string {
	t.Helper()
	ctx := context.Background()
	db, err := mysql.Open(ctx, d.Nodes[0].Key(), mysql.Options{Credentials: d.Admin, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.Query(ctx, "CHECKSUM TABLE "+tables+" EXTENDED")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, row := range r.Values {
		b.WriteString(*row[0] + "=" + *row[1] + " ")
	}
	return b.String()
}

func chunkLines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\nchunk ")
}

// TestBackupCLI runs dump, a restore killed with SIGKILL and resumed,
// verify, and the refusals, through the command line against real servers.
func TestBackupCLI(t *testing.T) {
	testutil.Home(t)
	src := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
	dst := testutil.MustSandbox(t, sandbox.Spec{Topology: "single"})
	ctx := context.Background()
	db, err := mysql.Open(ctx, src.Nodes[0].Key(), mysql.Options{Credentials: src.Admin, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx,
		"CREATE DATABASE app",
		"CREATE TABLE app.big (id INT PRIMARY KEY, k INT, c VARCHAR(60), KEY k (k))",
		"INSERT INTO app.big SELECT seq, seq % 1000, REPEAT('x', 40) FROM app.seq_1_to_400000",
		"CREATE TABLE app.small (name VARCHAR(20) PRIMARY KEY, v JSON)",
		`INSERT INTO app.small VALUES ('a', '{"x":1}'), ('b', NULL)`,
	); err != nil {
		t.Fatal(err)
	}
	const tables = "app.big, app.small"
	want := checksums(t, src, tables)
	dir := filepath.Join(t.TempDir(), "dump")

	code, out, errOut := runCLI(t, "dump", "--sandbox", src.Name, "--out", dir, "--chunk-rows", "2000", "--threads", "2", "-q")
	if code != 0 {
		t.Fatalf("dump: exit %d: %s", code, errOut)
	}
	// The chunk count follows InnoDB's row estimate: read it back.
	m, err := backup.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	chunks := m.Totals.Chunks
	if chunks < 150 {
		t.Fatalf("dump cut %d chunks of about 2000 rows from 400002 rows", chunks)
	}
	for _, w := range []string{"lock BACKUP STAGE BLOCK_COMMIT held", fmt.Sprintf("tables 2, chunks %d, rows 400002", chunks), "GTID position"} {
		if !strings.Contains(out, w) {
			t.Errorf("dump output lacks %q:\n%s", w, out)
		}
	}

	// A restore killed mid-way leaves committed chunks recorded.
	bin := filepath.Join(t.TempDir(), "dbpilot")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	cmd := exec.Command(bin, "restore", dir, "--sandbox", dst.Name, "--threads", "1", "-q")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	progress := filepath.Join(dir, "restore.progress")
	deadline := time.Now().Add(60 * time.Second)
	for chunkLines(progress) < 5 {
		if time.Now().After(deadline) {
			t.Fatal("restore recorded no progress in 60 s")
		}
		select {
		case err := <-done:
			t.Fatalf("restore ended before it could be killed: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	killedAt := chunkLines(progress)
	if killedAt >= chunks {
		t.Fatalf("restore finished before the kill (%d chunks recorded)", killedAt)
	}

	code, _, errOut = runCLI(t, "restore", dir, "--sandbox", dst.Name)
	if code != 2 || !strings.Contains(errOut, "--drop-existing") || !strings.Contains(errOut, "--resume") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("restore onto existing tables: exit %d, %q; want exit 2 and one line naming --drop-existing and --resume", code, errOut)
	}
	code, out, errOut = runCLI(t, "restore", dir, "--sandbox", dst.Name, "--resume", "--threads", "3", "-q")
	if code != 0 {
		t.Fatalf("restore --resume: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "already done)") || strings.Contains(out, "(0 already done)") {
		t.Errorf("restore --resume skipped nothing: %s", out)
	}
	if got := checksums(t, dst, tables); got != want {
		t.Errorf("after resume: checksums %s, source %s", got, want)
	}
	code, out, errOut = runCLI(t, "verify", dir, "--sandbox", dst.Name)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("matches the dump: 2 tables, %d chunks", chunks)) {
		t.Errorf("verify restored copy: exit %d: %s %s", code, out, errOut)
	}

	// The source moves on: verify reports the difference with exit 1.
	if err := db.Exec(ctx, "UPDATE app.big SET c = 'changed' WHERE id = 77"); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "verify", dir, "--against", src.Nodes[0].Key().String(), "--user", src.Admin.User, "--password", src.Admin.Password, "--json")
	var rep struct {
		Mismatches int `json:"mismatches"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Mismatches != 1 {
		t.Errorf("verify changed source: exit %d, %s; want exit 1 and 1 mismatch", code, out)
	}

	// --drop-existing replaces.
	code, _, errOut = runCLI(t, "restore", dir, "--sandbox", dst.Name, "--drop-existing", "--defer-indexes", "-q")
	if code != 0 {
		t.Fatalf("restore --drop-existing: exit %d: %s", code, errOut)
	}
	if got := checksums(t, dst, tables); got != want {
		t.Errorf("after --drop-existing: checksums %s, source %s", got, want)
	}

	// Bad input: one clear line each, exit 2.
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("x"), 0o600)
	newer := t.TempDir()
	os.WriteFile(filepath.Join(newer, "manifest.json"), []byte(`{"format": 99}`), 0o600)
	incomplete := t.TempDir()
	os.WriteFile(filepath.Join(incomplete, "dump.incomplete"), []byte("dump failed 2026-01-01: boom\n"), 0o600)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"restore", filepath.Join(foreign, "nope"), "--sandbox", dst.Name}, "does not exist"},
		{[]string{"restore", foreign, "--sandbox", dst.Name}, "not a dbpilot dump"},
		{[]string{"restore", newer, "--sandbox", dst.Name}, "newer than this dbpilot reads"},
		{[]string{"verify", incomplete, "--sandbox", dst.Name}, "incomplete"},
		{[]string{"dump", "--sandbox", src.Name, "--out", dir}, "not empty"},
		{[]string{"dump", src.Nodes[0].Key().String(), "--user", src.Admin.User, "--password", "wrong-secret-pw", "--out", t.TempDir() + "/x"}, "access denied"},
		{[]string{"dump", "--sandbox", src.Name, "--out", t.TempDir() + "/y", "--compress", "lz4"}, "want zstd or none"},
		{[]string{"restore", dir, "--sandbox", dst.Name, "--resume", "--drop-existing"}, "exclude each other"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(t, c.args...)
		line := strings.TrimSpace(errOut)
		if code != 2 || !strings.Contains(line, c.want) || strings.Contains(line, "\n") || strings.Contains(line, "wrong-secret-pw") {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
}
