package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultConfigYAML: serve --print-default-config prints a file that
// serve --config loads as it is, with every default it prints (writing the
// loaded configuration again gives the same file), and no password taken
// from the environment.
func TestDefaultConfigYAML(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DBPILOT_HOME", home)
	t.Setenv("DBPILOT_PASSWORD", "s3cr3t-env-pw")
	b, err := DefaultConfigYAML()
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Contains(text, "s3cr3t-env-pw") {
		t.Fatalf("the default configuration prints the password from the environment:\n%s", text)
	}
	for _, want := range []string{
		"listen: 127.0.0.1:7070\n",
		"state: " + filepath.Join(home, "state.db") + "\n",
		"poll_interval: 1s\n",
		"probe_timeout: 400ms\n",
		"drain_timeout: 5s\n",
		"on_timeout: abort\n",
		"global_variables: essential\n",
		"discovery_concurrency: 8\n",
		"top: 200\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("default configuration lacks %q:\n%s", want, text)
		}
	}
	path := filepath.Join(t.TempDir(), "dbpilot.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("serve --config refuses what --print-default-config printed: %v\n%s", err, text)
	}
	again, err := configYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	if body := text[strings.Index(text, "listen:"):]; string(again) != body {
		t.Errorf("loading the default configuration changes it:\nprinted:\n%s\nloaded:\n%s", body, again)
	}
}
