package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeCheckConfig: serve --check-config exits 0 with one line for a
// valid file (the default configuration), and 2 with one line naming the
// file for a missing one, an unknown key or an invalid value; it starts
// nothing (no state file is created).
func TestServeCheckConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DBPILOT_HOME", home)
	var def syncBuffer
	if code := run(context.Background(), []string{"serve", "--print-default-config"}, &def, &syncBuffer{}); code != 0 {
		t.Fatalf("--print-default-config: exit %d", code)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := write("valid.yml", def.String())
	for _, tc := range []struct {
		name, path string
		code       int
		want       string // in the one line printed
	}{
		{"valid", valid, 0, "config " + valid + " is valid: 1 cluster(s), listen 127.0.0.1:7070, state " + filepath.Join(home, "state.db")},
		{"missing", filepath.Join(dir, "absent.yml"), 2, "config " + filepath.Join(dir, "absent.yml") + ": no such file"},
		{"unknown key", write("unknown.yml", def.String()+"bogus: 1\n"), 2, "field bogus not found"},
		{"bad value", write("bad.yml", strings.Replace(def.String(), "listen: 127.0.0.1:7070", "listen: nowhere", 1)), 2, `listen: "nowhere" is not HOST:PORT`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(context.Background(), []string{"serve", "--config", tc.path, "--check-config"}, &out, &errOut)
			printed := out.String() + errOut.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, printed)
			}
			if n := strings.Count(printed, "\n"); n != 1 {
				t.Errorf("%d lines, want one: %q", n, printed)
			}
			if !strings.Contains(printed, tc.want) {
				t.Errorf("printed %q, want it to hold %q", printed, tc.want)
			}
			if code != 0 && !strings.Contains(errOut.String(), tc.path) {
				t.Errorf("the error does not name the file %s: %q", tc.path, errOut.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, "state.db")); !os.IsNotExist(err) {
		t.Errorf("--check-config created the state file (stat: %v)", err)
	}
}
