package dbpilot

import (
	"fmt"
	"strings"
	"time"
)

// Instance is what dbpilot observed of one server at one moment.
//
// An instance that could not be reached has Reachable=false, LastError set and
// only Key (and whatever was known before) filled in.
type Instance struct {
	Key       InstanceKey `json:"key"`
	Reachable bool        `json:"reachable"`
	LastError string      `json:"last_error,omitempty"`
	// RefusedErrno is set when the server could not be read because it
	// answered with a MySQL error (1045 access denied, 4151 account locked,
	// 1040 too many connections, 1129 host blocked, ...): it is alive, it
	// refuses dbpilot. Reachable is false (nothing could be read).
	RefusedErrno uint16    `json:"refused_errno,omitempty"`
	ObservedAt   time.Time `json:"observed_at"`
	// ReadStartedAt is when the inspection that gave ObservedAt began:
	// its GTID positions were read between the two. Zero when unknown
	// (ObservedAt then stands for both).
	ReadStartedAt time.Time `json:"read_started_at,omitzero"`

	Flavor         Flavor  `json:"flavor,omitempty"`
	Version        Version `json:"version"`
	VersionComment string  `json:"version_comment,omitempty"`
	ServerID       uint32  `json:"server_id"`
	ServerUUID     string  `json:"server_uuid,omitempty"` // MySQL; empty on MariaDB
	Hostname       string  `json:"hostname,omitempty"`
	// Port is the server's own @@port, whatever address reached it.
	Port       int           `json:"port,omitempty"`
	ReportHost string        `json:"report_host,omitempty"`
	ReportPort int           `json:"report_port,omitempty"`
	Uptime     time.Duration `json:"uptime_ns"`

	ReadOnly      bool `json:"read_only"`
	SuperReadOnly bool `json:"super_read_only"` // MySQL only; false on MariaDB

	LogBin            bool   `json:"log_bin"`
	BinlogFormat      string `json:"binlog_format,omitempty"`
	LogReplicaUpdates bool   `json:"log_replica_updates"`
	// SlaveNetTimeout is slave_net_timeout: how long a replica waits for data
	// from its source before it considers the connection dead.
	SlaveNetTimeout time.Duration `json:"slave_net_timeout_ns"`

	GTID     GTIDState            `json:"gtid"`
	Channels []ReplicationChannel `json:"channels,omitempty"`
	SemiSync SemiSyncState        `json:"semi_sync"`

	// Replicas are the servers this instance reports as connected to it
	// (SHOW SLAVE HOSTS / SHOW REPLICAS, or Binlog Dump threads).
	Replicas []InstanceKey `json:"replicas,omitempty"`

	// Galera is the node's Galera state; nil when the server runs no
	// Galera provider (wsrep_on=OFF, or no wsrep_provider).
	Galera *GaleraState `json:"galera,omitempty"`
}

// Answers reports whether the server answered at the last observation:
// dbpilot read it, or it sent a MySQL error packet. Only a server that does
// not answer (refused, reset, no greeting in time) may be dead.
func (i *Instance) Answers() bool { return i.Reachable || i.RefusedErrno != 0 }

// IsGalera reports whether the instance is a Galera node.
func (i *Instance) IsGalera() bool { return i.Galera != nil }

// Identity names the server itself, whatever address reached it: MySQL's
// server_uuid, else (MariaDB has none) its server_id with its own hostname
// and port, which no two running servers share. "" when not known (an
// unreachable instance).
func (i *Instance) Identity() string {
	switch {
	case !i.Reachable:
		return ""
	case i.ServerUUID != "":
		return "uuid:" + i.ServerUUID
	case i.Hostname != "" && i.Port > 0:
		return fmt.Sprintf("id:%d@%s:%d", i.ServerID, strings.ToLower(i.Hostname), i.Port)
	}
	return ""
}

// IsReplica reports whether the instance has at least one replication channel.
func (i *Instance) IsReplica() bool { return len(i.Channels) > 0 }

// Channel returns the channel replicating from source, or nil.
func (i *Instance) Channel(source InstanceKey) *ReplicationChannel {
	for c := range i.Channels {
		if i.Channels[c].Source.Equal(source) {
			return &i.Channels[c]
		}
	}
	return nil
}

// GTIDState is the server's GTID bookkeeping. MariaDB fields are GTID lists
// ("0-1-100,1-2-5"); MySQL fields are GTID sets ("uuid:1-100"). Parse them
// with package gtid.
type GTIDState struct {
	// MySQL: gtid_mode (OFF, ON, ...). MariaDB has GTIDs always on: "ON".
	Mode string `json:"mode,omitempty"`

	// MariaDB.
	BinlogPos  string `json:"binlog_pos,omitempty"`
	SlavePos   string `json:"slave_pos,omitempty"`
	CurrentPos string `json:"current_pos,omitempty"`
	// BinlogState is gtid_binlog_state: the last GTID of every (domain, server)
	// pair in the binlog. Errant transactions are found by comparing it with
	// the source's.
	BinlogState string `json:"binlog_state,omitempty"`
	DomainID    uint32 `json:"domain_id"`
	StrictMode  bool   `json:"strict_mode"`

	// MySQL.
	Executed               string `json:"executed,omitempty"`
	Purged                 string `json:"purged,omitempty"`
	EnforceGTIDConsistency string `json:"enforce_gtid_consistency,omitempty"`
}

// IOState is the state of a replication channel's IO (receiver) thread.
type IOState string

