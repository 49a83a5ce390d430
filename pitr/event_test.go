package pitr

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dbpilot/dbpilot/binlog"
)

func TestSyntheticEvents(t *testing.T) {
	for _, alg := range []byte{checksumOff, checksumCRC32} {
		rot := rotateEvent(7, alg, "binlog.000003", 4)
		h := parseHeader(rot)
		if h.Type != evRotate || int(h.Size) != len(rot) || h.Flags&flagArtificial == 0 || h.ServerID != 7 {
			t.Errorf("rotate header %+v", h)
		}
		if b := body(rot, alg); binary.LittleEndian.Uint64(b) != 4 || string(b[8:]) != "binlog.000003" {
			t.Errorf("rotate body %q", b)
		}
		c := commitEvent(7, 100, 1, alg)
		if q := queryText(c, alg); q != "COMMIT" || !endsGroup(q) {
			t.Errorf("commit event says %q", q)
		}
		if alg == checksumCRC32 && (!checkCRC(rot) || !checkCRC(c) || !checkCRC(heartbeatEvent(7, alg, "f", 9))) {
			t.Errorf("synthetic events have bad checksums")
		}
	}
}

// TestEmptyTransaction checks the rewritten GTID event of an excluded DDL.
func TestEmptyTransaction(t *testing.T) {
	_, s := loadRecorded(t)
	found := false
	for i, f := range s.Archive.Files {
		_, err := walkFile(context.Background(), f, false, func(w *walker, we walkEvent) error {
			if !we.Begin || we.Txn.Flags&gtidStandalone == 0 || found {
				return nil
			}
			found = true
			e := emptyGTIDEvent(we.Raw, w.alg)
			g, err := parseGTIDEvent(e, w.alg)
			if err != nil || g.GTID != we.Txn.GTID || g.Flags&gtidStandalone != 0 || !checkCRC(e) {
				t.Errorf("%s: empty GTID event %+v, %v", s.Files[i].Name, g, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatal("no standalone (DDL) transaction in the recorded archive")
	}
}

func TestPacketWriter(t *testing.T) {
	for _, n := range []int{19, 0xffffff - 1, 0xffffff, 0xffffff + 5} {
		var buf bytes.Buffer
		pw := &packetWriter{w: bufio.NewWriter(&buf), seq: 1}
		ev := bytes.Repeat([]byte{0xab}, n)
		if err := pw.event(ev); err != nil {
			t.Fatal(err)
		}
		pw.w.Flush()
		// Reassemble.
		var payload []byte
		b := buf.Bytes()
		seq := byte(1)
		for {
			l := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
			if b[3] != seq {
				t.Fatalf("%d: packet sequence %d, want %d", n, b[3], seq)
			}
			seq++
			payload = append(payload, b[4:4+l]...)
			b = b[4+l:]
			if l < 0xffffff {
				break
			}
		}
		if len(b) != 0 || payload[0] != 0 || !bytes.Equal(payload[1:], ev) {
			t.Errorf("%d: payload of %d bytes, %d left over", n, len(payload), len(b))
		}
	}
}

// FuzzWalk feeds arbitrary bytes after a valid file start: the reader and
// the grouping must fail cleanly, never panic.
func FuzzWalk(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "recorded", "binlog.000001"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[4:2000])
	f.Add(b[4:])
	f.Fuzz(func(t *testing.T, data []byte) {
		w := &walker{}
		_ = binlog.ReadEvents(bytes.NewReader(append(slices.Clone(binlog.Magic), data...)), func(_ int64, e binlog.Event) error {
			ev := e.Raw
			if _, err := w.step(ev); err != nil {
				return err
			}
			_, _ = parseGTIDList(ev, w.alg)
			_, _ = parseGTIDEvent(ev, w.alg)
			_ = queryText(ev, w.alg)
			return nil
		})
	})
}
