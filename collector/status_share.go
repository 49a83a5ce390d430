package collector

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// StatusShare keeps, per instance, the status variables of the latest
// global_status run that discovery's inspections (mysql.InspectStatusNames)
// and the semisync collector read too, and when they were read: serve's
// inspector (mysql.Inspector.ShareStatus) and semisync take them instead of
// reading the server's status again every second (the server sums every
// session's counters for each read). An instance's entry stays after it
// leaves the fleet (a few hundred bytes), unused once older than the
// readers' ages. It implements
// mysql.StatusShare; its methods are safe for concurrent use.
type StatusShare struct {
	m sync.Map // normalized InstanceKey → *sharedStatus
}

type sharedStatus struct {
	status map[string]string // never modified once stored
	at     time.Time
}

// NewStatusShare returns an empty share.
func NewStatusShare() *StatusShare { return &StatusShare{} }

var _ mysql.StatusShare = (*StatusShare)(nil)

// statusShareNames are the variables kept, lower-cased: what inspections
// read, and the status variables of the innodb, binlog and semisync
// collectors (ssStatusMetrics in both vocabularies).
var statusShareNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range mysql.InspectStatusNames() {
		m[n] = true
	}
	for _, n := range innoStatusNames {
		m[strings.ToLower(n)] = true
	}
	for _, n := range blStatusNames {
		m[strings.ToLower(n)] = true
	}
	for key := range ssStatusMetrics {
		side, rest, _ := strings.Cut(key, "/")
		prefixes := []string{"master_", "source_"}
		if side == "replica" {
			prefixes = []string{"slave_", "replica_"}
		}
		for _, p := range prefixes {
			m["rpl_semi_sync_"+p+rest] = true
		}
	}
	return m
}()

// SharedStatus returns the status of key read last, and when; nil and the
// zero time when there is none.
func (s *StatusShare) SharedStatus(key dbpilot.InstanceKey) (map[string]string, time.Time) {
	v, ok := s.m.Load(key.Normalized())
	if !ok {
		return nil, time.Time{}
	}
	st := v.(*sharedStatus)
	return st.status, st.at
}

// put keeps what r (rows of name, value, as SHOW GLOBAL STATUS) holds of
// statusShareNames, read at at.
func (s *StatusShare) put(key dbpilot.InstanceKey, r *mysql.Rows, at time.Time) {
	st := make(map[string]string, len(statusShareNames))
	for _, row := range r.Values {
		if len(row) < 2 || row[0] == nil || row[1] == nil {
			continue
		}
		// Names come in their server's case (Uptime, Slaves_connected):
		// the description of each name says whether it is kept.
		if d := gsDescFor(*row[0]); d.share != "" {
			st[d.share] = *row[1]
		}
	}
	s.m.Store(key.Normalized(), &sharedStatus{status: st, at: at})
}

// statusShared is embedded by the collectors that take status variables
// from a StatusShare (SetStatusShare) instead of reading them.
type statusShared struct {
	share atomic.Pointer[StatusShare]
}

// SetStatusShare makes runs take their status variables from share when
// global_status read them at most sharedStatusAge ago.
func (c *statusShared) SetStatusShare(share *StatusShare) { c.share.Store(share) }

// sharedStatusAge is how old a shared status the innodb and binlog
// collectors take (global_status reads it every second).
const sharedStatusAge = 1500 * time.Millisecond

// sharedRows returns the variables of names (as the server spells them)
// that the share holds of key, as rows of name and value like SHOW GLOBAL
// STATUS's; nil when there is no share or its status is older than
// sharedStatusAge.
func (c *statusShared) sharedRows(key dbpilot.InstanceKey, names []string) *mysql.Rows {
	share := c.share.Load()
	if share == nil {
		return nil
	}
	st, at := share.SharedStatus(key)
	if st == nil || time.Since(at) > sharedStatusAge {
		return nil
	}
	r := &mysql.Rows{Columns: []string{"Variable_name", "Value"}}
	for _, n := range names {
		if v, ok := st[strings.ToLower(n)]; ok {
			r.Values = append(r.Values, []*string{&n, &v})
		}
	}
	return r
}
