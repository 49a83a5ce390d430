package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/daemon"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestServePrintConfig: `serve --sandbox NAME --print-config` prints a file
// that `serve --config` loads into the same configuration, with no secret
// in it (the token and passwords are 0600 files in the sandbox's directory).
func TestServePrintConfig(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2, SemiSync: true})
	var out, errOut syncBuffer
	if code := run(context.Background(), []string{"serve", "--sandbox", d.Name, "--print-config"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text := out.String()
	tok, err := os.ReadFile(daemon.TokenFile(d))
	if err != nil {
		t.Fatal(err)
	}
	for what, secret := range map[string]string{"admin password": d.Admin.Password, "replication password": d.Repl.Password, "API token": strings.TrimSpace(string(tok))} {
		if secret != "" && strings.Contains(text, secret) {
			t.Errorf("the printed configuration holds the %s", what)
		}
	}
	path := filepath.Join(t.TempDir(), "dbpilot.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := daemon.LoadConfig(path)
	if err != nil {
		t.Fatalf("serve --config cannot load what --print-config printed: %v\n%s", err, text)
	}
	want, err := daemon.ConfigFromSandbox(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Credentials.User != want.Credentials.User || cfg.Credentials.Password != want.Credentials.Password ||
		cfg.Replication.Password != want.Replication.Password || cfg.Token != want.Token || cfg.State != want.State {
		t.Errorf("loaded configuration differs in accounts, token or state:\n%s", text)
	}
	if len(cfg.Clusters) != 1 || cfg.Clusters[0].Name != d.Name || strings.Join(cfg.Clusters[0].Seeds, ",") != strings.Join(want.Clusters[0].Seeds, ",") ||
		!cfg.Clusters[0].AutoFailover || !cfg.Clusters[0].SemiSync {
		t.Errorf("clusters %+v, want %+v", cfg.Clusters, want.Clusters)
	}
	for _, f := range []string{"admin.cnf", "replication.cnf"} {
		st, err := os.Stat(filepath.Join(d.Dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", f, err, st.Mode())
		}
	}
	// Without a sandbox it says what it needs.
	errOut = syncBuffer{}
	if code := run(context.Background(), []string{"serve", "--config", path, "--print-config"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--sandbox") {
		t.Errorf("--print-config with --config: exit %d, %q", code, errOut.String())
	}
}

// TestServePrintDefaultConfig: `serve --print-default-config` prints, with
// no server and no config, a configuration file with every key at its
// default that serve --config loads (daemon's TestDefaultConfigYAML checks
// the file itself).
func TestServePrintDefaultConfig(t *testing.T) {
	t.Setenv("DBPILOT_HOME", t.TempDir())
	code, out, errOut := runCLI(t, "serve", "--print-default-config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "# dbpilot serve: every key at its default") || !strings.Contains(out, "\npoll_interval: 1s\n") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	path := filepath.Join(t.TempDir(), "dbpilot.yaml")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.LoadConfig(path); err != nil {
		t.Errorf("serve --config cannot load what --print-default-config printed: %v", err)
	}
}
