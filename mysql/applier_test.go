package mysql

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func TestParseApplierThreads(t *testing.T) {
	s := func(v string) *string { return &v }
	r := &Rows{Columns: []string{"ID", "STATE", "TRX_STATE"}, Values: [][]*string{
		{s("11"), s("Waiting for work from SQL thread"), nil},
		{s("12"), s("Waiting for table metadata lock"), nil},
		{s("13"), s("Update_rows_log_event::find_row(-1)"), s("LOCK WAIT")},
		{s("14"), s("Slave has read all relay log; waiting for more updates"), s("RUNNING")},
		{s("15"), nil, nil},
	}}
	want := []dbpilot.ApplierThread{
		{ID: 11, State: "Waiting for work from SQL thread"},
		{ID: 12, State: "Waiting for table metadata lock", Wait: "Waiting for table metadata lock"},
		{ID: 13, State: "Update_rows_log_event::find_row(-1)", Wait: "an InnoDB row lock"},
		{ID: 14, State: "Slave has read all relay log; waiting for more updates"},
		{ID: 15},
	}
	if got := parseApplierThreads(r); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := parseApplierThreads(&Rows{Columns: []string{"ID", "STATE", "TRX_STATE"}}); got != nil {
		t.Errorf("no rows: %+v", got)
	}
	if q := applierThreadsSQL(dbpilot.FlavorMariaDB); !strings.Contains(q, "'Slave_SQL', 'Slave_worker'") {
		t.Errorf("MariaDB query: %s", q)
	}
	if q := applierThreadsSQL(dbpilot.FlavorMySQL); !strings.Contains(q, "thread/sql/replica_worker") {
		t.Errorf("MySQL query: %s", q)
	}
}
