package mysql

import (
	"context"
	"fmt"
	"time"

	"github.com/dbpilot/dbpilot"
)

// LivenessMarker is in the comment of serve's liveness query (a SLEEP held
// open on each primary so that its death is noticed at once); the
// processlist collector leaves that session out.
const LivenessMarker = "dbpilot:liveness"

// livenessHold is how long one SLEEP holds the session before the next.
const livenessHold = 30 * time.Second

// Liveness watches a server at almost no cost: it keeps one session blocked
// in a long SLEEP. When the server dies the connection is reset and the
// query fails at once. (A silent network partition raises nothing here;
// regular probes and their timeouts catch it.)
type Liveness struct {
	// Options are the connection options (credentials, connect timeout,
	// dialer); the query timeout is set to cover the SLEEP.
	Options Options
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
	}
}
