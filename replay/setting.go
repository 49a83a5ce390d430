package replay

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// Modes are MariaDB's slave_parallel_mode values replay accepts.
var Modes = []string{"conservative", "optimistic", "aggressive", "minimal"}

// Setting is one parallel replication setting replayed.
type Setting struct {
	// Mode is slave_parallel_mode; empty when Threads is 0.
	Mode string `json:"mode,omitempty"`
	// Threads is slave_parallel_threads; 0 is single-threaded (the SQL
	// thread applies every transaction itself): the reference run.
	Threads int `json:"threads"`
}

func (s Setting) String() string {
	if s.Threads == 0 {
		return "single-threaded"
	}
	return fmt.Sprintf("%s, %d threads", s.Mode, s.Threads)
}

// Settings crosses modes with thread counts. Threads 0 (single-threaded)
// is always there, first and once: it is the reference for the speed-up
// and the data check.
func Settings(modes []string, threads []int) ([]Setting, error) {
	out := []Setting{{}}
	for _, m := range modes {
		m = strings.ToLower(strings.TrimSpace(m))
		if !slices.Contains(Modes, m) {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: --modes %q: not a parallel mode; give some of %s", m, strings.Join(Modes, ","))
		}
	}
	for _, n := range threads {
		if n < 0 || n > 16383 {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: --threads %d: want 0..16383 (slave_parallel_threads)", n)
		}
	}
	for _, n := range threads {
		if n == 0 {
			continue
		}
		for _, m := range modes {
			s := Setting{Mode: strings.ToLower(strings.TrimSpace(m)), Threads: n}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// ParseThreads reads a comma-separated list of thread counts.
func ParseThreads(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: --threads %q: not a number", p)
		}
		out = append(out, n)
	}
	return out, nil
}
