package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/binlog"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

func runBinlogCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBinlogCLIUsage(t *testing.T) {
	if code, _, stderr := runBinlogCLI(t, "binlog", "stream", "127.0.0.1:1"); code != exitError || !strings.Contains(stderr, "out") {
		t.Fatalf("stream without --out: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runBinlogCLI(t, "binlog", "verify", filepath.Join(t.TempDir(), "nope")); code != exitError {
		t.Fatalf("verify of a missing directory: exit %d, %s", code, stderr)
	}
	code, out, _ := runBinlogCLI(t, "binlog", "ls", t.TempDir(), "--json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls of an empty directory: exit %d, %q", code, out)
	}
}

// TestBinlogCLI streams a sandbox with --stop-at-end, lists and verifies
// the archive, then damages it: a corrupted .zst and a missing middle file
// are named by verify with the GTIDs they leave out (exit 1).
func TestBinlogCLI(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	ctx := context.Background()
	db, err := mysql.Open(ctx, d.Nodes[0].Key(), mysql.Options{Credentials: d.Admin})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{"CREATE DATABASE bl", "CREATE TABLE bl.t (id INT PRIMARY KEY)"}
	for i := 1; i <= 40; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO bl.t VALUES (%d)", i))
		if i%10 == 0 {
			stmts = append(stmts, "FLUSH BINARY LOGS")
		}
	}
	if err := db.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "arch")
	code, out, stderr := runBinlogCLI(t, "binlog", "stream", "--sandbox", d.Name, "--out", dir, "--stop-at-end", "-q")
	if code != exitOK {
		t.Fatalf("stream: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "archived") {
		t.Fatalf("stream output: %q", out)
	}
	code, out, _ = runBinlogCLI(t, "binlog", "ls", dir, "--json")
	var files []binlog.FileInfo
	if err := json.Unmarshal([]byte(out), &files); code != exitOK || err != nil {
		t.Fatalf("ls: exit %d, %v\n%s", code, err, out)
	}
	if len(files) < 4 || !files[len(files)-1].Partial {
		t.Fatalf("ls: %d files, want 3 finished and the partial:\n%s", len(files), out)
	}
	if code, out, _ = runBinlogCLI(t, "binlog", "verify", dir); code != exitOK || !strings.Contains(out, "sound") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}

	// Corrupt the second file: flip a byte in the middle.
	f2 := files[1]
	p2 := filepath.Join(dir, f2.File)
	orig, _ := os.ReadFile(p2)
	b := bytes.Clone(orig)
	b[len(b)/2] ^= 0xff
	os.WriteFile(p2, b, 0o600)
	code, out, _ = runBinlogCLI(t, "binlog", "verify", dir)
	lost := fmt.Sprintf("seq %d-%s", seqOf(t, f2.GTIDStart)+1, fmt.Sprint(seqOf(t, f2.GTIDEnd)))
	if code != exitProblems || !strings.Contains(out, f2.File) || !strings.Contains(out, "checksum") || !strings.Contains(out, lost) {
		t.Fatalf("verify of a corrupt file: exit %d, want %s and %q named\n%s", code, f2.File, lost, out)
	}
	t.Logf("corrupt:\n%s", out)
	os.WriteFile(p2, orig, 0o600)

	// Remove the middle file.
	f3 := files[1]
	os.Remove(filepath.Join(dir, f3.File))
	code, out, _ = runBinlogCLI(t, "binlog", "verify", dir, "--json")
	var rep binlog.Report
	if err := json.Unmarshal([]byte(out), &rep); code != exitProblems || err != nil {
		t.Fatalf("verify of a missing file: exit %d %v\n%s", code, err, out)
	}
	found := false
	for _, p := range rep.Problems {
		if p.File == f3.File && p.Kind == "missing" && len(p.Gaps) == 1 && strings.Contains(p.Message, f3.GTIDEnd) {
			found = true
		}
	}
	if !found {
		t.Fatalf("verify does not name the missing %s and its GTIDs %s..%s:\n%s", f3.File, f3.GTIDStart, f3.GTIDEnd, out)
	}
	t.Logf("missing:\n%s", out)
}

func seqOf(t *testing.T, pos string) int {
	t.Helper()
	var d, s, n int
	if _, err := fmt.Sscanf(pos, "%d-%d-%d", &d, &s, &n); err != nil {
		t.Fatalf("position %q: %v", pos, err)
	}
	return n
}
