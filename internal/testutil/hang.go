package testutil

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dbpilot/dbpilot/sandbox"
)

// Hang stops the node's server with SIGSTOP, as a frozen host or a stalled
// process would be: it keeps accepting TCP connections and answers
// nothing. The returned resume sends SIGCONT (once); it is also sent when
// the test ends, so that no server stays stopped.
func Hang(t testing.TB, n *sandbox.Node) (resume func()) {
	t.Helper()
	b, err := os.ReadFile(n.PidFile)
	if err != nil {
		t.Fatalf("testutil: pid of %s: %v", n.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("testutil: pid of %s: %v", n.Name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("testutil: SIGSTOP %s: %v", n.Name, err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}
