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
	states := map[string]state{}
	for _, n := range d.Nodes {
		if n.IsGalera() {
			continue
		}
		if _, ok := runningPid(n); !ok {
			continue
		}
		st := state{running: true}
		ro, err := nodeValue(ctx, d, n, "SELECT @@global.read_only")
		var rows int
		if err == nil {
			st.writable = ro == "0"
			if rows, err = nodeRows(ctx, d, n, "SHOW ALL SLAVES STATUS"); err != nil {
				rows, err = nodeRows(ctx, d, n, "SHOW REPLICA STATUS") // MySQL
			}
		}
		if err != nil {
			if among(started, n) {
				return err
			}
			// It may be a writable primary: open nothing.
			log("no node opened for writes: %v", err)
			return nil
		}
		st.replicates = rows > 0
		states[n.Name] = st
	}
	isStarted := map[string]bool{}
	for _, n := range started {
		isStarted[n.Name] = true
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

func among(started []*Node, n *Node) bool {
	for _, s := range started {
		if s.Name == n.Name {
			return true
		}
	}
	return false
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

func nodeValue(ctx context.Context, d *Descriptor, n *Node, q string) (v string, err error) {
	err = retryRead(ctx, func() error {
		v, err = nodeValueOnce(ctx, d, n, q)
		return err
	})
	return v, err
}

func nodeRows(ctx context.Context, d *Descriptor, n *Node, q string) (rows int, err error) {
	err = retryRead(ctx, func() error {
		rows, err = nodeRowsOnce(ctx, d, n, q)
		return err
	})
	return rows, err
}

func nodeValueOnce(ctx context.Context, d *Descriptor, n *Node, q string) (string, error) {
	db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		return "", fmt.Errorf("sandbox: read %s: %w", n.Name, err)
	}
	defer db.Close()
	rows, err := db.Query(ctx, q)
	if err != nil {
		return "", fmt.Errorf("sandbox: read %s: %w", n.Name, err)
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 || rows.Values[0][0] == nil {
		return "", fmt.Errorf("sandbox: read %s: %s returned no value", n.Name, q)
	}
	return *rows.Values[0][0], nil
}

func nodeRowsOnce(ctx context.Context, d *Descriptor, n *Node, q string) (int, error) {
	db, err := mysql.Open(ctx, n.Key(), d.AdminOptions())
	if err != nil {
		return 0, fmt.Errorf("sandbox: read %s: %w", n.Name, err)
	}
	defer db.Close()
	rows, err := db.Query(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("sandbox: read %s: %w", n.Name, err)
	}
	return len(rows.Values), nil
}
