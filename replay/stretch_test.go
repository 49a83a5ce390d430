package replay

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/pitr"
)

// TestReadStretch reads pitr's recorded archive (pitr/testdata/README.md):
// from the dump's position to after the accident, the row events and rows
// of the load in pitr.t and pitr.u, the DELETE and the DROP TABLE
// statement.
func TestReadStretch(t *testing.T) {
	a, err := pitr.OpenArchive(filepath.Join("..", "pitr", "testdata", "recorded"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := pitr.ScanArchive(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	from, _ := gtid.ParseMariaList("0-15821-25")
	until, _ := gtid.ParseMariaList("0-15821-162,1-15821-172")
	p, err := pitr.NewPlan(s, from, pitr.Target{GTIDs: until}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readStretch(context.Background(), s, p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Txns != p.Txns || st.Events != p.Events {
		t.Errorf("stretch %d transactions, %d events; the plan %d, %d", st.Txns, st.Events, p.Txns, p.Events)
	}
	if len(st.Tables) < 2 || st.Tables[0] != "`pitr`.`t`" || st.Tables[1] != "`pitr`.`u`" {
		t.Errorf("tables %q", st.Tables)
	}
	// The DROP TABLE is a statement: every table is compared.
	if !st.Statements {
		t.Errorf("the DROP TABLE is not seen")
	}
	if st.RowEvents == 0 || st.Rows < st.RowEvents {
		t.Errorf("%d row events, %d rows", st.RowEvents, st.Rows)
	}
	if len(st.Times) != st.Txns || st.Span() < 2 {
		t.Errorf("%d times for %d transactions, span %d s (the recording has a 2 s pause)", len(st.Times), st.Txns, st.Span())
	}
	t.Logf("%d transactions, %d row events, %d rows, span %d s, tables %q", st.Txns, st.RowEvents, st.Rows, st.Span(), st.Tables)
}
