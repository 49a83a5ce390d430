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
	// DomainThreads is slave_domain_parallel_threads: the most of the
	// Threads one GTID domain's transactions may hold at once (0: no
	// limit, MariaDB's default), so that one busy domain does not starve
	// the others. Below Threads only: at or above it, it limits nothing.
	DomainThreads int `json:"domain_threads,omitempty"`
}

func (s Setting) String() string {
	if s.Threads == 0 {
		return "single-threaded"
	}
	if s.DomainThreads > 0 {
		return fmt.Sprintf("%s, %d threads, %d a domain", s.Mode, s.Threads, s.DomainThreads)
	}
	return fmt.Sprintf("%s, %d threads", s.Mode, s.Threads)
}

// Settings crosses modes with thread counts and, when domainThreads is
// given, with slave_domain_parallel_threads (0: no limit; a value not
// below a thread count is left out of that count's settings: it would
// limit nothing). Threads 0 (single-threaded) is always there, first and
// once: it is the reference for the speed-up and the data check.
func Settings(modes []string, threads, domainThreads []int) ([]Setting, error) {
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
	for _, d := range domainThreads {
		if d < 0 || d > 16383 {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: --domain-threads %d: want 0..16383 (slave_domain_parallel_threads; 0: no limit)", d)
		}
	}
	if len(domainThreads) == 0 {
		domainThreads = []int{0}
	}
	for _, n := range threads {
		if n == 0 {
			continue
		}
		for _, m := range modes {
			for _, d := range domainThreads {
				if d >= n {
					continue
				}
				s := Setting{Mode: strings.ToLower(strings.TrimSpace(m)), Threads: n, DomainThreads: d}
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 1 && len(threads) > 0 && slices.ContainsFunc(threads, func(n int) bool { return n > 0 }) {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: --domain-threads %v: each is at or above every --threads count %v, so no parallel setting is left (a domain limit must be below the threads to limit anything; 0 is no limit)", domainThreads, threads)
	}
	return out, nil
}

// ParseThreads reads a comma-separated list of thread counts; flag names
// the option in errors.
func ParseThreads(flag, s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "replay: %s %q: not a number", flag, p)
		}
		out = append(out, n)
	}
	return out, nil
}
