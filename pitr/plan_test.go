package pitr

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/gtid"
)

// recorded describes testdata/recorded (see testdata/README.md).
type recorded struct {
	DumpPosition string   `json:"dump_position"`
	RowN         int      `json:"row_n"`
	Until        string   `json:"until"`    // gtid_binlog_pos right after row N
	PauseAt      int64    `json:"pause_at"` // no commit in the second before or after
	Paused       string   `json:"paused"`   // gtid_binlog_pos during the pause
	Accident     []string `json:"accident"` // a DELETE and a DROP TABLE
	After        string   `json:"after"`    // gtid_binlog_pos after them
}

func loadRecorded(t *testing.T) (*recorded, *Scan) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "recorded.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r, scanDir(t, filepath.Join("testdata", "recorded"))
}

func scanDir(t *testing.T, dir string) *Scan {
	t.Helper()
	a, err := OpenArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ScanArchive(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func list(t *testing.T, s string) gtid.MariaList {
	t.Helper()
	l, err := gtid.ParseMariaList(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestScanRecorded(t *testing.T) {
	r, s := loadRecorded(t)
	if err := s.Problem(-1); err != nil {
		t.Fatalf("recorded archive: %v", err)
	}
	if len(s.Files) < 4 || len(s.Txns) < 200 {
		t.Fatalf("scan: %d files, %d transactions", len(s.Files), len(s.Txns))
	}
	// Every file's end is the next one's start.
	for i := 1; i < len(s.Files); i++ {
		if !s.Files[i].Start.Equal(s.Files[i-1].End) {
			t.Errorf("%s starts at %s, %s ended at %s", s.Files[i].Name, s.Files[i].Start, s.Files[i-1].Name, s.Files[i-1].End)
		}
	}
	// Sequence numbers are increasing per domain, and the multi-statement
	// transactions are one transaction each.
	last := map[uint32]uint64{}
	for _, tx := range s.Txns {
		if tx.GTID.Seq <= last[tx.GTID.Domain] {
			t.Fatalf("%s after sequence %d", tx.GTID, last[tx.GTID.Domain])
		}
		last[tx.GTID.Domain] = tx.GTID.Seq
	}
	if end := s.Files[len(s.Files)-1].End; !end.Contains(list(t, r.After)) {
		t.Errorf("archive ends at %s, before %s", end, r.After)
	}
}

func TestPlanUntilGTID(t *testing.T) {
	r, s := loadRecorded(t)
	p, err := NewPlan(s, list(t, r.DumpPosition), Target{GTIDs: list(t, r.Until)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Until.Equal(list(t, r.Until)) || p.Txns == 0 || p.LastFile < p.FirstFile {
		t.Errorf("plan %+v", p)
	}
	// Only domain 0: domain 1 is not applied (START SLAVE UNTIL's rule).
	g0, _ := list(t, r.Until).DomainSeq(0)
	p0, err := NewPlan(s, list(t, r.DumpPosition), Target{GTIDs: gtid.MariaList{g0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p0.PerDomain[1] != 0 || p0.PerDomain[0] != p.PerDomain[0] {
		t.Errorf("domain 0 only: per domain %v, both: %v", p0.PerDomain, p.PerDomain)
	}
}

func TestPlanUntilTime(t *testing.T) {
	r, s := loadRecorded(t)
	start := list(t, r.DumpPosition)
	p, err := NewPlan(s, start, Target{Time: time.Unix(r.PauseAt, 0)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Until.Equal(list(t, r.Paused)) {
		t.Errorf("until-time %d: %s, want %s", r.PauseAt, p.Until, r.Paused)
	}
	// Before anything after the dump: refused.
	if _, err := NewPlan(s, start, Target{Time: time.Unix(int64(s.Txns[0].Time)-3600, 0)}, nil); err == nil {
		t.Errorf("a time before the dump was accepted")
	}
}

func TestPlanRefusesPoints(t *testing.T) {
	r, s := loadRecorded(t)
	start := list(t, r.DumpPosition)
	g0, _ := list(t, r.Until).DomainSeq(0)
	prev, next := g0, g0
	prev.Seq--
	next.Seq++
	for name, tc := range map[string]struct {
		g    gtid.MariaGTID
		want []string
	}{
		"other server":   {gtid.MariaGTID{Domain: 0, Server: g0.Server + 1, Seq: g0.Seq}, []string{"falls between", "before " + g0.String(), "after " + next.String()}},
		"beyond":         {gtid.MariaGTID{Domain: 0, Server: g0.Server, Seq: 1 << 40}, []string{"is not a transaction", "after none"}},
		"in the dump":    {gtid.MariaGTID{Domain: 0, Server: g0.Server, Seq: 1}, []string{"the dump already contains it"}},
		"unknown domain": {gtid.MariaGTID{Domain: 7, Server: 1, Seq: 5}, []string{"before none, after none"}},
	} {
		_, err := NewPlan(s, start, Target{GTIDs: gtid.MariaList{tc.g}}, nil)
		if err == nil {
			t.Errorf("%s: %s accepted", name, tc.g)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want %q", name, err, w)
			}
		}
	}
	_ = prev
}

func TestPlanExclude(t *testing.T) {
	r, s := loadRecorded(t)
	start := list(t, r.DumpPosition)
	var ex []gtid.MariaGTID
	for _, a := range r.Accident {
		g, _ := gtid.ParseMariaGTID(a)
		ex = append(ex, g)
	}
	p, err := NewPlan(s, start, Target{GTIDs: list(t, r.After)}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Exclude) != 2 {
		t.Errorf("exclude %v", p.Exclude)
	}
	// Outside the range: refused.
	if _, err := NewPlan(s, start, Target{GTIDs: list(t, r.Until)}, ex); err == nil || !strings.Contains(err.Error(), "--exclude-gtid") {
		t.Errorf("exclude after the target: %v", err)
	}
}

func TestArchiveGapAndCorruption(t *testing.T) {
	r, _ := loadRecorded(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "recorded", "binlog.0*"))
	// A missing file.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "recorded"))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, filepath.Base(files[1])))
	_, err := OpenArchive(dir)
	var ge *GapError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), filepath.Base(files[1])) {
		t.Errorf("missing file: %v", err)
	}
	// A corrupt file: the event checksum names it and its GTID range.
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "recorded"))); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(files[1]))
	b, _ := os.ReadFile(p)
	b[len(b)-40] ^= 0x55
	os.WriteFile(p, b, 0o600)
	s := scanDir(t, dir)
	_, err = NewPlan(s, list(t, r.DumpPosition), Target{GTIDs: list(t, r.After)}, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Base(files[1])) || ce.From == "" || ce.To == "" {
		t.Errorf("corrupt file: %v", err)
	}
	t.Log(err)
	// A GTID gap between files: a file that holds other GTIDs.
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "recorded"))); err != nil {
		t.Fatal(err)
	}
	// Replace file 2 by file 3's content renamed: its Gtid_list does not
	// follow file 1.
	b3, _ := os.ReadFile(files[2])
	os.WriteFile(filepath.Join(dir, filepath.Base(files[1])), b3, 0o600)
	s = scanDir(t, dir)
	err = s.Problem(-1)
	if !errors.As(err, &ge) || ge.From == "" || ge.To == "" {
		t.Errorf("GTID gap: %v", err)
	}
	t.Log(err)
}

