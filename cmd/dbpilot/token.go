package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"

	"github.com/dbpilot/dbpilot"
	"github.com/spf13/cobra"
)

func (a *app) tokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make API tokens for serve (a name and a role: viewer, operator or admin)",
		Args:  exactArgs(0, ""),
	}
	cmd.AddCommand(a.tokenNewCommand())
	return cmd
}

func (a *app) tokenNewCommand() *cobra.Command {
	var name, role, file string
	cmd := &cobra.Command{
		Use:   "new --name NAME --role viewer|operator|admin [--file PATH]",
		Short: "Print a new random API token and the lines of serve's configuration that accept it",
		Long: `Make a random API token (32 bytes from the system's random source, base64url)
and print the entry of serve's 'tokens:' that accepts it. With --file the
token is written to PATH (mode 0600, refused if PATH exists) and the entry
names the file; without it the entry holds the token. Serve reads its
configuration at start: restart it.

Roles (docs/security.md, "Tokens and roles"):
  viewer    reads: clusters, recoveries, audit, alerts, metrics, the console
  operator  also ack, relocate, switchover (and bench metrics)
  admin     also failover and rejoin: everything

Clients send it as 'Authorization: Bearer TOKEN': the CLI with --token or
$DBPILOT_TOKEN, the web console asks for it.`,
		Example: `  dbpilot token new --name grafana --role viewer
  dbpilot token new --name oncall --role operator --file /etc/dbpilot/oncall.token`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.tokenNew(name, role, file)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the token's name, recorded in the audit log with each action (letters, digits, '.', '_', '-')")
	f.StringVar(&role, "role", "", "viewer, operator or admin")
	f.StringVar(&file, "file", "", "write the token to this new file (mode 0600) and print a token_file entry")
	return cmd
}

func (a *app) tokenNew(name, role, file string) error {
	if !validTokenName(name) {
		return dbpilot.Errorf(dbpilot.EINVALID, "token new: --name %q is not a token name: give letters, digits, '.', '_' or '-' (at most 64)", name)
	}
	if !dbpilot.Role(role).Valid() {
		return dbpilot.Errorf(dbpilot.EINVALID, "token new: --role %q is not a role: give %s", role, dbpilot.RoleNames())
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("token new: random source: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	if file != "" {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return dbpilot.WrapError(dbpilot.EINVALID, err, "token new: --file")
		}
		_, err = fmt.Fprintln(f, tok)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("token new: write %s: %w", file, err)
		}
		fmt.Fprintf(a.stdout, "# add to serve's configuration, then restart serve:\ntokens:\n  - {name: %s, role: %s, token_file: %s}\n", name, role, file)
		return nil
	}
	fmt.Fprintf(a.stdout, "# add to serve's configuration (or keep the token in a 0600 file: token_file), then restart serve:\ntokens:\n  - {name: %s, role: %s, token: \"%s\"}\n", name, role, tok)
	return nil
}

// validTokenName is the rule of serve's tokens[].name.
func validTokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}
