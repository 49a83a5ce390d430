package pitr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/binlog"
	"github.com/dbpilot/dbpilot/gtid"
)

// Txn is one transaction of the archive.
type Txn struct {
	GTID   gtid.MariaGTID
	File   int    // index into Scan.Files
	Time   uint32 // commit time: the timestamp of its last event (Unix seconds)
	Events int
	Flags  byte // GTID event flags
}

// FileSummary is what a scan learnt about one archive file.
type FileSummary struct {
	Name    string // the server's name of the file
	File    string // the archive's file (NAME.zst, NAME@SERVERID.zst, NAME.partial, NAME)
	Partial bool
	// Start is the archive's position before the file: the index's
	// gtid_start, else the file's Gtid_list (a file of the same server as
	// the previous one), else the previous file's End (the first file of
	// another server: its Gtid_list is that server's, not the archive's).
	Start gtid.MariaList
	End   gtid.MariaList // Start plus its complete transactions
	// NewSource: the file was written by another server than the previous
	// one (a failover in a streamed archive); its continuity is checked
	// by its transactions' sequence numbers, not by its Gtid_list.
	NewSource bool
	ServerID  uint32 // of its Format_description event
	Checksum  byte
	Txns      int
	Events    int64
	// Err is why the file cannot be used (corrupt, truncated, sha256).
	Err error
	// first is the first transaction of each domain in the file.
	first map[uint32]gtid.MariaGTID
}

// Scan is a verified pass over an archive.
type Scan struct {
	Archive *Archive
	Files   []FileSummary
	Txns    []Txn
	// Incomplete is the trailing transaction of a partial file that has
	// no end yet; it is never applied.
	Incomplete *Txn
}

// walker groups a file's events into transactions.
type walker struct {
	alg      byte
	inTxn    bool
	txn      Txn
	sawFDE   bool
	serverID uint32
}

// walkEvent is one event as a walk reports it.
type walkEvent struct {
	Raw   []byte
	H     header
	Txn   *Txn // the transaction the event belongs to, nil outside one
	Begin bool // the transaction's GTID event
	End   bool // the transaction's last event
}

// step classifies one event.
func (w *walker) step(ev []byte) (walkEvent, error) {
	h := parseHeader(ev)
	we := walkEvent{Raw: ev, H: h}
	if !w.sawFDE {
		if h.Type != evFormatDesc {
			return we, fmt.Errorf("first event is type %d, not Format_description", h.Type)
		}
		alg, err := fdeChecksum(ev)
		if err != nil {
			return we, err
		}
		w.alg, w.sawFDE, w.serverID = alg, true, h.ServerID
		return we, nil
	}
	if w.alg == checksumCRC32 && !checkCRC(ev) {
		return we, fmt.Errorf("event checksum mismatch (type %d, server %d)", h.Type, h.ServerID)
	}
	switch h.Type {
	case evGTID:
		if w.inTxn {
			return we, fmt.Errorf("transaction %s has no end before %s", w.txn.GTID, "the next GTID event")
		}
		g, err := parseGTIDEvent(ev, w.alg)
		if err != nil {
			return we, err
		}
		w.inTxn = true
		w.txn = Txn{GTID: g.GTID, Flags: g.Flags, Time: h.Timestamp}
		we.Begin = true
	case evStartEncryption:
		return we, errors.New("the file is encrypted (encrypt_binlog); decrypting archives is not supported")
	}
	if w.inTxn {
		w.txn.Events++
		if h.Timestamp > w.txn.Time {
			w.txn.Time = h.Timestamp
		}
		we.Txn = &w.txn
		if !we.Begin {
			switch {
			case h.Type == evXID || h.Type == evXAPrepare:
				we.End = true
			case h.Type == evQuery:
				we.End = w.txn.Flags&gtidStandalone != 0 || endsGroup(queryText(ev, w.alg))
			}
		}
		if we.End {
			w.inTxn = false
		}
	}
	return we, nil
}

// walkFile reads one file (binlog.OpenFile, binlog.ReadEvents), calling
// fn for each event. verify checks the index's sha256 and size.
func walkFile(ctx context.Context, f File, verify bool, fn func(*walker, walkEvent) error) (w *walker, err error) {
	rc, err := binlog.OpenFile(f.Path)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: open archive file")
	}
	defer rc.Close()
	sum := sha256.New()
	cr := &countWriter{w: sum}
	w = &walker{}
	n := 0
	err = binlog.ReadEvents(io.TeeReader(rc, cr), func(off int64, e binlog.Event) error {
		if n++; n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		we, err := w.step(e.Raw)
		if err != nil {
			return fmt.Errorf("at offset %d: %w", off, err)
		}
		return fn(w, we)
	})
	var torn *binlog.TornError
	switch {
	case errors.As(err, &torn) && f.Partial:
		// the streamer is writing it
	case errors.As(err, &torn) && torn.Offset == 0:
		return w, fmt.Errorf("no binlog header: %w", io.ErrUnexpectedEOF)
	case errors.As(err, &torn):
		return w, fmt.Errorf("truncated event at offset %d", torn.Offset)
	case err != nil:
		return w, err
	}
	if !w.sawFDE {
		return w, errors.New("no Format_description event")
	}
	if verify && f.Index != nil {
		if _, err := io.Copy(io.Discard, io.TeeReader(rc, cr)); err != nil {
			return w, err
		}
		got := hex.EncodeToString(sum.Sum(nil))
		if f.Index.SHA256 != "" && !strings.EqualFold(got, f.Index.SHA256) {
			return w, fmt.Errorf("sha256 %s, the index says %s", got, f.Index.SHA256)
		}
		if f.Index.Size > 0 && cr.n != f.Index.Size {
			return w, fmt.Errorf("%d bytes, the index says %d", cr.n, f.Index.Size)
		}
	}
	if w.inTxn && !f.Partial {
		return w, fmt.Errorf("ends inside transaction %s", w.txn.GTID)
	}
	return w, nil
}

