package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// LivenessMarker is in the comment of serve's liveness query (a SLEEP held
// open on each primary so that its death is noticed at once); the
// processlist collector leaves that session out.
const LivenessMarker = "dbpilot:liveness"

// StandbyMarker is in a comment of every statement of the fence sent on a
// standby session (Liveness.Fence): the kill of client sessions that
// fences a returning primary leaves that session alone, so that the fence
// it carries is not cut off half-way.
const StandbyMarker = "dbpilot:standby-fence"

// livenessHold is how long one SLEEP holds the session before the next.
const livenessHold = 30 * time.Second

// Liveness watches a server at almost no cost: it keeps one session blocked
// in a long SLEEP. When the server dies the connection is reset and the
// query fails at once. (A silent network partition raises nothing here;
// regular probes and their timeouts catch it.)
//
// Beside the SLEEP it keeps a standby session: idle, authenticated, for
// Fence. A hung server (SIGSTOP, a frozen host) accepts TCP but never
// greets, so no new session can fence it when it runs again; a statement
// sent on the standby session waits in the server's socket and runs as soon
// as the server does, before any client can open a session.
type Liveness struct {
	// Options are the connection options (credentials, connect timeout,
	// dialer); the query timeout is set to cover the SLEEP.
	Options Options

	mu      sync.Mutex
	standby map[dbpilot.InstanceKey]*standby
}

// standby is an idle session kept for Fence.
type standby struct {
	db   *DB
	conn *sql.Conn
	// fence is what Fence sends: on MariaDB, KILL CONNECTION USER for every
	// other account first (a session waiting for a semi-sync
	// acknowledgement nobody will send holds SET GLOBAL read_only back, and
	// a client session must hear of no success), then read_only.
	fence string
}

// fenceWait is how long a fence sent on a standby session waits for the
// server to run it: a hung server may run again minutes later.
const fenceWait = 10 * time.Minute

func (s *standby) close() {
	s.conn.Close()
	s.db.Close()
}

// Fence sends SET GLOBAL read_only=ON on the standby session held on key
// without waiting: the server runs it as soon as it reads its socket again.
// On MariaDB the sessions of every other account are killed first, in the
// same query (KILL CONNECTION USER, one per account known when the session
// was last checked).
// The returned channel receives the statement's outcome (nil once the
// server is read_only); it is nil when no standby session is held on key.
// The session is used once: Hold opens a new one while it holds key.
func (l *Liveness) Fence(key dbpilot.InstanceKey) <-chan error {
	l.mu.Lock()
	sb := l.standby[key.Normalized()]
	delete(l.standby, key.Normalized())
	l.mu.Unlock()
	if sb == nil {
		return nil
	}
	ch := make(chan error, 1)
	go func() {
		defer sb.close()
		ctx, cancel := context.WithTimeout(context.Background(), fenceWait)
		defer cancel()
		_, err := sb.conn.ExecContext(ctx, sb.fence)
		if err != nil {
			err = fmt.Errorf("mysql: fence %s on its standby session: %w", key, err)
		}
		ch <- err
	}()
	return ch
}

