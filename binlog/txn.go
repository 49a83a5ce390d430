package binlog

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot/gtid"
)

// tracker follows transaction boundaries and the GTID position through a
// sequence of events (one file, or a stream). It is shared by the writer,
// which must cut files only between transactions, and by ls and verify.
type tracker struct {
	fmt      format
	haveFmt  bool
	pos      position // after the last complete transaction
	inTxn    bool
	begun    bool // MySQL: a BEGIN query was seen in the open transaction
	alone    bool // MariaDB: the open transaction is a standalone event group
	cur      string
	curMaria gtid.MariaGTID
	curUUID  string
	curGNO   uint64
	curTime  uint32

	// Per file (reset by newFile).
	stats fileStats
	gaps  []Gap
}

// fileStats is what a file's index entry says about its transactions.
type fileStats struct {
	start        position
	startSet     bool
	firstGTID    string
	lastGTID     string
	firstTime    uint32
	lastTime     uint32
	transactions int
	events       int
	anyTime      uint32 // first non-artificial event time, for files without transactions
	lastAnyTime  uint32
}

func newTracker(start position) *tracker {
	t := &tracker{pos: start.clone()}
	t.stats.start = start.clone()
	t.stats.startSet = true
	return t
}

// newFile starts the per-file statistics at the current position.
func (t *tracker) newFile() {
	t.stats = fileStats{start: t.pos.clone(), startSet: true}
	t.haveFmt = false
}

// result of one event.
type result struct {
	began, committed bool
}

// feed reads one event and reports whether it started or ended a
// transaction.
func (t *tracker) feed(e Event) (result, error) {
	var r result
	if e.Type == typeHeartbeat {
		return r, nil
	}
	t.stats.events++
	if !e.Artificial() && e.Timestamp != 0 {
		if t.stats.anyTime == 0 {
			t.stats.anyTime = e.Timestamp
		}
		t.stats.lastAnyTime = e.Timestamp
	}
	if e.Type == typeFormatDesc {
		f, err := parseFormat(e)
		if err != nil {
			return r, err
		}
		t.fmt, t.haveFmt = f, true
		return r, nil
	}
	if !t.haveFmt {
		return r, fmt.Errorf("%s event before the format description event", typeName(e.Type))
	}
	body := t.fmt.body(e)
	switch e.Type {
	case typeMariaGTID:
		g, err := decodeMariaGTID(body)
		if err != nil {
			return r, err
		}
		if t.inTxn {
			return r, fmt.Errorf("GTID %d-%d-%d starts before transaction %s ended", g.domain, e.ServerID, g.seq, t.cur)
		}
		t.pos.flavor = FlavorMariaDB
		if t.pos.maria == nil {
			t.pos.maria = map[uint32]gtid.MariaGTID{}
		}
		t.curMaria = gtid.MariaGTID{Domain: g.domain, Server: e.ServerID, Seq: g.seq}
		t.cur = t.curMaria.String()
		t.alone = g.standalone
		t.begin(e, &r)
	case typeMySQLGTID, typeMySQLTaggedGTID:
		uuid, gno, err := decodeMySQLGTID(body)
		if err != nil {
			return r, err
		}
		if t.inTxn {
			return r, fmt.Errorf("GTID %s:%d starts before transaction %s ended", uuid, gno, t.cur)
		}
		t.pos.flavor = FlavorMySQL
		t.curUUID, t.curGNO = uuid, gno
		t.cur = uuid + ":" + strconv.FormatUint(gno, 10)
		if e.Type == typeMySQLTaggedGTID {
			t.cur = "" // tagged GTIDs: boundaries only
		}
		t.begin(e, &r)
	case typeMySQLAnonGTID:
		t.cur = ""
		t.begin(e, &r)
	case typeXID, typeXAPrepare:
		if t.inTxn {
			t.commit(e, &r)
		}
	case typeQuery, typeMariaQueryZ:
		if !t.inTxn {
			break
		}
		stmt := ""
		if e.Type == typeQuery {
			stmt = queryText(body)
		}
		switch {
		case t.alone:
			t.commit(e, &r)
		case stmt == "BEGIN":
			t.begun = true
		case endsGroup(stmt):
			t.commit(e, &r)
		case t.pos.flavor == FlavorMySQL && !t.begun:
			t.commit(e, &r) // DDL: no BEGIN, one statement
		}
	}
	return r, nil
}

func (t *tracker) begin(e Event, r *result) {
	t.inTxn, t.begun = true, false
	t.curTime = e.Timestamp
	r.began = true
}

func (t *tracker) commit(e Event, r *result) {
	t.inTxn = false
	r.committed = true
	switch {
	case t.pos.flavor == FlavorMySQL && t.cur != "":
		one, err := gtid.ParseMySQLSet(t.cur)
		if err == nil {
			if t.pos.mysql.Contains(one) {
				t.gaps = append(t.gaps, Gap{Domain: t.curUUID, Next: t.cur, Kind: "duplicate"})
			}
			t.pos.mysql = t.pos.mysql.Union(one)
		}
	case t.pos.flavor == FlavorMariaDB:
		g := t.curMaria
		prev, ok := t.pos.maria[g.Domain]
		dom := strconv.FormatUint(uint64(g.Domain), 10)
		switch {
		case !ok || g.Seq == prev.Seq+1:
		case g.Seq > prev.Seq+1:
			t.gaps = append(t.gaps, Gap{Domain: dom, After: prev.String(), Next: g.String(), Missing: seqRange(prev.Seq+1, g.Seq-1), Kind: "gap"})
		case g.Seq == prev.Seq:
			t.gaps = append(t.gaps, Gap{Domain: dom, After: prev.String(), Next: g.String(), Kind: "duplicate"})
		default:
			t.gaps = append(t.gaps, Gap{Domain: dom, After: prev.String(), Next: g.String(), Kind: "out of order"})
		}
		t.pos.maria[g.Domain] = g
	}
	s := &t.stats
	if s.transactions == 0 {
		s.firstGTID = t.cur
		s.firstTime = t.curTime
	}
	s.lastGTID = t.cur
	s.lastTime = e.Timestamp
	s.transactions++
}

// times returns the file's first and last times: of its transactions, or
// of its events when it has none.
func (s fileStats) times() (first, last time.Time) {
	a, b := s.firstTime, s.lastTime
	if s.transactions == 0 {
		a, b = s.anyTime, s.lastAnyTime
	}
	if a != 0 {
		first = time.Unix(int64(a), 0).UTC()
	}
	if b != 0 {
		last = time.Unix(int64(b), 0).UTC()
	}
	return first, last
}
