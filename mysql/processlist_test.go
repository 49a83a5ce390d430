package mysql

import (
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestProcesslistSQL(t *testing.T) {
	if q := ProcesslistSQL(dbpilot.FlavorMariaDB); !strings.Contains(q, "p.TIME_MS AS TIME_MS") || !strings.Contains(q, "LEFT JOIN information_schema.INNODB_TRX") {
		t.Errorf("MariaDB: %s", q)
	}
	if q := ProcesslistSQL(dbpilot.FlavorMySQL); !strings.Contains(q, "p.TIME*1000 AS TIME_MS") || strings.Contains(q, "p.TIME_MS") {
		t.Errorf("MySQL: %s", q)
	}
}

func TestParseProcesslist(t *testing.T) {
	cols := []string{"SELF", "ID", "USER", "HOST", "DB", "COMMAND", "TIME", "STATE", "INFO", "TIME_MS", "TRX_THREAD", "TRX_AGE", "TRX_ROWS_LOCKED", "TRX_STATE"}
	s := func(v string) *string { return &v }
	r := &Rows{Columns: cols, Values: [][]*string{
		{s("10"), s("1"), s("system user"), s(""), nil, s("Daemon"), s("300"), s("InnoDB purge coordinator"), nil, s("300123.456"), nil, nil, nil, nil},
		{s("10"), s("10"), s("root"), s("127.0.0.1:5000"), nil, s("Query"), s("0"), s("Filling schema table"), s("SELECT ..."), s("0.5"), nil, nil, nil, nil},
		{s("10"), s("21"), s("app"), s("127.0.0.1:5001"), s("shop"), s("Sleep"), s("61"), s(""), nil, s("61500.000"), s("21"), s("70"), s("2"), s("RUNNING")},
		{s("10"), s("22"), s("app"), s("127.0.0.1:5002"), s("shop"), s("Query"), s("30"), s("Updating"), s("UPDATE t SET v=1"), nil, s("22"), s("30"), s("1"), s("LOCK WAIT")},
	}}
	pl, err := ParseProcesslist(r)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Self != 10 || len(pl.Processes) != 4 || len(pl.Trx) != 2 {
		t.Fatalf("%+v", pl)
	}
	if p := pl.Processes[2]; p.ID != 21 || p.Command != "Sleep" || p.Time != 61500*time.Millisecond || p.DB != "shop" {
		t.Errorf("process 21: %+v", p)
	}
	if p := pl.Processes[3]; p.Time != 30*time.Second { // no TIME_MS: TIME
		t.Errorf("process 22 time %s", p.Time)
	}
	if x := pl.Trx[1]; x.ThreadID != 22 || x.Age != 30*time.Second || x.RowsLocked != 1 || x.State != "LOCK WAIT" {
		t.Errorf("trx 22: %+v", x)
	}
	if _, err := ParseProcesslist(&Rows{Columns: []string{"X"}}); err == nil {
		t.Error("no ID column: no error")
	}
}

// TestParseMDLWaits: rows as MariaDB 10.11 returned MDLWaitsSQL on a replica
// whose parallel worker (10) waits for wd.t held by a SELECT (19).
func TestParseMDLWaits(t *testing.T) {
	cols := []string{"ENABLED", "WAITER", "BLOCKER", "OBJECT_SCHEMA", "OBJECT_NAME"}
	s := func(v string) *string { return &v }
	waits, enabled := ParseMDLWaits(&Rows{Columns: cols, Values: [][]*string{
		{s("YES"), nil, nil, nil, nil},
		{s("WAIT"), s("10"), s("19"), s("wd"), s("t")},
	}})
	if !enabled || len(waits) != 1 || waits[0] != (MDLWait{Waiter: 10, Blocker: 19, Schema: "wd", Table: "t"}) {
		t.Errorf("instrument on: %v %+v", enabled, waits)
	}
	if waits, enabled := ParseMDLWaits(&Rows{Columns: cols, Values: [][]*string{{s("NO"), nil, nil, nil, nil}}}); enabled || len(waits) != 0 {
		t.Errorf("instrument off: %v %+v", enabled, waits)
	}
	if !strings.Contains(MDLWaitsSQL, "performance_schema.metadata_locks") {
		t.Error(MDLWaitsSQL)
	}
}
