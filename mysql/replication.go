package mysql

import (
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
)

// ChangeSource describes where a channel replicates from.
type ChangeSource struct {
	Channel         string // MariaDB connection name or MySQL channel; "" = default
	Source          dbpilot.InstanceKey
	User            string
	Password        string
	ConnectRetry    time.Duration // default 1 s
	HeartbeatPeriod time.Duration // default 1 s
	// TLS is the replica's TLS to its source (MASTER_SSL/SOURCE_SSL
	// options; the files are paths on the replica's host). Nil leaves the
	// channel's SSL options as they are; mode disabled sets MASTER_SSL=0.
	TLS *TLSSettings
	// GTID positioning: MariaDB MASTER_USE_GTID=slave_pos, MySQL auto-position.
	// dbpilot always replicates with GTID.
}

// changeSourceTimes returns the connect retry in whole seconds (at least 1)
// and the heartbeat period as a decimal number of seconds.
func changeSourceTimes(c ChangeSource) (retry int, heartbeat string) {
	retry = int(c.ConnectRetry / time.Second)
	if retry < 1 {
		retry = 1
	}
	return retry, seconds(c.HeartbeatPeriod, time.Second)
}

// sslOptions returns the SSL options of a CHANGE MASTER (word MASTER) or
// CHANGE REPLICATION SOURCE (word SOURCE) for t: MASTER_SSL=1 with the
// CA, certificate and key (empty clears a value left from before), and
// MASTER_SSL_VERIFY_SERVER_CERT=1 for verify-identity (0 otherwise: the
// other modes check no name). Nil: none.
func sslOptions(word string, t *TLSSettings) string {
	if t == nil {
		return ""
	}
	if t.EffectiveMode() == TLSDisabled {
		return fmt.Sprintf(", %s_SSL=0", word)
	}
	verify := 0
	if t.EffectiveMode() == TLSVerifyIdentity {
		verify = 1
	}
	return fmt.Sprintf(", %[1]s_SSL=1, %[1]s_SSL_CA=%[2]s, %[1]s_SSL_CERT=%[3]s, %[1]s_SSL_KEY=%[4]s, %[1]s_SSL_VERIFY_SERVER_CERT=%[5]d",
		word, Quote(t.CA), Quote(t.Cert), Quote(t.Key), verify)
}

// ValidateReplicationTLS checks replication TLS settings: the mode (the
// files are on the servers, not checked here) and no server_name, which
// replicas cannot take. where names the settings ("replication.tls").
func ValidateReplicationTLS(s TLSSettings, where string) error {
	name := (&TLS{where: where}).setting
	switch s.EffectiveMode() {
	case TLSDisabled, TLSPreferred, TLSRequired, TLSVerifyCA, TLSVerifyIdentity:
	default:
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: %q: use %s", name("mode"), s.Mode, TLSModes)
	}
	if s.ServerName != "" {
		return dbpilot.Errorf(dbpilot.EINVALID, "%s: replicas cannot take it: they verify the source's host as CHANGE MASTER names it (leave it out)", name("server_name"))
	}
	if (s.Cert == "") != (s.Key == "") {
		return dbpilot.Errorf(dbpilot.EINVALID, "%s and %s: give both the client certificate and its key, or neither", name("cert"), name("key"))
	}
	return nil
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

// plainReadOnly sets read_only alone.
func plainReadOnly(on bool) []string {
	if on {
		return []string{"SET GLOBAL read_only=ON"}
	}
	return []string{"SET GLOBAL read_only=OFF"}
}
