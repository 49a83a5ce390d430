package mysql

import (
	"context"
	"strconv"

	"github.com/dbpilot/dbpilot"
)

var _ dbpilot.ApplierInspector = (*Controller)(nil)

// ApplierThreads reads key's replication applier threads (the SQL thread
// and parallel workers) with their processlist state and whether each
// waits for a lock: one the state names (dbpilot.LockWaitState) or, when
// its InnoDB transaction is in LOCK WAIT, a row lock. MariaDB lists them in
// information_schema.PROCESSLIST as Slave_SQL and Slave_worker; MySQL in
// performance_schema.threads. A server error (no privilege, no
// performance_schema) answers no threads and no error: the caller then
// knows less, nothing is wrong.
func (c *Controller) ApplierThreads(ctx context.Context, key dbpilot.InstanceKey) ([]dbpilot.ApplierThread, error) {
	var out []dbpilot.ApplierThread
	err := c.do(ctx, key, "read applier threads", func(s *ctl) error {
		r, err := s.x.Query(ctx, applierThreadsSQL(s.id.Flavor))
		if err != nil {
			if isServerError(err) {
				return nil
			}
			return s.fail("read applier threads", err)
		}
		out = parseApplierThreads(r)
		return nil
	})
	return out, err
}

// applierThreadsSQL lists the applier threads as ID, STATE, TRX_STATE.
func applierThreadsSQL(f dbpilot.Flavor) string {
	if f == dbpilot.FlavorMariaDB {
		return "SELECT p.ID, p.STATE, t.trx_state AS TRX_STATE FROM information_schema.PROCESSLIST p " +
			"LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID " +
			"WHERE p.COMMAND IN ('Slave_SQL', 'Slave_worker')"
	}
	return "SELECT th.PROCESSLIST_ID AS ID, th.PROCESSLIST_STATE AS STATE, t.trx_state AS TRX_STATE FROM performance_schema.threads th " +
		"LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = th.PROCESSLIST_ID " +
		"WHERE th.NAME IN ('thread/sql/slave_sql', 'thread/sql/slave_worker', 'thread/sql/replica_sql', 'thread/sql/replica_worker')"
}

// parseApplierThreads reads the rows of applierThreadsSQL.
func parseApplierThreads(r *Rows) []dbpilot.ApplierThread {
	iID, iState, iTrx := r.Index("ID"), r.Index("STATE"), r.Index("TRX_STATE")
	var out []dbpilot.ApplierThread
	for _, row := range r.Values {
		id, _ := strconv.ParseUint(Str(row, iID), 10, 64)
		th := dbpilot.ApplierThread{ID: id, State: Str(row, iState)}
		switch {
		case dbpilot.LockWaitState(th.State):
			th.Wait = th.State
		case Str(row, iTrx) == "LOCK WAIT":
			th.Wait = "an InnoDB row lock"
		}
		out = append(out, th)
	}
	return out
}
