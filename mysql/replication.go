package mysql

import (
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Dialect picks statement vocabulary for a flavor and version: MariaDB's
// CHANGE MASTER/SHOW ALL SLAVES STATUS with named connections, MySQL 8.0.22+'s
// REPLICA/SOURCE words and channels, and the older MySQL SLAVE/MASTER words.
type Dialect struct {
	Flavor  dbpilot.Flavor
	Version dbpilot.Version
}

// MariaDB reports whether the dialect is MariaDB's.
func (d Dialect) MariaDB() bool { return d.Flavor == dbpilot.FlavorMariaDB }

// replicaWords reports whether MySQL's START/STOP/SHOW REPLICA (8.0.22+) apply.
func (d Dialect) replicaWords() bool { return !d.MariaDB() && d.Version.AtLeast(8, 0, 22) }

// sourceWords reports whether MySQL's CHANGE REPLICATION SOURCE TO (8.0.23+) applies.
func (d Dialect) sourceWords() bool { return !d.MariaDB() && d.Version.AtLeast(8, 0, 23) }

// ChangeSource describes where a channel replicates from.
type ChangeSource struct {
	Channel         string // MariaDB connection name or MySQL channel; "" = default
	Source          dbpilot.InstanceKey
	User            string
	Password        string
	ConnectRetry    time.Duration // default 1 s
	HeartbeatPeriod time.Duration // default 1 s
	// GTID positioning: MariaDB MASTER_USE_GTID=slave_pos, MySQL auto-position.
	// dbpilot always replicates with GTID.
}

// Quote returns s as a single-quoted SQL string literal.
func Quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(s) + "'"
}

func seconds(d, def time.Duration) string {
	if d <= 0 {
		d = def
	}
	s := fmt.Sprintf("%.3f", d.Seconds())
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// ChangeSourceSQL returns the statement that points a channel at a source.
func (d Dialect) ChangeSourceSQL(c ChangeSource) string {
	retry := int(c.ConnectRetry / time.Second)
	if retry < 1 {
		retry = 1
	}
	hb := seconds(c.HeartbeatPeriod, time.Second)
	if d.MariaDB() {
		conn := ""
		if c.Channel != "" {
			conn = Quote(c.Channel) + " "
		}
		return fmt.Sprintf("CHANGE MASTER %sTO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=%d, MASTER_HEARTBEAT_PERIOD=%s",
			conn, Quote(c.Source.Host), c.Source.Port, Quote(c.User), Quote(c.Password), retry, hb)
	}
	channel := ""
	if c.Channel != "" {
		channel = " FOR CHANNEL " + Quote(c.Channel)
	}
	if d.sourceWords() {
		return fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%d, SOURCE_USER=%s, SOURCE_PASSWORD=%s, SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=%d, SOURCE_HEARTBEAT_PERIOD=%s, GET_SOURCE_PUBLIC_KEY=1%s",
			Quote(c.Source.Host), c.Source.Port, Quote(c.User), Quote(c.Password), retry, hb, channel)
	}
	getKey := ""
	if d.Version.AtLeast(8, 0, 0) {
		getKey = ", GET_MASTER_PUBLIC_KEY=1"
	}
	return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=%d, MASTER_HEARTBEAT_PERIOD=%s%s%s",
		Quote(c.Source.Host), c.Source.Port, Quote(c.User), Quote(c.Password), retry, hb, getKey, channel)
}

func (d Dialect) channelSuffix(verb, channel string) string {
	if d.MariaDB() {
		if channel == "" {
			return verb
		}
		// MariaDB: START SLAVE 'name'
		return verb + " " + Quote(channel)
	}
	if channel == "" {
		return verb
	}
	return verb + " FOR CHANNEL " + Quote(channel)
}

// StartReplicaSQL starts one channel.
func (d Dialect) StartReplicaSQL(channel string) string {
	if d.replicaWords() {
		return d.channelSuffix("START REPLICA", channel)
	}
	return d.channelSuffix("START SLAVE", channel)
}

// StopReplicaSQL stops one channel.
func (d Dialect) StopReplicaSQL(channel string) string {
	if d.replicaWords() {
		return d.channelSuffix("STOP REPLICA", channel)
	}
	return d.channelSuffix("STOP SLAVE", channel)
}

// ResetReplicaAllSQL forgets a channel entirely.
func (d Dialect) ResetReplicaAllSQL(channel string) string {
	switch {
	case d.MariaDB() && channel != "":
		return "RESET SLAVE " + Quote(channel) + " ALL"
	case d.MariaDB():
		return "RESET SLAVE ALL"
	case d.replicaWords():
		// MySQL: RESET REPLICA ALL [FOR CHANNEL 'name']
		return d.channelSuffix("RESET REPLICA ALL", channel)
	}
	return d.channelSuffix("RESET SLAVE ALL", channel)
}

// ShowReplicaStatusSQL returns the statement listing every channel.
func (d Dialect) ShowReplicaStatusSQL() string {
	switch {
	case d.MariaDB():
		return "SHOW ALL SLAVES STATUS"
	case d.replicaWords():
		return "SHOW REPLICA STATUS"
	}
	return "SHOW SLAVE STATUS"
}

// ShowReplicasSQL returns the statement listing registered replicas.
func (d Dialect) ShowReplicasSQL() string {
	if d.replicaWords() {
		return "SHOW REPLICAS"
	}
	return "SHOW SLAVE HOSTS"
}
