package topology

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot"
)

// vocab names a server's variables and statements as its flavor and version
// spell them, so that a problem's advice can be pasted.
type vocab struct{ in *dbpilot.Instance }

// newWords reports whether MySQL's replica/source variable names apply (8.0.26+).
func (v vocab) newWords() bool {
	return v.in.Flavor.IsMySQLFamily() && v.in.Version.AtLeast(8, 0, 26)
}

func (v vocab) netTimeout() string {
	if v.newWords() {
		return "replica_net_timeout"
	}
	return "slave_net_timeout"
}

func (v vocab) logReplicaUpdates() string {
	if v.newWords() {
		return "log_replica_updates"
	}
	return "log_slave_updates"
}

// semiPrimary returns the semi-sync primary-side prefix: rpl_semi_sync_master
// or rpl_semi_sync_source.
func (v vocab) semiPrimary() string {
	if v.newWords() {
		return "rpl_semi_sync_source"
	}
	return "rpl_semi_sync_master"
}

// semiReplica returns the semi-sync replica-side prefix.
func (v vocab) semiReplica() string {
	if v.newWords() {
		return "rpl_semi_sync_replica"
	}
	return "rpl_semi_sync_slave"
}

// semiPrimaryStatus returns the primary-side status variable prefix.
func (v vocab) semiPrimaryStatus() string {
	if v.newWords() {
		return "Rpl_semi_sync_source"
	}
	return "Rpl_semi_sync_master"
}

// changeSource returns a statement setting options of one channel, e.g.
// "CHANGE MASTER 'm1' TO MASTER_HEARTBEAT_PERIOD=5".
func (v vocab) changeSource(channel, option string, value any) string {
	switch {
	case v.in.Flavor == dbpilot.FlavorMariaDB:
		conn := ""
		if channel != "" {
			conn = fmt.Sprintf("'%s' ", channel)
		}
		return fmt.Sprintf("CHANGE MASTER %sTO MASTER_%s=%v", conn, option, value)
	case v.in.Version.AtLeast(8, 0, 23):
		return fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_%s=%v%s", option, value, forChannel(channel))
	default:
		return fmt.Sprintf("CHANGE MASTER TO MASTER_%s=%v%s", option, value, forChannel(channel))
	}
}

func forChannel(channel string) string {
	if channel == "" {
		return ""
	}
	return fmt.Sprintf(" FOR CHANNEL '%s'", channel)
}

// onOff formats a boolean setting.
func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// seconds formats a duration in seconds: "60s", "0.5s".
func seconds(d time.Duration) string { return num(d) + "s" }

// num formats a duration as a number of seconds: "60", "0.5".
func num(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
