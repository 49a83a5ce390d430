package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokensConfig: tokens with roles, token_file read, the setting token
// an admin named "admin".
func TestTokensConfig(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "ops.token")
	if err := os.WriteFile(f, []byte("ops-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(writeConfig(t, minimal+`token: legacy
tokens:
  - {name: grafana, role: viewer, token: view-secret}
  - {name: ops, role: operator, token_file: `+f+`}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.APITokens()
	want := []TokenConfig{{Name: "admin", Role: "admin", Token: "legacy"}, {Name: "grafana", Role: "viewer", Token: "view-secret"},
		{Name: "ops", Role: "operator", Token: "ops-secret", TokenFile: f}}
	if len(got) != len(want) {
		t.Fatalf("tokens %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("token %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if c.ForwardToken() != "legacy" {
		t.Errorf("forward token %q", c.ForwardToken())
	}
	// No secret goes into the YAML written back.
	b, err := configYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"legacy", "view-secret", "ops-secret"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the YAML holds the secret %s:\n%s", s, b)
		}
	}
}

func TestTokensConfigErrors(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.token")
	if err := os.WriteFile(open, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.token")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ body, want string }{
		{"tokens: [{name: ci, role: root, token: s}]", `tokens[0] (ci).role: "root" is not a role: give viewer, operator or admin`},
		{"tokens: [{name: ci, token: s}]", `tokens[0] (ci).role: "" is not a role: give viewer, operator or admin`},
		{"tokens: [{name: ci, role: viewer, token: a}, {name: ci, role: admin, token: b}]", `tokens[1] (ci): the name "ci" is tokens[0] (ci)'s too: give each token its own name`},
		{"token: t\ntokens: [{name: admin, role: viewer, token: a}]", `tokens[0] (admin): the name "admin" is token's too`},
		{"tokens: [{name: a, role: viewer, token: same}, {name: b, role: admin, token: same}]", `tokens[1] (b): its token is tokens[0] (a)'s too: give each name its own token`},
		{"token: same\ntokens: [{name: b, role: viewer, token: same}]", `tokens[0] (b): its token is token's too`},
		{"tokens: [{name: ci, role: viewer}]", `tokens[0] (ci): the token is empty: give token or token_file`},
		{"tokens: [{name: ci, role: viewer, token: \"\"}]", `tokens[0] (ci): the token is empty`},
		{"tokens: [{role: viewer, token: a}]", `tokens[0].name: "" is not a token name`},
		{"tokens: [{name: \"a b\", role: viewer, token: a}]", `tokens[0].name: "a b" is not a token name`},
		{"tokens: [{name: ci, role: viewer, token: a, token_file: " + open + "}]", `tokens[0] (ci): token and token_file: give one, not both`},
		{"tokens: [{name: ci, role: viewer, token_file: " + open + "}]", `tokens[0] (ci).token_file: `},
		{"tokens: [{name: ci, role: viewer, token_file: " + empty + "}]", `tokens[0] (ci).token_file: ` + empty + ` is empty`},
		{"tokens: [{name: ci, role: viewer, token_file: " + filepath.Join(dir, "none") + "}]", `tokens[0] (ci).token_file: `},
		{"http_tls: {cert_file: /c.pem}", "http_tls: give both cert_file and key_file"},
		{"http_tls: {key_file: /k.pem}", "http_tls: give both cert_file and key_file"},
		{"listen: 0.0.0.0:7070", "configure token, token_file or tokens"},
	}
	for _, tt := range tests {
		_, err := LoadConfig(writeConfig(t, minimal+tt.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %q", tt.body, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: more than one line: %q", tt.body, err)
		}
	}
	// Off-loopback with only tokens of roles: reads need one, and have one.
	if _, err := LoadConfig(writeConfig(t, minimal+"listen: 0.0.0.0:7070\ntokens: [{name: v, role: viewer, token: a}]\n")); err != nil {
		t.Errorf("off-loopback with a viewer token: %v", err)
	}
}
