package pitr

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/gtid"
)

// Target is where a point-in-time restore stops: after the transactions
// of GTIDs (each included, as START SLAVE UNTIL master_gtid_pos does; only
// the domains named are applied), or after the last transaction of every
// domain committed at or before Time.
type Target struct {
	GTIDs gtid.MariaList
	Time  time.Time
}

func (t Target) String() string {
	if !t.Time.IsZero() {
		return "time " + t.Time.UTC().Format(time.RFC3339)
	}
	return t.GTIDs.String()
}

// Plan is what a point-in-time restore applies: per domain, the
// transactions after Start up to and including Until.
type Plan struct {
	Start    gtid.MariaList // the dump's position
	Until    gtid.MariaList // per domain, the last transaction applied
	Exclude  []gtid.MariaGTID
	Txns     int   // transactions to apply (excluded ones included, as empty)
	Events   int64 // their events
	LastFile int   // index of the last archive file needed
	// PerDomain counts the transactions to apply by domain.
	PerDomain map[uint32]int
	// FirstFile is the first archive file holding a transaction to apply.
	FirstFile int
	// Warnings: problems of the archive after the files the plan needs.
	Warnings []string
}

// ParseGTIDs parses a comma-separated list of GTIDs, keeping every one
// (unlike a position, several of one domain are allowed).
func ParseGTIDs(s string) ([]gtid.MariaGTID, error) {
	var out []gtid.MariaGTID
	for _, p := range strings.Split(s, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		g, err := gtid.ParseMariaGTID(p)
		if err != nil {
			return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "pitr: parse GTID %q", strings.TrimSpace(p))
		}
		out = append(out, g)
	}
	return out, nil
}

// NewPlan decides what to apply from the scanned archive, after the dump's
// position start, up to target, leaving out exclude. It refuses an until
// GTID that is not a whole transaction of the archive (naming the nearest
// transactions before and after), an archive that begins after start or
// has a gap or a corrupt file before the target.
func NewPlan(s *Scan, start gtid.MariaList, target Target, exclude []gtid.MariaGTID) (*Plan, error) {
	p := &Plan{Start: start, PerDomain: map[uint32]int{}, FirstFile: -1}
	var until []gtid.MariaGTID
	var err error
	if target.Time.IsZero() {
		until, err = untilGTIDs(s, start, target)
	} else {
		until, err = untilTime(s, start, target)
	}
	if err != nil {
		return nil, err
	}
	p.Until = gtid.NewMariaList(until...)
	untilSeq := map[uint32]uint64{}
	for _, g := range p.Until {
		untilSeq[g.Domain] = g.Seq
	}
	if err := s.reachesBack(start, untilSeq); err != nil {
		return nil, err
	}
	if err := p.count(s, untilSeq, exclude); err != nil {
		return nil, err
	}
	// Problems up to the last file needed stop the restore; later ones
	// are reported. A time target also needs the file after its last
	// transaction (a later commit proves none is missing before TIME).
	need := p.LastFile
	if !target.Time.IsZero() {
		need = len(s.Files) - 1
	}
	if need < 0 {
		need = 0
	}
	if err := s.Problem(need); err != nil {
		return nil, err
	}
	if err := s.Problem(-1); err != nil {
		p.Warnings = append(p.Warnings, err.Error()+" (after the restore target: not needed)")
	}
	return p, nil
}

// startSeq is start's sequence number in domain d (0 when it has none).
func startSeq(start gtid.MariaList, d uint32) uint64 {
	g, _ := start.DomainSeq(d)
	return g.Seq
}

// untilGTIDs is the end of each domain named by target's GTIDs, each a
// whole transaction of the archive after start.
func untilGTIDs(s *Scan, start gtid.MariaList, target Target) ([]gtid.MariaGTID, error) {
	if len(target.GTIDs) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: name the target with --until-gtid or --until-time")
	}
	var until []gtid.MariaGTID
	seen := map[uint32]bool{}
	for _, g := range target.GTIDs {
		if seen[g.Domain] {
			return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: --until-gtid %s names domain %d twice", target.GTIDs, g.Domain)
		}
		seen[g.Domain] = true
		if err := s.checkPoint(g, startSeq(start, g.Domain)); err != nil {
			return nil, err
		}
		until = append(until, g)
	}
	return until, nil
}

