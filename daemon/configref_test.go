package daemon_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/configref"
)

// TestConfigReference regenerates docs/config-reference.md from the config
// types and fails when the committed file differs: a key added, removed,
// renamed, re-typed, re-defaulted or re-documented without `go generate
// ./daemon` leaves the reference stale.
func TestConfigReference(t *testing.T) {
	want, err := configref.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/config-reference.md")
	if err != nil {
		t.Fatalf("%v (run: go generate ./daemon)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/config-reference.md is stale (run: go generate ./daemon); first difference at line %d:\n file: %s\n code: %s", i+1, g, w)
			}
		}
	}
	// The reference covers every key, with the defaults Validate fills in.
	for _, row := range []string{
		"| `listen` | string | `127.0.0.1:7070` |",
		"| `detection.probe_timeout` | duration | `400ms` |",
		"| `recovery.block_period` | duration | `10m` |",
		"| `clusters[].promotion_rules` | map of string to string | — |",
		"| `metrics.remote_write[].queue.capacity` | int | `500000` |",
		"| `coordination.etcd.lease_ttl` | duration | `5s` |",
		"| `watchdog.rules_file` | string | — |",
		"| `backup.binlog.retention` | duration | `168h` |",
	} {
		if !bytes.Contains(want, []byte(row)) {
			t.Errorf("reference lacks the row %q", row)
		}
	}
}
