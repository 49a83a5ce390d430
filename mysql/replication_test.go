package mysql

import (
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestDialectStatements(t *testing.T) {
	maria := Dialect{Flavor: dbpilot.FlavorMariaDB, Version: dbpilot.Version{Major: 10, Minor: 11, Patch: 6}}
	my80 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 0, Patch: 21}}
	my84 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 8, Minor: 4, Patch: 0}}
	my57 := Dialect{Flavor: dbpilot.FlavorMySQL, Version: dbpilot.Version{Major: 5, Minor: 7, Patch: 44}}
	src := ChangeSource{Source: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 3306}, User: "repl", Password: "p'w", HeartbeatPeriod: 500 * time.Millisecond}
	named := src
	named.Channel = "m1"
	tests := []struct {
		name, got, want string
	}{
		{"maria change", maria.ChangeSourceSQL(src), `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5`},
		{"maria named change", maria.ChangeSourceSQL(named), `CHANGE MASTER 'm1' TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5`},
		{"maria start named", maria.StartReplicaSQL("m1"), `START SLAVE 'm1'`},
		{"maria reset named", maria.ResetReplicaAllSQL("m1"), `RESET SLAVE 'm1' ALL`},
		{"maria show", maria.ShowReplicaStatusSQL(), `SHOW ALL SLAVES STATUS`},
		{"mysql84 change", my84.ChangeSourceSQL(named), `CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=3306, SOURCE_USER='repl', SOURCE_PASSWORD='p\'w', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, SOURCE_HEARTBEAT_PERIOD=0.5, GET_SOURCE_PUBLIC_KEY=1 FOR CHANNEL 'm1'`},
		{"mysql84 start", my84.StartReplicaSQL(""), `START REPLICA`},
		{"mysql84 reset", my84.ResetReplicaAllSQL("m1"), `RESET REPLICA ALL FOR CHANNEL 'm1'`},
		{"mysql57 reset", my57.ResetReplicaAllSQL("m1"), `RESET SLAVE ALL FOR CHANNEL 'm1'`},
		{"maria reset default", maria.ResetReplicaAllSQL(""), `RESET SLAVE ALL`},
		{"mysql84 show", my84.ShowReplicaStatusSQL(), `SHOW REPLICA STATUS`},
		{"mysql84 replicas", my84.ShowReplicasSQL(), `SHOW REPLICAS`},
		{"mysql8021 change", my80.ChangeSourceSQL(src), `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5, GET_MASTER_PUBLIC_KEY=1`},
		{"mysql8021 start", my80.StartReplicaSQL(""), `START SLAVE`},
		{"mysql57 change", my57.ChangeSourceSQL(named), `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=3306, MASTER_USER='repl', MASTER_PASSWORD='p\'w', MASTER_AUTO_POSITION=1, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=0.5 FOR CHANNEL 'm1'`},
		{"mysql57 stop", my57.StopReplicaSQL("m1"), `STOP SLAVE FOR CHANNEL 'm1'`},
		{"mysql57 replicas", my57.ShowReplicasSQL(), `SHOW SLAVE HOSTS`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{`a`: `'a'`, `it's`: `'it\'s'`, `b\s`: `'b\\s'`, "nl\n": `'nl\n'`} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFirstWordsHidesPassword(t *testing.T) {
	got := firstWords("ALTER USER x IDENTIFIED BY 'secret'")
	if got != "ALTER USER x IDENTIFIED" {
		t.Errorf("firstWords = %q", got)
	}
	got = firstWords("SET PASSWORD FOR x = PASSWORD('secret')")
	if want := "SET ..."; got != want {
		t.Errorf("firstWords = %q, want %q", got, want)
	}
}