// untilTime is the end of each domain at target's time: its last
// transaction after start committed at or before it, else start's position
// in it.
func untilTime(s *Scan, start gtid.MariaList, target Target) ([]gtid.MariaGTID, error) {
	limit := target.Time.Unix()
	last := map[uint32]gtid.MariaGTID{}
	var dumpTime uint32 // the commit time of the dump's last transaction
	for _, t := range s.Txns {
		if t.GTID.Seq > startSeq(start, t.GTID.Domain) {
			if int64(t.Time) <= limit {
				last[t.GTID.Domain] = t.GTID
			}
		} else if g, ok := start.DomainSeq(t.GTID.Domain); ok && g == t.GTID {
			dumpTime = max(dumpTime, t.Time)
		}
	}
	if len(last) == 0 && int64(dumpTime) > limit {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: --until-time %s is before the dump (its last transaction committed at %s); restore an older dump", target.Time.UTC().Format(time.RFC3339), unixTime(dumpTime).Format(time.RFC3339))
	}
	// Every domain of the archive or the dump gets a position, so that
	// UNTIL does not drop it: one without transactions to apply stays
	// at the dump's position.
	for _, t := range s.Txns {
		if _, ok := last[t.GTID.Domain]; !ok {
			if g, ok := start.DomainSeq(t.GTID.Domain); ok {
				last[t.GTID.Domain] = g
			}
		}
	}
	for _, g := range start {
		if _, ok := last[g.Domain]; !ok {
			if sg, ok := start.DomainSeq(g.Domain); ok {
				last[g.Domain] = sg
			}
		}
	}
	var until []gtid.MariaGTID
	for _, g := range last {
		until = append(until, g)
	}
	if len(until) == 0 {
		return nil, dbpilot.Errorf(dbpilot.EINVALID, "pitr: no transaction of the archive after the dump's position %s was committed at or before %s", start, target.Time.UTC().Format(time.RFC3339))
	}
	return until, nil
}

// reachesBack checks that the archive reaches back to the dump's position
// start in every domain that is applied (up to untilSeq).
func (s *Scan) reachesBack(start gtid.MariaList, untilSeq map[uint32]uint64) error {
	first := s.archiveStart()
	if first == nil {
		return nil
	}
	for d := range untilSeq {
		first, ok := first.DomainSeq(d)
		if ok && first.Seq > startSeq(start, d) && untilSeq[d] > startSeq(start, d) {
			from := gtidOrDomain(gtid.MariaGTID{Domain: d, Server: first.Server, Seq: startSeq(start, d)}, d)
			if sg, ok := start.DomainSeq(d); ok {
				from = sg.String()
			}
			return &GapError{Dir: s.Archive.Dir, After: "the dump", Before: s.Files[0].File, From: from, To: first.String()}
		}
	}
	return nil
}

// count counts the transactions to apply (after p.Start, up to untilSeq)
// and the files holding them, and checks that each of exclude is one of
// them and not an XA transaction.
func (p *Plan) count(s *Scan, untilSeq map[uint32]uint64, exclude []gtid.MariaGTID) error {
	excl := map[gtid.MariaGTID]bool{}
	for _, g := range exclude {
		excl[g] = true
	}
	found := map[gtid.MariaGTID]bool{}
	p.LastFile = -1
	for _, t := range s.Txns {
		u, ok := untilSeq[t.GTID.Domain]
		if !ok || t.GTID.Seq <= startSeq(p.Start, t.GTID.Domain) || t.GTID.Seq > u {
			continue
		}
		if excl[t.GTID] {
			if t.Flags&(gtidPreparedXA|gtidCompletedXA) != 0 {
				return dbpilot.Errorf(dbpilot.EUNSUPPORTED, "pitr: --exclude-gtid %s is an XA transaction; excluding those is not supported", t.GTID)
			}
			found[t.GTID] = true
		}
		p.Txns++
		p.Events += int64(t.Events)
		p.PerDomain[t.GTID.Domain]++
		if p.FirstFile < 0 {
			p.FirstFile = t.File
		}
		p.LastFile = t.File
	}
	for _, g := range exclude {
		if !found[g] {
			return dbpilot.Errorf(dbpilot.EINVALID, "pitr: --exclude-gtid %s is not a transaction applied between the dump's position %s and %s", g, p.Start, p.Until)
		}
		p.Exclude = append(p.Exclude, g)
	}
	slices.SortFunc(p.Exclude, func(a, b gtid.MariaGTID) int {
		if a.Domain != b.Domain {
			return int(a.Domain) - int(b.Domain)
		}
		return int(a.Seq - b.Seq)
	})
	return nil
}

