package tui

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/mysql"
)

func TestParseChannels(t *testing.T) {
	rows := []map[string]string{
		// MariaDB SHOW ALL SLAVES STATUS.
		{"Connection_name": "", "Master_Host": "127.0.0.1", "Master_Port": "16501", "Slave_IO_Running": "Yes",
			"Slave_SQL_Running": "Yes", "Seconds_Behind_Master": "3", "Relay_Log_Space": "10125"},
		// MySQL 8.0.22+ SHOW REPLICA STATUS, a stopped SQL thread (lag NULL: absent).
		{"Channel_Name": "east", "Source_Host": "db1", "Source_Port": "3306", "Replica_IO_Running": "Connecting",
			"Replica_SQL_Running": "No", "Relay_Log_Space": "157"},
		// A channel reset without a source is no channel.
		{"Channel_Name": "gone", "Source_Host": ""},
	}
	got := parseChannels(rows)
	want := []Channel{
		{Name: "", Source: "127.0.0.1:16501", IORunning: "Yes", SQLRunning: "Yes", Lag: N(3), RelayLogSpace: N(10125)},
		{Name: "east", Source: "db1:3306", IORunning: "Connecting", SQLRunning: "No", RelayLogSpace: N(157)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("channel %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestDirectUnreachable: a server that does not answer is a row with the
// connection error, read again on the next poll.
func TestDirectUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	d := NewDirect([]dbpilot.InstanceKey{{Host: "127.0.0.1", Port: port}}, mysql.Options{ConnectTimeout: 200 * time.Millisecond})
	defer d.Close()
	for range 2 {
		f, err := d.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Rows) != 1 || !strings.Contains(f.Rows[0].Err, "connection refused") || !f.Warmup {
			t.Fatalf("rows %+v warmup %v", f.Rows, f.Warmup)
		}
	}
	if got := d.Describe(); got != "direct, 1 instance" {
		t.Errorf("Describe() = %q", got)
	}
}
