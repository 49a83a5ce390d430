// Package galera runs operations on MariaDB Galera clusters: the safe
// bootstrap of a fully stopped cluster (read every node's saved state,
// recover unknown positions with mariadbd --wsrep-recover, pick the most
// advanced node, start it with --wsrep-new-cluster, then let the others
// join) and the rolling restart (one node at a time, each back to Synced
// before the next). The readers and the planner are pure; the executor drives
// nodes through the Node interface, which sandboxes implement. Galera
// analysis of a running fleet lives in topology/.
package galera

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// GrastateFile is the name of Galera's saved state in a datadir.
const GrastateFile = "grastate.dat"

// ZeroUUID is the cluster UUID of a node that holds no cluster state.
const ZeroUUID = "00000000-0000-0000-0000-000000000000"

// Grastate is what grastate.dat records: the cluster a node belonged to,
// its last committed seqno (-1 while running or after a crash) and whether
// it was the last node to leave the cluster cleanly.
type Grastate struct {
	Version         string `json:"version"`
	UUID            string `json:"uuid"`
	Seqno           int64  `json:"seqno"`
	SafeToBootstrap bool   `json:"safe_to_bootstrap"`
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ParseGrastate reads the text of a grastate.dat file:
//
//	# GALERA saved state
//	version: 2.1
//	uuid:    838f013f-e94d-11f1-8622-3f998d2b70df
//	seqno:   14
//	safe_to_bootstrap: 1
//
// Unknown keys are ignored; uuid and seqno are required.
func ParseGrastate(text string) (Grastate, error) {
	g := Grastate{Seqno: -1}
	var haveUUID, haveSeqno bool
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return g, fmt.Errorf("galera: grastate line %q: want KEY: VALUE", line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "version":
			g.Version = v
		case "uuid":
			if !uuidRE.MatchString(v) {
				return g, fmt.Errorf("galera: grastate uuid %q is not a UUID", v)
			}
			g.UUID, haveUUID = strings.ToLower(v), true
		case "seqno":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < -1 {
				return g, fmt.Errorf("galera: grastate seqno %q is not a number >= -1", v)
			}
			g.Seqno, haveSeqno = n, true
		case "safe_to_bootstrap":
			switch v {
			case "0":
			case "1":
				g.SafeToBootstrap = true
			default:
				return g, fmt.Errorf("galera: grastate safe_to_bootstrap %q: want 0 or 1", v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return g, fmt.Errorf("galera: read grastate: %w", err)
	}
	if !haveUUID || !haveSeqno {
		return g, fmt.Errorf("galera: grastate lacks uuid or seqno")
	}
	return g, nil
}

// ReadGrastate reads and parses a grastate.dat file. A missing file is an
// ENOTFOUND error.
func ReadGrastate(path string) (Grastate, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Grastate{Seqno: -1}, dbpilot.Errorf(dbpilot.ENOTFOUND, "galera: no %s (the node never joined a cluster, or its datadir was wiped)", path)
	}
	if err != nil {
		return Grastate{Seqno: -1}, fmt.Errorf("galera: read %s: %w", path, err)
	}
	g, err := ParseGrastate(string(b))
	if err != nil {
		return g, dbpilot.WrapError(dbpilot.EINVALID, err, "galera: %s is damaged", path)
	}
	return g, nil
}

var safeLineRE = regexp.MustCompile(`(?m)^safe_to_bootstrap:[ \t]*[01][ \t\r]*$`)

// MarkSafeToBootstrap returns the text of a grastate.dat with
// safe_to_bootstrap set to 1 (added when absent), every other line kept.
func MarkSafeToBootstrap(text string) string {
	if safeLineRE.MatchString(text) {
		return safeLineRE.ReplaceAllString(text, "safe_to_bootstrap: 1")
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + "safe_to_bootstrap: 1\n"
}

// SetSafeToBootstrap rewrites the grastate.dat at path with
// safe_to_bootstrap: 1, atomically.
func SetSafeToBootstrap(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("galera: read %s: %w", path, err)
	}
	if _, err := ParseGrastate(string(b)); err != nil {
		return dbpilot.WrapError(dbpilot.EINVALID, err, "galera: %s is damaged; not editing it", path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("galera: stat %s: %w", path, err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+GrastateFile+".dbpilot")
	if err := os.WriteFile(tmp, []byte(MarkSafeToBootstrap(string(b))), st.Mode().Perm()); err != nil {
		return fmt.Errorf("galera: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("galera: replace %s: %w", path, err)
	}
	return nil
}

// recoveredRE matches the line mariadbd --wsrep-recover logs, e.g.
//
//	[Note] WSREP: Recovered position: 838f013f-e94d-11f1-8622-3f998d2b70df:19,0-0-0
//
// (MariaDB 10.5+ appends the GTID position after a comma.)
var recoveredRE = regexp.MustCompile(`WSREP: Recovered position:?\s+([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):(-?\d+)(?:,(\S+))?`)

// Recovered is a position found by mariadbd --wsrep-recover.
type Recovered struct {
	UUID  string `json:"uuid"`
	Seqno int64  `json:"seqno"`
	GTID  string `json:"gtid,omitempty"` // MariaDB's GTID position, when logged
}

// ParseRecovered finds the last "WSREP: Recovered position: UUID:SEQNO"
// line in the output (or error log) of mariadbd --wsrep-recover.
func ParseRecovered(output string) (Recovered, error) {
	m := recoveredRE.FindAllStringSubmatch(output, -1)
	if len(m) == 0 {
		return Recovered{Seqno: -1}, fmt.Errorf("galera: no \"WSREP: Recovered position\" line in the --wsrep-recover output")
	}
	last := m[len(m)-1]
	seqno, err := strconv.ParseInt(last[2], 10, 64)
	if err != nil {
		return Recovered{Seqno: -1}, fmt.Errorf("galera: recovered seqno %q: %w", last[2], err)
	}
	return Recovered{UUID: strings.ToLower(last[1]), Seqno: seqno, GTID: last[3]}, nil
}

// explainRE picks the error-log lines that explain a failed join or state
// transfer: errors, state transfer failures and progress, aborts.
var explainRE = regexp.MustCompile(`\[ERROR\]|WSREP_SST: \[(ERROR|WARNING)\]|\[Warning\] WSREP: .*(failed|State transfer|SST)|\[Note\] WSREP: (State transfer required|.*non-primary)|rsync error|mariabackup: Error|[Aa]borting`)

// noiseRE drops lines that match explainRE but say nothing about a failure.
var noiseRE = regexp.MustCompile(`wsrep_sst_receive_address is set to|Failed to establish connection|access file\(|restore pc from disk failed|ist\.recv_addr|IST receiver addr`)

// stampRE matches the timestamps that make repeated lines differ.
var stampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d +\d+:\d\d:\d\d \d+ |\(\d{8} \d\d:\d\d:\d\d\.\d+\)$`)

// ExplainLog returns the lines of an error-log excerpt that explain why a
// node failed to join or to transfer state: errors, state-transfer failures
// and the node's view of the cluster, repeated lines once, at most max of
// them (the last ones). Callers pass the part of the log written since the
// node was started.
func ExplainLog(text string, max int) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r ")
		if line == "" || !explainRE.MatchString(line) || noiseRE.MatchString(line) {
			continue
		}
		key := stampRE.ReplaceAllString(line, "")
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		out = append(out, line)
	}
	if max > 0 && len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}
