package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/mysql"
)

// Every non-Galera node starts read_only (config.go). The writers are
// opened explicitly: by Deploy from the layout, and by Start as below, so
// that an old primary started again after a failover stays read_only
// while another node takes the writes.

// layoutWriters returns the nodes among nodes that the layout makes
// writers: the primary of a replication sandbox, a single server, the
// sources of a multi-source sandbox, node1 of a ring.
func layoutWriters(d *Descriptor, nodes []*Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		switch {
		case n.IsGalera():
		case d.Topology == TopologyRing:
			if n.Name == "node1" {
				out = append(out, n)
			}
		case n.Role == RolePrimary || n.Role == RoleSingle || n.Role == RoleSource:
			out = append(out, n)
		}
	}
	return out
}

// openWriters opens, among the nodes Start just started, the one that is
// the sandbox's writer now:
//   - a ring: node1 (the ring's one writer), when no other member is
//     writable;
//   - a multi-source sandbox: each source without replication of its own
//     (independent writers);
//   - otherwise the started node without replication when it is the only
//     such node and no other running node is writable. A node with
//     replication stays a replica. When another node is writable (the
//     primary a failover promoted) or several nodes could be the primary,
//     none is opened and log says so: open one by hand (SET GLOBAL
//     read_only=OFF) once it is known to be the primary.
func openWriters(ctx context.Context, d *Descriptor, started []*Node, log func(string, ...any)) error {
	if len(started) == 0 || d.Galera != nil {
		return nil
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	type state struct {
		running, writable, replicates bool
	}
	isStarted := map[string]bool{}
	for _, n := range started {
		isStarted[n.Name] = true
	}
	states := map[string]state{}
	for _, n := range d.Nodes {
		if n.IsGalera() {
			continue
		}
		if _, ok := runningPid(n); !ok {
			continue
		}
		writable, replicates, err := readNode(ctx, d, n)
		if err != nil {
			if isStarted[n.Name] {
				return err
			}
			// It may be a writable primary: open nothing.
			log("no node opened for writes: %v", err)
			return nil
		}
		states[n.Name] = state{running: true, writable: writable, replicates: replicates}
	}
	var writableOthers []string
	for _, n := range d.Nodes {
		if st := states[n.Name]; st.writable && !isStarted[n.Name] {
			writableOthers = append(writableOthers, n.Name)
		}
	}
	var open []*Node
	switch d.Topology {
	case TopologyRing:
		for _, n := range started {
			if n.Name == "node1" && len(writableOthers) == 0 {
				open = append(open, n)
			}
		}
	case TopologyMultiSource:
		for _, n := range started {
			if n.Role == RoleSource && !states[n.Name].replicates {
				open = append(open, n)
			}
		}
	default:
		var cands []*Node
		for _, n := range d.Nodes {
			if st := states[n.Name]; st.running && !st.replicates && !n.IsGalera() {
				cands = append(cands, n)
			}
		}
		switch {
		case len(cands) == 0:
		case len(writableOthers) > 0:
			for _, n := range cands {
				if isStarted[n.Name] {
					log("%s stays read_only: %s is writable (a former primary? 'dbpilot rejoin' attaches it)", n.Name, strings.Join(writableOthers, ", "))
				}
			}
		case len(cands) == 1 && isStarted[cands[0].Name]:
			open = cands
		case len(cands) > 1:
			names := make([]string, len(cands))
			for i, n := range cands {
				names[i] = n.Name
			}
			log("no node opened for writes: %s all run without replication; make the primary writable by hand (SET GLOBAL read_only=OFF)", strings.Join(names, ", "))
		}
	}
	for _, n := range open {
		if err := setWritable(ctx, d, n); err != nil {
			return err
		}
		log("%s opened for writes (read_only=OFF)", n.Name)
	}
	return nil
}

// setWritable sets read_only=OFF on the node.
func setWritable(ctx context.Context, d *Descriptor, n *Node) error {
	return retryRead(ctx, func() error { return setWritableOnce(ctx, d, n) })
}

func setWritableOnce(ctx context.Context, d *Descriptor, n *Node) error {
	db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		return fmt.Errorf("sandbox: open %s for writes: %w", n.Name, err)
	}
	defer db.Close()
	if err := db.Exec(ctx, "SET GLOBAL read_only = OFF"); err != nil {
		return fmt.Errorf("sandbox: open %s for writes: %w", n.Name, err)
	}
	return nil
}

// readAttempts: a node's state is read up to this many times, a pause
// apart: a serve fencing the node ends every client session (KILL), the
// sandbox's own reading one included.
const readAttempts = 3

// retryRead runs read (or an idempotent change) until it succeeds,
// readAttempts times at most.
func retryRead(ctx context.Context, read func() error) error {
	var err error
	for i := 0; i < readAttempts; i++ {
		if err = read(); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}

// readNode reads, on one session, whether the node is writable
// (read_only=0) and whether it replicates (any replication channel).
func readNode(ctx context.Context, d *Descriptor, n *Node) (writable, replicates bool, err error) {
	err = retryRead(ctx, func() error {
		db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
		if err != nil {
			return fmt.Errorf("sandbox: read %s: %w", n.Name, err)
		}
		defer db.Close()
		ro, err := db.Query(ctx, "SELECT @@global.read_only")
		if err != nil {
			return fmt.Errorf("sandbox: read %s: %w", n.Name, err)
		}
		if len(ro.Values) != 1 || len(ro.Values[0]) != 1 || ro.Values[0][0] == nil {
			return fmt.Errorf("sandbox: read %s: @@global.read_only returned no value", n.Name)
		}
		chans, err := db.Query(ctx, "SHOW ALL SLAVES STATUS")
		if err != nil {
			chans, err = db.Query(ctx, "SHOW REPLICA STATUS") // MySQL
		}
		if err != nil {
			return fmt.Errorf("sandbox: read %s: %w", n.Name, err)
		}
		writable, replicates = *ro.Values[0][0] == "0", len(chans.Values) > 0
		return nil
	})
	return writable, replicates, err
}
