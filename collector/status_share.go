package collector

import (
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// StatusShare keeps, per instance, the status variables of the latest
// global_status run that discovery's inspections (mysql.InspectStatusNames)
// and the semisync collector read too, and when they were read: serve's
// inspector (mysql.Inspector.ShareStatus) and semisync take them instead of
// reading the server's status again every second (the server sums every
// session's counters for each read). It implements
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
// read, and the semisync collector's status variables (ssStatusMetrics,
// in both vocabularies).
var statusShareNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range mysql.InspectStatusNames() {
		m[n] = true
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

// Forget drops what is kept of key (an instance no longer monitored).
func (s *StatusShare) Forget(key dbpilot.InstanceKey) { s.m.Delete(key.Normalized()) }
