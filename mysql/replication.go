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
