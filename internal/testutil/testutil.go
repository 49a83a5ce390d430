// Package testutil starts real MariaDB/MySQL sandboxes for integration tests
// and guarantees they are stopped and removed when the test ends, also when
// it fails.
package testutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// InCI reports whether tests run in CI (CI=true), where an integration test
// whose server cannot start must fail, not skip.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1" || v == "yes"
}

// Home gives the test its own DBPILOT_HOME (short, for Unix socket paths),
// removed at the end of the test. Tests that call it must not be parallel.
func Home(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dbp")
	if err != nil {
		t.Fatalf("testutil: create home: %v", err)
	}
	t.Setenv("DBPILOT_HOME", dir)
	t.Setenv("DBPILOT_TEST_HOME", dir)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// RequireServer skips (or, in CI, fails) the test when no server binary is
// installed, and skips it under -short.
//
// It also silences the MySQL driver's own log (mysql.SilenceDriverLog), as
// the dbpilot command does, so that tests which cut or kill connections
// print only their own output.
func RequireServer(t testing.TB) sandbox.Server {
	t.Helper()
	mysql.SilenceDriverLog()
	if testing.Short() {
		t.Skip("integration test: needs a real server (skipped with -short)")
	}
	s, err := sandbox.FindServer(context.Background(), os.Getenv("DBPILOT_TEST_BASEDIR"))
	if err != nil {
		if InCI() {
			t.Fatalf("CI=true and no server can be found: %v", err)
		}
		t.Skipf("no server installed (run 'make deps'): %v", err)
	}
	return s
}

// MustSandbox deploys a sandbox for the test under its own DBPILOT_HOME (see
// Home; call Home first to share one home between several sandboxes) and
// destroys it when the test ends. Servers are also killed by the kernel if
// the test binary dies. It fails the test when the sandbox cannot start.
func MustSandbox(t testing.TB, spec sandbox.Spec) *sandbox.Descriptor {
	t.Helper()
	RequireServer(t)
	if h := os.Getenv("DBPILOT_HOME"); h == "" || h != os.Getenv("DBPILOT_TEST_HOME") {
		Home(t)
	}
	if spec.Name == "" {
		spec.Name = fmt.Sprintf("t%d", rand.IntN(1_000_000))
	}
	if spec.Basedir == "" {
		spec.Basedir = os.Getenv("DBPILOT_TEST_BASEDIR")
	}
	spec.Process.KillWithParent = true
	spec.Log = func(format string, args ...any) { t.Logf("sandbox: "+format, args...) }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var d *sandbox.Descriptor
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if spec.PortBase == 0 || attempt > 0 {
			// A random block, away from other test packages running at once.
			// Blocks in 12000..18999: below the kernel's ephemeral range, the
			// 20000+ range `sandbox deploy` picks by default, and the fixed
			// bases (19000+) some tests use.
			spec.PortBase = 12000 + rand.IntN(700)*10
		}
		d, err = sandbox.Deploy(ctx, spec)
		if err == nil || dbpilot.ErrorCode(err) != dbpilot.ECONFLICT {
			break
		}
	}
	if err != nil {
		t.Fatalf("testutil: deploy sandbox %s (%s): %v", spec.Name, spec.Topology, err)
	}
	t.Cleanup(func() {
		if err := sandbox.Destroy(d.Name); err != nil && dbpilot.ErrorCode(err) != dbpilot.ENOTFOUND {
			t.Errorf("testutil: destroy sandbox %s: %v", d.Name, err)
		}
	})
	return d
}
