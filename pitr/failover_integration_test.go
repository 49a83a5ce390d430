package pitr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/backup"
	"github.com/dbpilot/dbpilot/binlog"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// itConnectNode connects to node i of a sandbox.
func itConnectNode(t *testing.T, d *sandbox.Descriptor, i int) *itNode {
	t.Helper()
	n := d.Nodes[i]
	db, err := mysql.Open(context.Background(), n.Key(), mysql.Options{Credentials: d.Admin, QueryTimeout: 60 * time.Second, MaxConns: 4})
	if err != nil {
		t.Fatalf("connect to %s: %v", n.Key(), err)
	}
	t.Cleanup(func() { db.Close() })
	return &itNode{d: d, key: n.Key(), opts: mysql.Options{Credentials: d.Admin}, db: db}
}

// insertRows inserts rows from..to into pitr.t, one transaction each but
// every fifth, which inserts two rows and updates the first.
func insertRows(t *testing.T, n *itNode, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if i%5 == 0 && i < to {
			n.exec(t, "BEGIN",
				fmt.Sprintf("INSERT INTO pitr.t VALUES (%d, 'row %d', 0)", i, i),
				fmt.Sprintf("INSERT INTO pitr.t VALUES (%d, 'row %d', 0)", i+1, i+1),
				fmt.Sprintf("UPDATE pitr.t SET d = d + 1 WHERE id = %d", i),
				"COMMIT")
			i++
			continue
		}
		n.exec(t, fmt.Sprintf("INSERT INTO pitr.t VALUES (%d, 'row %d', 0)", i, i))
	}
}

