package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/binlog"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/pitr"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Stretch is what the archive holds between From and Until: the
// transactions replayed, their events and rows, the tables their row
// events touched, and their recorded commit times.
type Stretch struct {
	From   gtid.MariaList `json:"-"`
	Until  gtid.MariaList `json:"-"`
	Txns   int            `json:"transactions"`
	Events int64          `json:"events"`
	// RowEvents counts the row events (Write/Update/Delete_rows, each
	// of one or more rows of one table) of the stretch; Rows their rows
	// (an update's before and after image are one row).
	RowEvents int64    `json:"row_events"`
	Rows      int64    `json:"rows"`
	Tables    []string `json:"tables"`
	// Statements: the stretch has statements other than BEGIN, COMMIT
	// and XA ones (DDL, statement-based DML): the tables they touch are
	// not named by row events, so every table of the target is compared.
	Statements bool `json:"statements"`
	// Times are the transactions' recorded commit times (Unix seconds), in
	// archive order.
	Times []uint32 `json:"-"`
}

// Span is the recorded time from the first transaction to the last.
func (s *Stretch) Span() int64 {
	if len(s.Times) == 0 {
		return 0
	}
	return int64(s.Times[len(s.Times)-1]) - int64(s.Times[0])
}

// readStretch reads the planned transactions' events (row events decoded
// by go-mysql's binlog parser) to count rows and name tables.
func readStretch(ctx context.Context, scan *pitr.Scan, plan *pitr.Plan) (*Stretch, error) {
	st := &Stretch{From: plan.Start, Until: plan.Until}
	for _, t := range scan.Txns {
		if plan.Wants(t.GTID, plan.Start) {
			st.Txns++
			st.Events += int64(t.Events)
			st.Times = append(st.Times, t.Time)
		}
	}
	tables := map[string]bool{}
	stop := errors.New("done")
	for fi := max(plan.FirstFile, 0); fi <= plan.LastFile && fi < len(scan.Archive.Files); fi++ {
		f := scan.Archive.Files[fi]
		rc, err := binlog.OpenFile(f.Path)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "replay: open archive file")
		}
		p := replication.NewBinlogParser()
		p.SetFlavor("mariadb")
		p.SetVerifyChecksum(false) // the scan checked every event
		in := false
		n := 0
		err = binlog.ReadEvents(rc, func(_ int64, e binlog.Event) error {
			if n++; n&1023 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			// A copy: the parser keeps slices of a Table_map event, and
			// ReadEvents reuses its buffer.
			ev, err := p.Parse(slices.Clone(e.Raw))
			if err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			switch x := ev.Event.(type) {
			case *replication.MariadbGTIDEvent:
				g := gtid.MariaGTID{Domain: x.GTID.DomainID, Server: x.GTID.ServerID, Seq: x.GTID.SequenceNumber}
				in = plan.Wants(g, plan.Start)
			case *replication.TableMapEvent:
				if in {
					tables[fmt.Sprintf("`%s`.`%s`", x.Schema, x.Table)] = true
				}
			case *replication.RowsEvent:
				if in {
					st.RowEvents++
					rows := int64(len(x.Rows))
					if isUpdate(ev.Header.EventType) {
						rows /= 2
					}
					st.Rows += rows
				}
			case *replication.QueryEvent:
				if in {
					q := strings.ToUpper(strings.TrimSpace(string(x.Query)))
					if q != "BEGIN" && q != "COMMIT" && !strings.HasPrefix(q, "XA ") {
						st.Statements = true
					}
				}
			}
			return nil
		})
		rc.Close()
		var torn *binlog.TornError
		if errors.As(err, &torn) && f.Partial {
			err = nil
		}
		if err != nil && err != stop {
			return nil, fmt.Errorf("replay: read the stretch: %w", err)
		}
	}
	for t := range tables {
		st.Tables = append(st.Tables, t)
	}
	slices.Sort(st.Tables)
	return st, nil
}

func isUpdate(t replication.EventType) bool {
	switch t {
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		return true
	}
	return false
}
