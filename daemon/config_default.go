package daemon

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// defaultBase is what DefaultConfigYAML fills in: only the keys Validate
// requires, as placeholders to replace.
const defaultBase = `
credentials: {user: dbpilot}
replication: {user: repl}
clusters: [{name: main, seeds: ["127.0.0.1:3306"]}]
`

// DefaultConfigYAML is `dbpilot serve --print-default-config`: a
// configuration file with every key at the default Validate gives it here
// (the state under $DBPILOT_HOME), the required ones as placeholders, and
// no secret (a password from the environment stays out). Optional blocks
// that are absent by default (coordination.etcd, backup.binlog,
// metrics.remote_write, watchdog rules) are left out:
// docs/config-reference.md lists their keys.
func DefaultConfigYAML() ([]byte, error) {
	var c Config
	if err := yaml.Unmarshal([]byte(defaultBase), &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("default configuration: %w", err)
	}
	b, err := configYAML(&c)
	if err != nil {
		return nil, err
	}
	head := "# dbpilot serve: every key at its default (dbpilot serve --print-default-config).\n" +
		"# Replace credentials, replication and clusters; docs/config-reference.md says what each key means.\n"
	return append([]byte(head), b...), nil
}

// configYAML writes c as a configuration file, without its secrets.
func configYAML(c *Config) ([]byte, error) {
	out := *c
	out.Credentials.Password, out.Replication.Password, out.Token = "", "", ""
	out.Tokens = nil
	for _, t := range c.Tokens {
		t.Token = "" // a secret: only its file is written
		out.Tokens = append(out.Tokens, t)
	}
	var n yaml.Node
	if err := n.Encode(&out); err != nil {
		return nil, err
	}
	pruneNulls(&n)
	return yaml.Marshal(&n)
}

// pruneNulls drops the keys whose value is null (unset optional blocks and
// pointers): written as null, some would load as something else.
func pruneNulls(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := n.Content[i+1]; v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		pruneNulls(c)
	}
}