// streamAll archives the server's binary logs into dir up to its position
// at connect.
func streamAll(t *testing.T, n *itNode, dir string) {
	t.Helper()
	st, err := binlog.New(binlog.Options{Key: n.key, Conn: mysql.Options{Credentials: n.d.Admin}, Dir: dir, StopAtEnd: true, Heartbeat: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := st.Run(ctx); err != nil {
		t.Fatalf("stream %s into %s: %v", n.key, dir, err)
	}
}

// rowsDigest is the count and a digest of pitr.t's rows up to id max.
func rowsDigest(t *testing.T, n *itNode, max int) string {
	t.Helper()
	return n.value(t, fmt.Sprintf("SELECT CONCAT(COUNT(*), '/', MIN(id), '/', MAX(id), '/', SUM(CRC32(CONCAT_WS('|', id, v, d)))) FROM pitr.t WHERE id <= %d", max))
}

func failoverOptions(dump, archive string, until gtid.MariaList) Options {
	return Options{Dump: dump, Binlogs: archive, Target: Target{GTIDs: until}, Restore: backup.RestoreOptions{Threads: 2}, PollInterval: 10 * time.Millisecond}
}

// restoreRows restores dump and archive up to until into tgt and compares
// its rows with want (rowsDigest).
func restoreRows(t *testing.T, tgt *itNode, dump, archive string, until gtid.MariaList, want string) {
	t.Helper()
	res, err := Restore(context.Background(), tgt.key, tgt.opts, failoverOptions(dump, archive, until))
	if err != nil {
		t.Fatalf("pitr from %s: %v", filepath.Base(dump), err)
	}
	t.Logf("applied %d transactions from %s to %s", res.Transactions, res.From, res.Position)
	if got := rowsDigest(t, tgt, 1000); got != want {
		t.Errorf("target rows (count/min/max/digest) %s, want %s", got, want)
	}
}

// TestPITRAcrossFailover restores from an archive that a primary change
// split between two servers: node1's files, then node2's, the first of
// which collides with a name the archive holds (NAME@SERVERID) and starts
// in the middle of node2's file. Then the same archive pruned: a dump newer
// than the pruned files restores, an older one is refused naming the
// missing GTIDs.
func TestPITRAcrossFailover(t *testing.T) {
	testutil.Home(t)
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologyReplication, Nodes: 2})
	n1, n2 := itConnectNode(t, d, 0), itConnectNode(t, d, 1)
	ctx := context.Background()
	base := t.TempDir()
	archive := filepath.Join(base, "archive")
	dumpOld, dumpNew := filepath.Join(base, "dump-old"), filepath.Join(base, "dump-new")

	n1.exec(t, "CREATE DATABASE pitr", "CREATE TABLE pitr.t (id INT PRIMARY KEY, v VARCHAR(64), d INT NOT NULL)")
	insertRows(t, n1, 1, 10)
	if _, err := backup.Dump(ctx, n1.key, n1.opts, backup.DumpOptions{Out: dumpOld, Threads: 2}); err != nil {
		t.Fatalf("dump: %v", err)
	}
	// node1's history: two rotations, streamed once in the middle and
	// once at the end.
	insertRows(t, n1, 11, 40)
	n1.exec(t, "FLUSH BINARY LOGS")
	insertRows(t, n1, 41, 60)
	streamAll(t, n1, archive)
	insertRows(t, n1, 61, 80)
	time.Sleep(1100 * time.Millisecond) // the next file's commits are a second later (pruning by time)
	n1.exec(t, "FLUSH BINARY LOGS")
	insertRows(t, n1, 81, 90)
	if _, err := backup.Dump(ctx, n1.key, n1.opts, backup.DumpOptions{Out: dumpNew, Threads: 2}); err != nil {
		t.Fatalf("dump: %v", err)
	}
	insertRows(t, n1, 91, 110)
	streamAll(t, n1, archive)

	// node2 becomes the primary, by hand: writes stop on node1, node2
	// applies everything, stops replicating and takes writes.
	n1.exec(t, "SET GLOBAL read_only = ON")
	end1 := list(t, n1.value(t, "SELECT @@GLOBAL.gtid_binlog_pos"))
	testutil.WaitFor(t, time.Minute, "node2 to catch up with node1", func() (bool, string) {
		pos := n2.value(t, "SELECT @@GLOBAL.gtid_slave_pos")
		return covers(list(t, pos), end1), pos
	})
	n2.exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
	insertRows(t, n2, 111, 120)
	// node2's later files have no event checksums (setting it rotates):
	// the target must learn that from their Format_description.
	n2.exec(t, "SET GLOBAL binlog_checksum = NONE")
	insertRows(t, n2, 121, 130)
	n2.exec(t, "FLUSH BINARY LOGS")
	insertRows(t, n2, 131, 140)
	until := list(t, n2.value(t, "SELECT @@GLOBAL.gtid_binlog_pos"))
	insertRows(t, n2, 141, 160)
	streamAll(t, n2, archive)

	// The archive: node1's files, then node2's; verified.
	rep, err := binlog.Verify(archive)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep.Problems)
	}
	files, err := binlog.Files(archive)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	servers := map[uint32]bool{}
	collided := false
	for _, f := range files {
		names = append(names, filepath.Base(f.Path))
		if f.Index != nil {
			servers[f.Index.ServerID] = true
		}
		collided = collided || strings.Contains(filepath.Base(f.Path), "@")
	}
	t.Logf("archive files %v; until %s", names, until)
	if !servers[d.Nodes[0].ServerID] || !servers[d.Nodes[1].ServerID] || !collided {
		t.Fatalf("archive files %v: want files of both servers, one named NAME@SERVERID", names)
	}
	if got := list(t, rep.Position); !got.Equal(list(t, n2.value(t, "SELECT @@GLOBAL.gtid_binlog_pos"))) {
		t.Fatalf("archive ends at %s, node2 at %s", got, n2.value(t, "SELECT @@GLOBAL.gtid_binlog_pos"))
	}

	// The scan sees one continuous history across the change of server.
	a, err := OpenArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ScanArchive(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Problem(-1); err != nil {
		t.Fatalf("scan: %v", err)
	}
	newSource := false
	algs := map[byte]bool{}
	for _, f := range s.Files {
		newSource = newSource || f.NewSource
		algs[f.Checksum] = true
	}
	if !newSource || len(algs) != 2 {
		t.Errorf("scan: no file marked as another server's, or not files with and without checksums: %+v", s.Files)
	}
	want := rowsDigest(t, n2, 140)

	t.Run("until-gtid-after-failover", func(t *testing.T) {
		tgt := itConnect(t, testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle}))
		restoreRows(t, tgt, dumpOld, archive, until, want)
		if got := tgt.value(t, "SELECT COUNT(*) FROM pitr.t"); got != "140" {
			t.Errorf("%s rows, want 140", got)
		}
		if got := tgt.value(t, "SELECT @@GLOBAL.gtid_slave_pos"); !list(t, got).Equal(until) {
			t.Errorf("gtid_slave_pos %s, want %s", got, until)
		}
	})

	t.Run("pruned", func(t *testing.T) {
		pruned := filepath.Join(t.TempDir(), "archive")
		copyDir(t, archive, pruned)
		idx, err := binlog.ReadIndex(pruned)
		if err != nil || len(idx) < 4 {
			t.Fatalf("index %d entries: %v", len(idx), err)
		}
		// Remove node1's first two files: their last commits are before
		// the third file's.
		removed, err := binlog.Prune(pruned, idx[1].LastTime.Add(time.Second))
		if err != nil || removed != 2 {
			t.Fatalf("prune: removed %d: %v", removed, err)
		}
		kept, _ := binlog.ReadIndex(pruned)
		if _, err := os.Stat(filepath.Join(pruned, idx[0].File)); err == nil || len(kept) != len(idx)-2 {
			t.Fatalf("after pruning: %s still there or index of %d entries", idx[0].File, len(kept))
		}
		// An older dump needs the pruned GTIDs: refused, naming them.
		tgt := itConnect(t, testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle}))
		_, err = Restore(ctx, tgt.key, tgt.opts, failoverOptions(dumpOld, pruned, until))
		var ge *GapError
		oldPos, _ := list(t, backupPosition(t, dumpOld)).DomainSeq(0)
		keptStart, _ := list(t, kept[0].GTIDStart).DomainSeq(0)
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), "between the dump and "+kept[0].File) ||
			!strings.Contains(err.Error(), "after "+oldPos.String()+" up to "+keptStart.String()) {
			t.Fatalf("older dump on the pruned archive: %v; want a gap after %s up to %s", err, oldPos, keptStart)
		}
		t.Logf("refused: %v", err)
		if v := tgt.value(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'pitr'"); v != "0" {
			t.Errorf("the dump was restored although the restore was refused")
		}
		// The newer dump is inside the kept files.
		restoreRows(t, tgt, dumpNew, pruned, until, want)
	})
}

// TestScanNewSourceGap: the first file of another server must continue the
// archive's GTID sequence; its own Gtid_list does not count.
func TestScanNewSourceGap(t *testing.T) {
	s := &Scan{Archive: &Archive{Dir: "a", Indexed: true}}
	end := gtid.MariaList{{Domain: 0, Server: 1, Seq: 100}}
	s.Files = []FileSummary{
		{Name: "binlog.000003", File: "binlog.000003.zst", ServerID: 1, End: end},
		{Name: "binlog.000003", File: "binlog.000003@2.partial", ServerID: 2, NewSource: true, Start: end,
			first: map[uint32]gtid.MariaGTID{0: {Domain: 0, Server: 2, Seq: 101}}},
	}
	if err := s.Problem(-1); err != nil {
		t.Fatalf("continuous: %v", err)
	}
	s.Files[1].first[0] = gtid.MariaGTID{Domain: 0, Server: 2, Seq: 105}
	err := s.Problem(-1)
	var ge *GapError
	if !errors.As(err, &ge) || ge.From != "0-1-100" || ge.To != "0-2-104" || !strings.Contains(err.Error(), "binlog.000003@2.partial") {
		t.Fatalf("gap: %v", err)
	}
}
