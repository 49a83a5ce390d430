package pitr

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/binlog"
)

// File is one binary log file of an archive, in order.
type File struct {
	Name    string // the server's name of the file
	Path    string // where it is
	Seq     int    // its numeric suffix
	Partial bool   // still being written: may end mid-transaction
	// Index is the file's index entry (nil for a plain directory and for
	// the file being written).
	Index *binlog.IndexEntry
}

// Archive is a directory of binary log files: a `dbpilot binlog stream`
// archive (index.jsonl, NAME.zst, NAME.partial) or a plain copy of a
// server's own binary logs.
type Archive struct {
	Dir   string
	Files []File
	// Indexed: a `dbpilot binlog stream` archive, read through its index
	// (its files may come from several servers, in index order).
	Indexed bool
}

var binlogName = regexp.MustCompile(`^(.+)\.([0-9]{6,})(\.zst|\.partial)?$`)

// OpenArchive lists the files of the archive in dir, in order.
//
// A `dbpilot binlog stream` archive (it has an index.jsonl) is read through
// the binlog package: its finished files in index order (those pruned by
// retention left out), then the file being written; a file the index
// lists that is not there is an error naming it. A plain copy of a
// server's binary logs (no index) is ordered by the files' numbers; a hole
// in the numbers is an error naming the missing file.
func OpenArchive(dir string) (*Archive, error) {
	if _, err := os.ReadDir(dir); err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read binlog archive")
	}
	if _, err := os.Stat(filepath.Join(dir, binlog.IndexName)); err == nil {
		return openIndexed(dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read archive index")
	}
	return openPlain(dir)
}

// openIndexed lists a streamed archive's files with binlog.Files.
func openIndexed(dir string) (*Archive, error) {
	files, err := binlog.Files(dir)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read archive index")
	}
	a := &Archive{Dir: dir, Indexed: true}
	for _, af := range files {
		if ie := af.Index; ie != nil {
			if _, err := os.Stat(af.Path); err != nil {
				return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: archive %s: file %s is missing (%s lists it, GTIDs after %s up to %s)", dir, ie.File, binlog.IndexName, orNone(ie.GTIDStart), orNone(ie.GTIDEnd))
			}
		}
		f := File{Name: af.Name, Path: af.Path, Partial: af.Partial, Index: af.Index}
		if m := binlogName.FindStringSubmatch(af.Name); m != nil {
			f.Seq, _ = strconv.Atoi(m[2])
		}
		a.Files = append(a.Files, f)
	}
	if len(a.Files) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: %s holds no binary log files", dir)
	}
	for i := 1; i < len(a.Files); i++ {
		if a.Files[i-1].Partial {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: archive %s: %s is still partial but %s follows it", dir, filepath.Base(a.Files[i-1].Path), filepath.Base(a.Files[i].Path))
		}
	}
	return a, nil
}

// openPlain lists a copy of one server's binary log files by number.
func openPlain(dir string) (*Archive, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: read binlog archive")
	}
	a := &Archive{Dir: dir}
	byName := map[string]File{}
	prefix := ""
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		m := binlogName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if prefix != "" && m[1] != prefix {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: %s holds binary logs of two names (%s.*, %s.*); keep one server's files per directory", dir, prefix, m[1])
		}
		prefix = m[1]
		seq, _ := strconv.Atoi(m[2])
		name := m[1] + "." + m[2]
		f := File{Name: name, Path: filepath.Join(dir, e.Name()), Seq: seq, Partial: m[3] == ".partial"}
		if old, ok := byName[name]; ok {
			// NAME.zst wins over a leftover NAME.partial or plain NAME.
			if old.Partial || (m[3] != ".zst" && !strings.HasSuffix(old.Path, ".zst")) {
				byName[name] = f
			} else if m[3] == ".zst" {
				byName[name] = f
			}
			continue
		}
		byName[name] = f
	}
	for _, f := range byName {
		a.Files = append(a.Files, f)
	}
	slices.SortFunc(a.Files, func(x, y File) int { return x.Seq - y.Seq })
	if len(a.Files) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: %s holds no binary log files", dir)
	}
	// A copy of a server's own files: the last one may have been in use
	// when copied, so it may end inside a transaction.
	a.Files[len(a.Files)-1].Partial = true
	for i := 1; i < len(a.Files); i++ {
		if a.Files[i-1].Partial {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: archive %s: %s is still partial but %s follows it", dir, filepath.Base(a.Files[i-1].Path), a.Files[i].Name)
		}
		if gap := a.Files[i].Seq - a.Files[i-1].Seq; gap != 1 {
			missing := fmt.Sprintf("%s.%0*d", prefix, len(a.Files[i].Name)-len(prefix)-1, a.Files[i-1].Seq+1)
			if gap > 2 {
				missing += fmt.Sprintf(" (and %d more)", gap-2)
			}
			return nil, &GapError{Dir: dir, File: missing, After: a.Files[i-1].Name, Before: a.Files[i].Name}
		}
	}
	return a, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// GapError is a missing piece of the archive: a file, or GTIDs between two
// files.
type GapError struct {
	Dir           string
	File          string // the missing file, when known
	After, Before string // the files around the gap
	From, To      string // GTID positions around the gap, when known
}

func (e *GapError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pitr: archive %s: ", e.Dir)
	if e.File != "" {
		fmt.Fprintf(&b, "file %s is missing (between %s and %s)", e.File, e.After, e.Before)
	} else {
		fmt.Fprintf(&b, "GTIDs are missing between %s and %s", e.After, e.Before)
	}
	if e.From != "" || e.To != "" {
		fmt.Fprintf(&b, ": GTID gap after %s up to %s", orNone(e.From), orNone(e.To))
	}
	b.WriteString("; nothing applied")
	return b.String()
}

// CorruptError is an archive file that cannot be read as it was written.
type CorruptError struct {
	File     string
	Reason   string
	From, To string // the GTID range the file holds, when known
}

func (e *CorruptError) Error() string {
	s := fmt.Sprintf("pitr: archive file %s is corrupt: %s", e.File, e.Reason)
	if e.From != "" || e.To != "" {
		s += fmt.Sprintf("; GTID gap after %s up to %s", orNone(e.From), orNone(e.To))
	}
	return s + "; nothing applied"
}
