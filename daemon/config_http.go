package daemon

import (
	"fmt"
	"regexp"

	"github.com/dbpilot/dbpilot"
)

// TokenConfig is one API token of tokens: its name goes into the audit log
// with every action done with it, its role says what it may do.
type TokenConfig struct {
	// Name names the token in the audit log ("token:NAME") and in refusals:
	// letters, digits, '.', '_', '-' (at most 64), unique.
	Name string `yaml:"name"`
	// Role is viewer (reads), operator (ack, relocate, switchover, and
	// reads) or admin (failover, rejoin too: everything).
	Role string `yaml:"role"`
	// Token is the secret the client sends (Authorization: Bearer TOKEN);
	// prefer token_file. `dbpilot token new` makes one.
	Token string `yaml:"token"`
	// TokenFile is a file (mode 0600) holding the token; give token or
	// token_file, not both.
	TokenFile string `yaml:"token_file"`
}

// HTTPTLSConfig makes serve answer HTTPS with a certificate and its key
// (PEM files). Both are read at start, where a missing file, a key that
// does not match the certificate or an expired certificate stops serve,
// and again on SIGHUP, where a pair that fails to load keeps the one in
// use. Not to be confused with TLS to the MySQL servers.
type HTTPTLSConfig struct {
	// CertFile is the server's certificate in PEM, followed by its
	// intermediate CA certificates if any.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the certificate's private key in PEM (keep it 0600).
	KeyFile string `yaml:"key_file"`
}

// Enabled tells whether serve answers HTTPS.
func (t *HTTPTLSConfig) Enabled() bool { return t.CertFile != "" }

func (t *HTTPTLSConfig) validate() error {
	if (t.CertFile == "") != (t.KeyFile == "") {
		return fmt.Errorf("http_tls: give both cert_file and key_file (HTTPS for serve), or neither")
	}
	t.CertFile, t.KeyFile = expandHome(t.CertFile), expandHome(t.KeyFile)
	return nil
}

// AdminTokenName is the name of the token of the settings token and
// token_file: an admin token.
const AdminTokenName = "admin"

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// validateTokens reads each token_file of tokens and checks names, roles
// and secrets: each name and each token once (the setting token counts as
// one named admin).
func (c *Config) validateTokens() error {
	names := map[string]string{}
	secrets := map[string]string{}
	if c.Token != "" {
		names[AdminTokenName] = "token"
		secrets[c.Token] = "token"
	}
	for i := range c.Tokens {
		t := &c.Tokens[i]
		where := fmt.Sprintf("tokens[%d]", i)
		if !tokenNameRE.MatchString(t.Name) {
			return fmt.Errorf("%s.name: %q is not a token name: give letters, digits, '.', '_' or '-' (at most 64)", where, t.Name)
		}
		where = fmt.Sprintf("tokens[%d] (%s)", i, t.Name)
		if prev, ok := names[t.Name]; ok {
			return fmt.Errorf("%s: the name %q is %s's too: give each token its own name", where, t.Name, prev)
		}
		names[t.Name] = where
		if !dbpilot.Role(t.Role).Valid() {
			return fmt.Errorf("%s.role: %q is not a role: give %s", where, t.Role, dbpilot.RoleNames())
		}
		if err := t.resolve(where); err != nil {
			return err
		}
		if prev, ok := secrets[t.Token]; ok {
			return fmt.Errorf("%s: its token is %s's too: give each name its own token (dbpilot token new makes one)", where, prev)
		}
		secrets[t.Token] = where
	}
	return nil
}

// resolve reads the token of token_file.
func (t *TokenConfig) resolve(where string) error {
	if t.TokenFile != "" {
		if t.Token != "" {
			return fmt.Errorf("%s: token and token_file: give one, not both", where)
		}
		tok, err := readSecretFile(expandHome(t.TokenFile))
		if err != nil {
			return fmt.Errorf("%s.token_file: %w", where, err)
		}
		t.Token = tok
	}
	if t.Token == "" {
		return fmt.Errorf("%s: the token is empty: give token or token_file (dbpilot token new makes one)", where)
	}
	return nil
}

// HasTokens tells whether any API token is configured.
func (c *Config) HasTokens() bool { return c.Token != "" || len(c.Tokens) > 0 }

// APITokens are the API's tokens: token (or token_file) as an admin token
// named "admin", then tokens. Validate has read their files.
func (c *Config) APITokens() []TokenConfig {
	var ts []TokenConfig
	if c.Token != "" {
		ts = append(ts, TokenConfig{Name: AdminTokenName, Role: string(dbpilot.RoleAdmin), Token: c.Token})
	}
	return append(ts, c.Tokens...)
}

// ForwardToken is the token this serve presents when it forwards a request
// to the leader of a cluster (coordination): token, else the first admin
// token of tokens; "" when there is none (the leader then refuses writes).
func (c *Config) ForwardToken() string {
	for _, t := range c.APITokens() {
		if t.Role == string(dbpilot.RoleAdmin) {
			return t.Token
		}
	}
	return ""
}