// IO thread states as SHOW SLAVE STATUS reports them.
const (
	IORunning    IOState = "Yes"
	IOStopped    IOState = "No"
	IOConnecting IOState = "Connecting"
	// IOPreparing is MariaDB's state between START SLAVE and the connect.
	IOPreparing IOState = "Preparing"
)

// ReplicationChannel is one row of SHOW ALL SLAVES STATUS (MariaDB) or
// SHOW REPLICA/SLAVE STATUS (MySQL), in one vocabulary.
type ReplicationChannel struct {
	// Name is the MariaDB connection name or MySQL channel name; "" is the default.
	Name   string      `json:"name"`
	Source InstanceKey `json:"source"`
	// PrintedSource is the source as the replica printed it (Master_Host,
	// Master_Port) when discovery knows that server by another address
	// (Source); zero otherwise.
	PrintedSource InstanceKey `json:"printed_source,omitzero"`
	SourceUser    string      `json:"source_user,omitempty"`

	IORunning    IOState `json:"io_running"`
	SQLRunning   bool    `json:"sql_running"`
	IOStateText  string  `json:"io_state,omitempty"`  // Slave_IO_State
	SQLStateText string  `json:"sql_state,omitempty"` // Slave_SQL_Running_State

	LastIOErrno  int    `json:"last_io_errno,omitempty"`
	LastIOError  string `json:"last_io_error,omitempty"`
	LastSQLErrno int    `json:"last_sql_errno,omitempty"`
	LastSQLError string `json:"last_sql_error,omitempty"`

	// SecondsBehind is Seconds_Behind_Master; nil when the server reports NULL.
	SecondsBehind *int64 `json:"seconds_behind,omitempty"`

	// UsingGTID is MariaDB's Using_Gtid (No, Slave_Pos, Current_Pos); for MySQL
	// "Auto_Position" when Auto_Position=1, else "No".
	UsingGTID string `json:"using_gtid,omitempty"`
	// GTIDIOPos is MariaDB's Gtid_IO_Pos: what the IO thread has received.
	GTIDIOPos string `json:"gtid_io_pos,omitempty"`
	// RetrievedGTIDSet and ExecutedGTIDSet are MySQL's.
	RetrievedGTIDSet string `json:"retrieved_gtid_set,omitempty"`
	ExecutedGTIDSet  string `json:"executed_gtid_set,omitempty"`

	SourceLogFile      string `json:"source_log_file,omitempty"`
	ReadSourceLogPos   uint64 `json:"read_source_log_pos,omitempty"`
	RelaySourceLogFile string `json:"relay_source_log_file,omitempty"`
	ExecSourceLogPos   uint64 `json:"exec_source_log_pos,omitempty"`
	RelayLogSpace      uint64 `json:"relay_log_space,omitempty"`

	SourceServerID uint32 `json:"source_server_id,omitempty"`
	SourceUUID     string `json:"source_uuid,omitempty"`
	ConnectRetry   int    `json:"connect_retry,omitempty"`
	// ReceivedHeartbeats counts the heartbeats the IO thread received
	// (MariaDB's Slave_received_heartbeats; 0 when the server does not say).
	ReceivedHeartbeats uint64 `json:"received_heartbeats,omitempty"`
	// SourceSilentFor is set by serve, not read from the server: how long
	// the IO thread has received nothing from its source (no event, no
	// heartbeat) while it says it runs — the source hangs or the link is
	// cut. 0 when unknown or not silent.
	SourceSilentFor time.Duration `json:"source_silent_ns,omitempty"`
	// HeartbeatPeriod is the channel's heartbeat period; 0 when disabled.
	HeartbeatPeriod time.Duration `json:"heartbeat_period_ns"`
	// HeartbeatUnknown is set when the server did not tell the period (MySQL
	// without access to performance_schema): HeartbeatPeriod means nothing.
	HeartbeatUnknown bool   `json:"heartbeat_unknown,omitempty"`
	SQLDelay         int    `json:"sql_delay,omitempty"`
	ParallelMode     string `json:"parallel_mode,omitempty"` // MariaDB
}

// Healthy reports whether both threads run.
func (c *ReplicationChannel) Healthy() bool { return c.IORunning == IORunning && c.SQLRunning }

// Starting reports an IO thread that was just started and is still
// connecting, without an error yet: it is about to be healthy or to fail.
func (c *ReplicationChannel) Starting() bool {
	return (c.IORunning == IOConnecting || c.IORunning == IOPreparing) && c.LastIOErrno == 0 && c.SQLRunning
}

// SemiSyncState is the semi-synchronous replication state of a server. Both
// sides may be enabled on one server (a replica ready to be promoted).
type SemiSyncState struct {
	// Primary side (rpl_semi_sync_master_* / rpl_semi_sync_source_*).
	PrimaryEnabled bool `json:"primary_enabled"`
	PrimaryActive  bool `json:"primary_active"` // status ON: not fallen back to async
	PrimaryClients int  `json:"primary_clients"`
	// PrimaryTimeout is how long a commit waits for an ACK before falling back.
	PrimaryTimeout time.Duration `json:"primary_timeout_ns"`
	// Replica side.
	ReplicaEnabled bool `json:"replica_enabled"`
	ReplicaActive  bool `json:"replica_active"`
}

// Role returns "primary", "replica", "both" or "" for the semi-sync sides enabled.
func (s SemiSyncState) Role() string {
	switch {
	case s.PrimaryEnabled && s.ReplicaEnabled:
		return "both"
	case s.PrimaryEnabled:
		return "primary"
	case s.ReplicaEnabled:
		return "replica"
	}
	return ""
}
