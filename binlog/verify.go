package binlog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Problem is one thing verify found wrong with an archive.
type Problem struct {
	File    string `json:"file,omitempty"`
	Kind    string `json:"kind"` // missing, checksum, corrupt, index, gap, unindexed, unfinished
	Message string `json:"message"`
	Gaps    []Gap  `json:"gaps,omitempty"` // the GTIDs the problem leaves out of the archive
}

func (p Problem) String() string { return p.Message }

// FileCheck is what verify read of one file.
type FileCheck struct {
	File         string `json:"file"`
	Partial      bool   `json:"partial,omitempty"`
	OK           bool   `json:"ok"`
	Transactions int    `json:"transactions"`
	GTIDStart    string `json:"gtid_start"`
	GTIDEnd      string `json:"gtid_end"`
}

// Report is the result of Verify.
type Report struct {
	Dir      string      `json:"dir"`
	Files    []FileCheck `json:"files"`
	Position string      `json:"position"` // after the last complete transaction in the archive
	Problems []Problem   `json:"problems"`
	Notes    []string    `json:"notes,omitempty"` // not problems (e.g. a partial transaction at the end)
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) add(p Problem) { r.Problems = append(r.Problems, p) }

// Verify checks an archive: every indexed file is there, its checksums
// (of the .zst and of the binary log in it) and its size match the index,
// every event's CRC-32 is right, the file ends after a complete
// transaction, the GTIDs and counts match the index, and the GTIDs are
// continuous per domain inside each file and from each file to the next
// (the partial file included). A missing or unreadable file is named with
// the GTIDs it leaves out. The error is for an archive that cannot be read
// at all.
func Verify(dir string) (*Report, error) {
	rep := &Report{Dir: dir}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, fmt.Errorf("binlog: archive %s: %w", dir, err)
	}
	idx, err := ReadIndex(dir)
	if err != nil {
		rep.add(Problem{File: IndexName, Kind: "index", Message: fmt.Sprintf("%s: %v", IndexName, err)})
	}
	partials, err := partialFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("binlog: archive %s: %w", dir, err)
	}
	partials, finished := withoutFinished(partials, idx)
	for _, p := range finished {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is finished already as %s (a stream stopped before removing it); the next stream removes it", p, strings.TrimSuffix(p, PartialSuffix)+ZstSuffix))
	}
	indexed := map[string]bool{}
	var prev *position
	prevFile := ""
	flavor := ""
	for _, e := range idx {
		indexed[e.File] = true
		if flavor == "" {
			flavor = e.Flavor
		}
		if flavor == "" {
			flavor = FlavorMariaDB
		}
		start, err1 := parsePosition(flavor, e.GTIDStart)
		end, err2 := parsePosition(flavor, e.GTIDEnd)
		if err := errors.Join(err1, err2); err != nil {
			rep.add(Problem{File: e.File, Kind: "index", Message: fmt.Sprintf("%s: index entry has a bad GTID position: %v", e.File, err)})
			prev, prevFile = nil, e.File
			continue
		}
		if prev != nil {
			if gaps := diff(*prev, start); len(gaps) > 0 {
				rep.add(Problem{File: e.File, Kind: "gap", Gaps: gaps,
					Message: fmt.Sprintf("GTID gap between %s and %s: %s", prevFile, e.File, gapList(gaps))})
			}
		}
		fc := FileCheck{File: e.File, GTIDStart: e.GTIDStart, GTIDEnd: e.GTIDEnd, Transactions: e.Transactions}
		fc.OK = verifyFile(rep, dir, e, start, end, flavor)
		rep.Files = append(rep.Files, fc)
		p := end
		prev, prevFile = &p, e.File
	}
	if prev != nil {
		rep.Position = prev.String()
	}
	// Files on disk the index does not name.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("binlog: archive %s: %w", dir, err)
	}
	for _, de := range ents {
		n := de.Name()
		if !strings.HasSuffix(n, ZstSuffix) || indexed[n] {
			continue
		}
		if slices.Contains(partials, strings.TrimSuffix(n, ZstSuffix)+PartialSuffix) {
			continue // being finished
		}
		rep.add(Problem{File: n, Kind: "unindexed", Message: fmt.Sprintf("%s is not in %s", n, IndexName)})
	}
	if len(partials) > 1 {
		rep.add(Problem{Kind: "corrupt", Message: fmt.Sprintf("several files being written: %s", strings.Join(partials, ", "))})
	}
	for _, name := range partials {
		fs, err := scanFile(filepath.Join(dir, name), prev, flavor)
		if err != nil {
			rep.add(Problem{File: name, Kind: "corrupt", Message: fmt.Sprintf("%s: %v", name, err)})
			continue
		}
		fc := FileCheck{File: name, Partial: true, OK: true, GTIDStart: fs.stats.start.String()}
		var torn *TornError
		switch {
		case fs.err != nil && !errors.As(fs.err, &torn):
			fc.OK = false
			rep.add(Problem{File: name, Kind: "corrupt", Message: fmt.Sprintf("%s: %v (transactions after %s cannot be read)", name, fs.err, fs.bStats.start)})
		case fs.err != nil || fs.inTxn:
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s ends inside a transaction after offset %d; the next stream cuts it there", name, fs.boundary))
		}
		for _, c := range fs.crcErrs {
			fc.OK = false
			rep.add(Problem{File: name, Kind: "checksum", Message: fmt.Sprintf("%s: %s", name, c)})
		}
		for _, g := range fs.gaps {
			fc.OK = false
			rep.add(Problem{File: name, Kind: "gap", Gaps: []Gap{g}, Message: fmt.Sprintf("%s: %s", name, g)})
		}
		fc.Transactions = fs.stats.transactions
		fc.GTIDEnd = fs.end.String()
		rep.Files = append(rep.Files, fc)
		rep.Position = fs.end.String()
	}
	return rep, nil
}