func TestTrailingIncompleteTransaction(t *testing.T) {
	r, _ := loadRecorded(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "recorded", "binlog.0*"))
	dir := t.TempDir()
	// The first three files, the third cut inside its last transaction,
	// as the streamer's NAME.partial may be.
	for i, f := range files[:3] {
		b, _ := os.ReadFile(f)
		name := filepath.Base(f)
		if i == 2 {
			b = b[:len(b)-120] // the Rotate, the XID and part of the rows
			name += ".partial"
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	s := scanDir(t, dir)
	if err := s.Problem(-1); err != nil {
		t.Fatalf("a partial file's trailing transaction is not an error: %v", err)
	}
	if s.Incomplete == nil {
		t.Fatalf("no incomplete transaction found")
	}
	_, err := NewPlan(s, list(t, r.DumpPosition), Target{GTIDs: gtid.MariaList{s.Incomplete.GTID}}, nil)
	if err == nil || !strings.Contains(err.Error(), "only in part") {
		t.Errorf("until the incomplete transaction: %v", err)
	}
}

// TestArchiveStartsAfterDump refuses an archive whose first file begins
// after the dump's position.
func TestArchiveStartsAfterDump(t *testing.T) {
	r, _ := loadRecorded(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "recorded", "binlog.0*"))
	dir := t.TempDir()
	for _, f := range files[2:] {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
	}
	s := scanDir(t, dir)
	_, err := NewPlan(s, list(t, r.DumpPosition), Target{GTIDs: list(t, r.After)}, nil)
	var ge *GapError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "between the dump and "+filepath.Base(files[2])) {
		t.Errorf("archive after the dump: %v", err)
	}
	t.Log(err)
}
