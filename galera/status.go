package galera

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

// Galera's local states (wsrep_local_state).
const (
	StateJoining = 1
	StateDonor   = 2
	StateJoined  = 3
	StateSynced  = 4
)

// Status is a node's wsrep status as the executor needs it.
type Status struct {
	LocalState        int    `json:"local_state"`         // 4 = Synced
	LocalStateComment string `json:"local_state_comment"` // Synced, Donor/Desynced, Joining, ...
	ClusterStatus     string `json:"cluster_status"`      // Primary, non-Primary, Disconnected
	ClusterSize       int    `json:"cluster_size"`
	ClusterStateUUID  string `json:"cluster_state_uuid"`
	Ready             bool   `json:"ready"`
	Connected         bool   `json:"connected"`
	RecvQueue         int64  `json:"local_recv_queue"`
	LastCommitted     int64  `json:"last_committed"`
	ProviderName      string `json:"provider_name,omitempty"`
}

// Synced reports whether the node is a Synced member of a Primary component
// that accepts queries.
func (s Status) Synced() bool {
	return s.LocalState == StateSynced && s.ClusterStatus == "Primary" && s.Ready
}

// String summarizes the status in one line.
func (s Status) String() string {
	comment := s.LocalStateComment
	if comment == "" {
		comment = fmt.Sprintf("state %d", s.LocalState)
	}
	return fmt.Sprintf("%s, %s, cluster size %d, ready %s, recv queue %d", comment, s.ClusterStatus, s.ClusterSize, onOff(s.Ready), s.RecvQueue)
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// ErrNotGalera is the error code-carrying message for a server without a
// Galera provider; ParseStatus and QueryStatus return an EUNSUPPORTED error
// that starts with it.
const ErrNotGalera = "not a Galera node"

// ParseStatus reads the rows of SHOW GLOBAL STATUS LIKE 'wsrep%' (name →
// value). A server without a Galera provider (no wsrep rows, or MariaDB's
// placeholders with wsrep_provider_name empty and wsrep_ready OFF) is an
// EUNSUPPORTED error.
func ParseStatus(vals map[string]string) (Status, error) {
	get := func(k string) string { return strings.TrimSpace(vals[k]) }
	if len(vals) == 0 || get("wsrep_provider_name") == "" && get("wsrep_local_state_uuid") == "" && get("wsrep_cluster_state_uuid") == "" {
		return Status{}, dbpilot.Errorf(dbpilot.EUNSUPPORTED, "%s: the server has no wsrep provider loaded (wsrep_on=OFF or wsrep_provider=none)", ErrNotGalera)
	}
	atoi := func(k string) int64 {
		n, _ := strconv.ParseInt(get(k), 10, 64)
		return n
	}
	return Status{
		LocalState:        int(atoi("wsrep_local_state")),
		LocalStateComment: get("wsrep_local_state_comment"),
		ClusterStatus:     get("wsrep_cluster_status"),
		ClusterSize:       int(atoi("wsrep_cluster_size")),
		ClusterStateUUID:  get("wsrep_cluster_state_uuid"),
		Ready:             strings.EqualFold(get("wsrep_ready"), "ON"),
		Connected:         strings.EqualFold(get("wsrep_connected"), "ON"),
		RecvQueue:         atoi("wsrep_local_recv_queue"),
		LastCommitted:     atoi("wsrep_last_committed"),
		ProviderName:      get("wsrep_provider_name"),
	}, nil
}

// QueryStatus reads a node's wsrep status. The node's address names it in
// errors; a server that is not a Galera node gives an EUNSUPPORTED error.
func QueryStatus(ctx context.Context, db *mysql.DB, key dbpilot.InstanceKey) (Status, error) {
	rows, err := db.Query(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep%'")
	if err != nil {
		return Status{}, fmt.Errorf("galera: read wsrep status of %s: %w", key, err)
	}
	vals := map[string]string{}
	for _, r := range rows.Values {
		if len(r) >= 2 {
			vals[strings.ToLower(mysql.Str(r, 0))] = mysql.Str(r, 1)
		}
	}
	st, err := ParseStatus(vals)
	if err != nil {
		return st, dbpilot.WrapError(dbpilot.EUNSUPPORTED, err, "galera: %s", key)
	}
	return st, nil
}