// verifyFile checks one indexed file; it reports whether it is sound.
func verifyFile(rep *Report, dir string, e IndexEntry, start, end position, flavor string) bool {
	lost := diff(start, end)
	span := fmt.Sprintf("GTIDs after %s up to %s", orNone(e.GTIDStart), orNone(e.GTIDEnd))
	if len(lost) > 0 {
		span = gapList(lost)
	}
	bad := func(kind, format string, args ...any) bool {
		rep.add(Problem{File: e.File, Kind: kind, Gaps: lost,
			Message: fmt.Sprintf("%s: %s; the archive lacks %s", e.File, fmt.Sprintf(format, args...), span)})
		return false
	}
	if e.File == "" || e.File != filepath.Base(e.File) {
		return bad("index", "index entry for %s names no file", e.Name)
	}
	path := filepath.Join(dir, e.File)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return bad("missing", "file is missing")
	}
	if err != nil {
		return bad("missing", "%v", err)
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return bad("corrupt", "read: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.ZstSHA256 {
		return bad("checksum", "checksum mismatch: sha256 of the compressed file is %s, the index says %s", short(got), short(e.ZstSHA256))
	}
	fs, err := scanFile(path, &start, flavor)
	if err != nil {
		return bad("corrupt", "%v", err)
	}
	if fs.err != nil {
		return bad("corrupt", "%v", fs.err)
	}
	if fs.sha256 != e.SHA256 || fs.size != e.Size {
		return bad("checksum", "checksum mismatch: the binary log in it has %d bytes, sha256 %s; the index says %d bytes, %s", fs.size, short(fs.sha256), e.Size, short(e.SHA256))
	}
	ok := true
	for _, c := range fs.crcErrs {
		ok = bad("checksum", "%s", c)
	}
	if fs.inTxn {
		ok = bad("corrupt", "ends inside a transaction")
	}
	for _, g := range fs.gaps {
		rep.add(Problem{File: e.File, Kind: "gap", Gaps: []Gap{g}, Message: fmt.Sprintf("%s: %s", e.File, g)})
		ok = false
	}
	if !fs.end.equal(end) {
		rep.add(Problem{File: e.File, Kind: "index", Message: fmt.Sprintf("%s: ends at %s, the index says %s", e.File, fs.end, e.GTIDEnd)})
		ok = false
	}
	if fs.stats.transactions != e.Transactions || fs.stats.events != e.Events {
		rep.add(Problem{File: e.File, Kind: "index", Message: fmt.Sprintf("%s: has %d transactions in %d events, the index says %d in %d", e.File, fs.stats.transactions, fs.stats.events, e.Transactions, e.Events)})
		ok = false
	}
	return ok
}

func gapList(gaps []Gap) string {
	parts := make([]string, len(gaps))
	for i, g := range gaps {
		if g.Kind == "gap" {
			parts[i] = fmt.Sprintf("domain %s seq %s (after %s, through %s)", g.Domain, g.Missing, orNone(g.After), orNone(g.Next))
		} else {
			parts[i] = g.String()
		}
	}
	return strings.Join(parts, ", ")
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