// countWriter counts and hashes the bytes read.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

// ScanArchive reads every file of the archive once: checks each event's
// checksum, the index's sha256, the files' continuity, and lists the
// transactions. Problems are recorded per file (FileSummary.Err); Check
// turns them into one error.
func ScanArchive(ctx context.Context, a *Archive) (*Scan, error) {
	s := &Scan{Archive: a}
	for i, f := range a.Files {
		fs := FileSummary{Name: f.Name, File: filepath.Base(f.Path), Partial: f.Partial, first: map[uint32]gtid.MariaGTID{}}
		first := len(s.Txns)
		var list gtid.MariaList // the file's Gtid_list: its server's state
		w, err := walkFile(ctx, f, true, func(w *walker, we walkEvent) error {
			fs.Events++
			switch {
			case we.H.Type == evGTIDList && we.Txn == nil:
				l, err := parseGTIDList(we.Raw, w.alg)
				if err != nil {
					return err
				}
				if list == nil {
					list = l
				}
			case we.End:
				t := *we.Txn
				t.File = i
				s.Txns = append(s.Txns, t)
			}
			return nil
		})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if w != nil {
			fs.ServerID, fs.Checksum = w.serverID, w.alg
			if err == nil && w.inTxn && f.Partial {
				t := w.txn
				t.File = i
				s.Incomplete = &t
			}
		}
		if err != nil {
			fs.Err = err
			s.Txns = s.Txns[:first] // a corrupt file contributes nothing
		}
		fs.Txns = len(s.Txns) - first
		var prev *FileSummary
		if i > 0 {
			prev = &s.Files[i-1]
			fs.NewSource = fs.ServerID != 0 && prev.ServerID != 0 && fs.ServerID != prev.ServerID
		}
		switch {
		case f.Index != nil && f.Index.GTIDStart != "":
			l, perr := gtid.ParseMariaList(f.Index.GTIDStart)
			if perr != nil && fs.Err == nil {
				fs.Err = fmt.Errorf("%s: gtid_start %q: %v", binlog.IndexName, f.Index.GTIDStart, perr)
			}
			fs.Start = l
		case fs.NewSource && prev.Err == nil:
			fs.Start = prev.End
		default:
			fs.Start = list
		}
		end := fs.Start
		for _, t := range s.Txns[first:] {
			end = end.Union(gtid.MariaList{t.GTID})
			if _, ok := fs.first[t.GTID.Domain]; !ok {
				fs.first[t.GTID.Domain] = t.GTID
			}
		}
		fs.End = end
		s.Files = append(s.Files, fs)
	}
	return s, nil
}

// Problem returns the first problem of the archive at or before file
// index last (-1: any file): a corrupt file or a GTID gap between two
// files, each naming the file and the GTIDs that cannot be applied.
//
// Between two files, the later one's start position (the index's
// gtid_start, or its Gtid_list) must not be past the earlier one's end.
// The first file of another server (a failover) must continue the
// archive's sequence in every domain it writes: its first transaction of
// a domain is the next sequence number after the previous file's end.
func (s *Scan) Problem(last int) error {
	if last < 0 || last >= len(s.Files) {
		last = len(s.Files) - 1
	}
	for i := 0; i <= last; i++ {
		fs := s.Files[i]
		if fs.Err != nil {
			ce := &CorruptError{File: fs.File, Reason: fs.Err.Error()}
			if ix := s.Archive.Files[i].Index; ix != nil {
				ce.From, ce.To = ix.GTIDStart, ix.GTIDEnd
			}
			if ce.From == "" {
				if fs.Start != nil {
					ce.From = fs.Start.String()
				} else if i > 0 {
					ce.From = s.Files[i-1].End.String()
				}
			}
			if ce.To == "" && i+1 < len(s.Files) && s.Files[i+1].Start != nil {
				ce.To = s.Files[i+1].Start.String()
			}
			return ce
		}
		if i == 0 {
			continue
		}
		prev := s.Files[i-1]
		if prev.Err != nil {
			continue
		}
		var from, to []string
		for _, g := range fs.Start {
			have, _ := prev.End.DomainSeq(g.Domain)
			if want, _ := fs.Start.DomainSeq(g.Domain); want == g && have.Seq < g.Seq {
				from = append(from, gtidOrDomain(have, g.Domain))
				to = append(to, g.String())
			}
		}
		if fs.NewSource && len(to) == 0 {
			for _, d := range slices.Sorted(maps.Keys(fs.first)) {
				g := fs.first[d]
				have, ok := prev.End.DomainSeq(d)
				if ok && g.Seq > have.Seq+1 {
					from = append(from, have.String())
					to = append(to, gtid.MariaGTID{Domain: d, Server: g.Server, Seq: g.Seq - 1}.String())
				}
			}
		}
		if len(to) > 0 {
			return &GapError{Dir: s.Archive.Dir, After: prev.File, Before: fs.File, From: strings.Join(from, ","), To: strings.Join(to, ",")}
		}
	}
	return nil
}

func gtidOrDomain(g gtid.MariaGTID, domain uint32) string {
	if g.Seq == 0 {
		return fmt.Sprintf("the start of domain %d", domain)
	}
	return g.String()
}

// ServerIDs returns the server IDs that wrote the archive's transactions.
func (s *Scan) ServerIDs() []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, t := range s.Txns {
		if !seen[t.GTID.Server] {
			seen[t.GTID.Server] = true
			out = append(out, t.GTID.Server)
		}
	}
	return out
}

func unixTime(sec uint32) time.Time { return time.Unix(int64(sec), 0).UTC() }