// keepStandby opens the standby session of key when none is held, or checks
// the one held (a ping: the server has just answered the SLEEP, so it runs;
// a session the server closed, wait_timeout, is replaced). A failure only
// leaves key without one until the next call.
func (l *Liveness) keepStandby(ctx context.Context, key dbpilot.InstanceKey) {
	k := key.Normalized()
	l.mu.Lock()
	sb := l.standby[k]
	l.mu.Unlock()
	if sb != nil {
		pctx, cancel := context.WithTimeout(ctx, l.Options.withDefaults().QueryTimeout)
		fence, err := standbyFence(pctx, sb.conn)
		cancel()
		if err == nil {
			l.mu.Lock()
			sb.fence = fence
			l.mu.Unlock()
			return
		}
		l.dropStandby(key, sb)
	}
	opts := l.Options
	opts.QueryTimeout = fenceWait
	opts.MaxConns = 1
	opts.MultiStatements = true
	db, err := Open(ctx, key, opts)
	if err != nil {
		return
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		db.Close()
		return
	}
	pctx, cancel := context.WithTimeout(ctx, l.Options.withDefaults().QueryTimeout)
	fence, err := standbyFence(pctx, conn)
	cancel()
	if err != nil {
		conn.Close()
		db.Close()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.standby == nil {
		l.standby = map[dbpilot.InstanceKey]*standby{}
	}
	if old := l.standby[k]; old != nil {
		old.close()
	}
	l.standby[k] = &standby{db: db, conn: conn, fence: fence}
}

// standbyUsersSQL lists the accounts other than the session's own whose
// sessions a MariaDB fence kills (mysql.user; where it cannot be read, the
// accounts connected now).
const (
	standbyUsersSQL     = "SELECT DISTINCT User FROM mysql.user WHERE User <> '' AND User <> SUBSTRING_INDEX(CURRENT_USER(), '@', 1)"
	standbyConnectedSQL = "SELECT DISTINCT USER FROM information_schema.PROCESSLIST WHERE USER <> '' AND USER <> SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND USER <> 'system user' AND USER <> 'event_scheduler'"
)

// standbyFence reads, on conn, what Fence will send: for MariaDB a KILL
// CONNECTION USER per other account, the semi-sync primary side off, then
// SET GLOBAL read_only = ON; for MySQL (no KILL USER) read_only alone.
func standbyFence(ctx context.Context, conn *sql.Conn) (string, error) {
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return "", err
	}
	const ro = "SET GLOBAL read_only = ON"
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return "/* " + StandbyMarker + " */ " + ro, nil
	}
	users, err := queryStrings(ctx, conn, standbyUsersSQL)
	if err != nil {
		if users, err = queryStrings(ctx, conn, standbyConnectedSQL); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	mark := "/* " + StandbyMarker + " */ "
	for _, u := range users {
		fmt.Fprintf(&b, "%sKILL CONNECTION USER %s; ", mark, Quote(u))
	}
	// Then the semi-sync primary side off, as fenceNow does: a killed
	// session still waiting for an acknowledgement (its client is gone: KILL
	// CONNECTION shuts its socket) holds read_only back until it is released.
	var name, value string
	switch err := conn.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'").Scan(&name, &value); {
	case err == nil:
		b.WriteString(mark + "SET GLOBAL rpl_semi_sync_master_enabled = OFF; ")
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	b.WriteString(mark + ro)
	return b.String(), nil
}

func queryStrings(ctx context.Context, conn *sql.Conn, q string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// dropStandby closes the standby session of key when it is still sb (nil:
// whichever is held).
func (l *Liveness) dropStandby(key dbpilot.InstanceKey, sb *standby) {
	k := key.Normalized()
	l.mu.Lock()
	cur := l.standby[k]
	if cur != nil && (sb == nil || cur == sb) {
		delete(l.standby, k)
	} else {
		cur = nil
	}
	l.mu.Unlock()
	if cur != nil {
		cur.close()
	}
}

// Hold connects to key, calls connected once the session is up, and blocks
// until the session is lost (the error says how) or ctx ends (nil).
func (l *Liveness) Hold(ctx context.Context, key dbpilot.InstanceKey, connected func()) error {
	opts := l.Options
	opts.QueryTimeout = livenessHold + 5*time.Second
	db, err := Open(ctx, key, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	// A standby session left when Hold returns is closed, unless Fence
	// took it; a server that lost the SLEEP session is in doubt.
	defer l.dropStandby(key, nil)
	l.keepStandby(ctx, key)
	if connected != nil {
		connected()
	}
	query := fmt.Sprintf("SELECT /* %s */ SLEEP(%d)", LivenessMarker, int(livenessHold/time.Second))
	for {
		var v int
		if err := db.SQL().QueryRowContext(ctx, query).Scan(&v); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("mysql: liveness session on %s: %w", key, err)
		}
		l.keepStandby(ctx, key)
	}
}
