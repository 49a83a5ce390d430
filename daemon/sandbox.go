package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dbpilot/dbpilot/sandbox"
)

// ConfigFromSandbox builds a serve configuration for a sandbox: one cluster
// named after it with every node as a seed, its admin and replication
// accounts, automatic failover on, state and API token kept in the
// sandbox's directory (the token is generated once, mode 0600).
func ConfigFromSandbox(d *sandbox.Descriptor) (*Config, error) {
	tokenFile := filepath.Join(d.Dir, "api-token")
	tok, err := os.ReadFile(tokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		tok = []byte(hex.EncodeToString(b))
		if err := os.WriteFile(tokenFile, append(tok, '\n'), 0o600); err != nil {
			return nil, fmt.Errorf("write API token %s: %w", tokenFile, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("read API token %s: %w", tokenFile, err)
	}
	cl := ClusterConfig{Name: d.Name, AutoFailover: true, SemiSync: d.SemiSync}
	for _, n := range d.Nodes {
		cl.Seeds = append(cl.Seeds, n.Key().String())
	}
	c := &Config{
		State:       filepath.Join(d.Dir, "state.db"),
		Token:       strings.TrimSpace(string(tok)),
		Credentials: CredentialsConfig{User: d.Admin.User, Password: d.Admin.Password},
		Replication: CredentialsConfig{User: d.Repl.User, Password: d.Repl.Password},
		Clusters:    []ClusterConfig{cl},
	}
	return c, nil
}

// TokenFile returns where ConfigFromSandbox keeps a sandbox's API token.
func TokenFile(d *sandbox.Descriptor) string { return filepath.Join(d.Dir, "api-token") }
