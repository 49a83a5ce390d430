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

// TestChannelsFromReplicaStatus: replica status rows, as mysql parses them
// for Inspect, become the row's channels and lag.
func TestChannelsFromReplicaStatus(t *testing.T) {
	// MariaDB SHOW ALL SLAVES STATUS.
	maria, err := mysql.ParseReplicaStatusRows(dbpilot.FlavorMariaDB, []map[string]string{
		{"Connection_name": "", "Master_Host": "127.0.0.1", "Master_Port": "16501", "Slave_IO_Running": "Yes",
			"Slave_SQL_Running": "Yes", "Seconds_Behind_Master": "3", "Relay_Log_Space": "10125"},
	})
	if err != nil {
		t.Fatal(err)
	}
	my, err := mysql.ParseReplicaStatusRows(dbpilot.FlavorMySQL, []map[string]string{
		// MySQL 8.0.22+ SHOW REPLICA STATUS, a stopped SQL thread (lag NULL: absent).
		{"Channel_Name": "east", "Source_Host": "db1", "Source_Port": "3306", "Replica_IO_Running": "Connecting",
			"Replica_SQL_Running": "No", "Relay_Log_Space": "157"},
		// A channel reset without a source is no channel.
		{"Channel_Name": "gone", "Source_Host": ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Channel{
		{Name: "", Source: "127.0.0.1:16501", IORunning: "Yes", SQLRunning: "Yes", Lag: N(3), RelayLogSpace: N(10125)},
		{Name: "east", Source: "db1:3306", IORunning: "Connecting", SQLRunning: "No", RelayLogSpace: N(157)},
	}
	inst := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 16502}, Reachable: true, Channels: append(maria, my...)}
	r := rowFromInstance(inst)
	if len(r.Channels) != len(want) {
		t.Fatalf("got %+v", r.Channels)
	}
	for i := range want {
		if r.Channels[i] != want[i] {
			t.Errorf("channel %d = %+v, want %+v", i, r.Channels[i], want[i])
		}
	}
	// One channel's lag is NULL: the row's lag is unknown.
	if r.Lag.Valid || !r.LagNull {
		t.Errorf("lag %+v null %v", r.Lag, r.LagNull)
	}
	inst.Channels = maria
	if r := rowFromInstance(inst); r.Lag != N(3) || r.LagNull {
		t.Errorf("lag %+v null %v", r.Lag, r.LagNull)
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