// archiveStart is the position before the archive's first transaction:
// the index's gtid_start of the first file (a streamed archive may start
// inside a file), else the first file's Gtid_list.
func (s *Scan) archiveStart() gtid.MariaList {
	if len(s.Files) == 0 {
		return nil
	}
	if ix := s.Archive.Files[0].Index; ix != nil && ix.GTIDStart != "" {
		if l, err := gtid.ParseMariaList(ix.GTIDStart); err == nil {
			return l
		}
	}
	return s.Files[0].Start
}

// checkPoint refuses an until GTID that is not a whole transaction of the
// archive, naming the nearest valid points of its domain.
func (s *Scan) checkPoint(g gtid.MariaGTID, startSeq uint64) error {
	var before, after *Txn
	for i := range s.Txns {
		t := &s.Txns[i]
		if t.GTID.Domain != g.Domain {
			continue
		}
		if t.GTID == g {
			if g.Seq <= startSeq {
				return dbpilot.Errorf(dbpilot.EINVALID, "pitr: --until-gtid %s: the dump already contains it (its position in domain %d is sequence %d)", g, g.Domain, startSeq)
			}
			return nil
		}
		if t.GTID.Seq < g.Seq || (t.GTID.Seq == g.Seq && t.GTID.Server < g.Server) {
			before = t
		} else if after == nil {
			after = t
		}
	}
	what := "is not a transaction of the archive"
	if inc := s.Incomplete; inc != nil && inc.GTID == g {
		what = "is a transaction the archive holds only in part (still being written)"
		after = nil
	} else if before != nil && after != nil {
		what = "falls between two transactions of the archive"
	}
	near := func(t *Txn) string {
		if t == nil {
			return "none"
		}
		return fmt.Sprintf("%s (committed %s, in %s)", t.GTID, unixTime(t.Time).Format(time.RFC3339), s.Files[t.File].File)
	}
	return dbpilot.Errorf(dbpilot.EINVALID, "pitr: --until-gtid %s %s (domain %d); nearest valid points: before %s, after %s", g, what, g.Domain, near(before), near(after))
}

// wants reports whether the transaction g is applied: after the replica's
// position (connect state), at or before the until position.
func wants(g gtid.MariaGTID, from gtid.MariaList, until map[uint32]uint64) bool {
	u, ok := until[g.Domain]
	if !ok || g.Seq > u {
		return false
	}
	f, _ := from.DomainSeq(g.Domain)
	return g.Seq > f.Seq
}

// Start is the archive's position before its first transaction (the
// index's gtid_start of the first file, else its Gtid_list).
func (s *Scan) Start() gtid.MariaList { return s.archiveStart() }

// End is the archive's last complete transaction of each domain.
func (s *Scan) End() gtid.MariaList {
	var last []gtid.MariaGTID
	at := map[uint32]int{}
	for _, t := range s.Txns {
		if i, ok := at[t.GTID.Domain]; ok {
			if t.GTID.Seq > last[i].Seq {
				last[i] = t.GTID
			}
			continue
		}
		at[t.GTID.Domain] = len(last)
		last = append(last, t.GTID)
	}
	return gtid.NewMariaList(last...)
}

// Wants reports whether the plan applies transaction g to a target at from.
func (p *Plan) Wants(g gtid.MariaGTID, from gtid.MariaList) bool {
	for _, u := range p.Until {
		if u.Domain == g.Domain {
			return wants(g, from, map[uint32]uint64{u.Domain: u.Seq})
		}
	}
	return false
}
