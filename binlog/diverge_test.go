package binlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// partialGTIDs lists the GTIDs of the archive's file being written.
func partialGTIDs(t *testing.T, path string) []gtid.MariaGTID {
	t.Helper()
	rc, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var ff format
	var out []gtid.MariaGTID
	err = ReadEvents(rc, func(off int64, e Event) error {
		switch e.Type {
		case typeFormatDesc:
			ff, _ = parseFormat(e)
		case typeMariaGTID:
			g, err := decodeMariaGTID(ff.body(e))
			if err != nil {
				return err
			}
			out = append(out, gtid.MariaGTID{Domain: g.domain, Server: e.ServerID, Seq: g.seq})
		}
		return nil
	})
	var torn *TornError
	if err != nil && !errors.As(err, &torn) {
		t.Fatal(err)
	}
	return out
}

// stateWithout is a gtid_binlog_state holding every GTID of the archive
// but the last n of the partial file: per domain and server, the highest
// sequence number kept.
func stateWithout(t *testing.T, dir string, n int) string {
	t.Helper()
	idx, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	partials, _ := partialFiles(dir)
	all := partialGTIDs(t, filepath.Join(dir, partials[0]))
	keep := all[:len(all)-n]
	type ds struct{ d, s uint32 }
	last := map[ds]uint64{}
	l, err := gtid.ParseMariaList(idx[len(idx)-1].GTIDEnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range append(l, keep...) {
		last[ds{g.Domain, g.Server}] = max(last[ds{g.Domain, g.Server}], g.Seq)
	}
	var gs []gtid.MariaGTID
	for k, v := range last {
		gs = append(gs, gtid.MariaGTID{Domain: k.d, Server: k.s, Seq: v})
	}
	return gtid.NewMariaList(gs...).String()
}

// The partial file's last transaction that the server lacks are moved
// into diverged/ (readable, with their GTIDs) and the file is cut before
// them; the archive still verifies; a server with everything moves
// nothing; a server lacking a finished file's transaction is a conflict.
func TestSetAside(t *testing.T) {
	dir := copyArchive(t)
	partials, _ := partialFiles(dir)
	path := filepath.Join(dir, partials[0])
	all := partialGTIDs(t, path)
	if len(all) < 1 {
		t.Fatalf("recorded partial has %d transactions", len(all))
	}
	// A server with everything: nothing moves.
	if a, err := SetAside(dir, stateWithout(t, dir, 0)); err != nil || a.File != "" {
		t.Fatalf("nothing diverged: %+v, %v", a, err)
	}
	before, _ := os.Stat(path)
	a, err := SetAside(dir, stateWithout(t, dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{all[len(all)-1].String()}
	if strings.Join(a.GTIDs, ",") != strings.Join(want, ",") || !strings.HasPrefix(a.File, filepath.Join(dir, DivergedDir)) {
		t.Fatalf("set aside %+v, want %v", a, want)
	}
	if got := partialGTIDs(t, a.File); len(got) != 1 || got[0].String() != want[0] {
		t.Errorf("diverged file holds %v", got)
	}
	after, _ := os.Stat(path)
	if after.Size() >= before.Size() {
		t.Errorf("partial not cut: %d → %d bytes", before.Size(), after.Size())
	}
	if got := partialGTIDs(t, path); len(got) != len(all)-1 {
		t.Errorf("partial holds %d transactions, want %d", len(got), len(all)-1)
	}
	rep, err := Verify(dir)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after setting aside: %+v, %v", rep, err)
	}

	// The last finished file's transactions are missing on the server.
	idx, _ := ReadIndex(dir)
	l, _ := gtid.ParseMariaList(idx[len(idx)-1].GTIDStart)
	if _, err := SetAside(dir, gtid.NewMariaList(l...).String()); dbpilot.ErrorCode(err) != dbpilot.ECONFLICT || !strings.Contains(err.Error(), idx[len(idx)-1].File) {
		t.Errorf("divergence in a finished file: %v, want ECONFLICT naming %s", err, idx[len(idx)-1].File)
	}
}
