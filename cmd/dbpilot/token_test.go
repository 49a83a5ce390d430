package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/daemon"
)

// TestTokenNew: the printed entry, pasted into serve's configuration,
// gives a token of that name and role; --file writes it 0600.
func TestTokenNew(t *testing.T) {
	dir := t.TempDir()
	base := "credentials: {user: u, password: p}\nreplication: {user: r, password: p}\nclusters: [{name: main, seeds: [\"127.0.0.1:3306\"]}]\n"
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"token", "new", "--name", "grafana", "--role", "viewer"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	_, tok, _ := strings.Cut(out.String(), `token: "`)
	tok, _, _ = strings.Cut(tok, `"`)
	if len(tok) < 40 {
		t.Fatalf("token %q: too short", tok)
	}
	cfgPath := filepath.Join(dir, "a.yaml")
	os.WriteFile(cfgPath, []byte(base+out.String()), 0o600)
	c, err := daemon.LoadConfig(cfgPath)
	if err != nil {
		t.Fatalf("the printed lines do not load: %v\n%s", err, out.String())
	}
	if ts := c.APITokens(); len(ts) != 1 || ts[0].Name != "grafana" || ts[0].Role != "viewer" || ts[0].Token != tok {
		t.Errorf("tokens %+v, want grafana/viewer/%s", ts, tok)
	}

	out.Reset()
	file := filepath.Join(dir, "ops.token")
	if code := run(context.Background(), []string{"token", "new", "--name", "ops", "--role", "operator", "--file", file}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	os.WriteFile(cfgPath, []byte(base+out.String()), 0o600)
	if c, err = daemon.LoadConfig(cfgPath); err != nil {
		t.Fatalf("the printed lines do not load: %v\n%s", err, out.String())
	}
	if ts := c.APITokens(); len(ts) != 1 || ts[0].Role != "operator" || strings.Contains(out.String(), ts[0].Token) {
		t.Errorf("tokens %+v (the secret must stay out of the output: %s)", ts, out.String())
	}
	// The same file again is refused; so are a bad role and name.
	for _, args := range [][]string{
		{"token", "new", "--name", "ops", "--role", "operator", "--file", file},
		{"token", "new", "--name", "x", "--role", "root"},
		{"token", "new", "--name", "a b", "--role", "viewer"},
	} {
		errOut.Reset()
		if code := run(context.Background(), args, &out, &errOut); code != exitError || strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, errOut.String())
		}
	}
}
