package tui

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/httpapi"
	"github.com/dbpilot/dbpilot/mysql"
)

// queriesFrame is directFrame in the q view: two instances' digests over
// 5 s, one of them with a full digest table, and a third without
// performance_schema.
func queriesFrame() *Frame {
	f := directFrame()
	f.Rows = f.Rows[:3]
	span := 5 * time.Second
	row := func(inst, schema, digest, text string, count uint64, totalMS, maxMS float64, exam, errs, noIdx uint64) QueryRow {
		return QueryRow{Span: span, QueryStat: dbpilot.QueryStat{Instance: inst, Schema: schema, Digest: digest, DigestText: text,
			Count: count, TotalMS: totalMS, AvgMS: totalMS / float64(count), MaxMS: maxMS, RowsExamined: exam, Errors: errs, NoIndexUsed: noIdx}}
	}
	f.Queries = &Queries{
		Origin: "performance_schema, read every 5s",
		At:     fixedTime,
		Span:   span,
		Sources: []dbpilot.QuerySource{
			{Instance: "127.0.0.1:16501", Source: dbpilot.QuerySourcePerformanceSchema, Capacity: 2000, Digests: 2000, LostDigests: 1543, LostInSpan: 12, Full: true},
			{Instance: "127.0.0.1:16502", Source: dbpilot.QuerySourcePerformanceSchema, Capacity: 2000, Digests: 87},
		},
		Rows: []QueryRow{
			row("127.0.0.1:16501", "app", "8c3f2a", "UPDATE `orders` SET `status` = ? , `updated_at` = NOW ( ) WHERE `customer_id` = ? AND `status` IN ( ... )", 100, 4500, 812.5, 200000, 0, 100),
			row("127.0.0.1:16501", "app", "1b7e90", "SELECT * FROM `orders` WHERE `id` = ?", 7500, 750, 4.2, 7500, 3, 0),
			row("127.0.0.1:16502", "", "77aa01", "SHOW GLOBAL STATUS", 5, 10, 3.1, 5000, 0, 0),
			row("127.0.0.1:16501", "app", "", "", 3, 0.04, 0.02, 30, 0, 0),
		},
		Notes: []string{"performance_schema is off on 127.0.0.1:16503: set performance_schema=ON in the server's option file ([mysqld]) and restart it"},
	}
	return f
}

func TestRenderQueriesGolden(t *testing.T) {
	one := queriesFrame()
	one.Rows = one.Rows[:1]
	one.Queries.Sources = one.Queries.Sources[:1]
	one.Queries.Notes = nil
	one.Queries.Rows = []QueryRow{one.Queries.Rows[0], one.Queries.Rows[1], one.Queries.Rows[3]}

	off := directFrame()
	off.Rows = off.Rows[:1]
	off.Queries = &Queries{Origin: "performance_schema, read every 5s", At: fixedTime,
		Notes: []string{"performance_schema is off on 127.0.0.1:16501: set performance_schema=ON in the server's option file ([mysqld]) and restart it (a sandbox: redeploy, or --option performance_schema=ON)"}}

	waiting := queriesFrame()
	waiting.Queries.Span, waiting.Queries.Rows, waiting.Queries.Notes = 0, nil, nil

	idle := queriesFrame()
	idle.Queries.Rows, idle.Queries.Notes = nil, nil

	down := queriesFrame()
	down.Rows = directFrame().Rows // 16504 does not answer

	tests := []struct {
		name   string
		screen Screen
	}{
		{"queries.golden", Screen{Frame: queriesFrame(), View: ViewQueries, Width: 160}},
		{"queries-narrow.golden", Screen{Frame: queriesFrame(), View: ViewQueries, Width: 100, Height: 12}},
		{"queries-one.golden", Screen{Frame: one, View: ViewQueries, Width: 120}},
		{"queries-off.golden", Screen{Frame: off, View: ViewQueries, Width: 120}},
		{"queries-waiting.golden", Screen{Frame: waiting, View: ViewQueries, Width: 120}},
		{"queries-idle.golden", Screen{Frame: idle, View: ViewQueries, Width: 120}},
		{"queries-down.golden", Screen{Frame: down, View: ViewQueries, Width: 160}},
		{"queries-nodata.golden", Screen{Frame: directFrame(), View: ViewQueries, Width: 120}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, Render(tt.screen))
		})
	}
	var b strings.Builder
	for _, l := range QueryLines(queriesFrame().Queries) {
		b.WriteString(l + "\n")
	}
	golden(t, "queries-lines.golden", b.String())
}

// TestRenderQueriesFitsWidth: every line of the q view fits the terminal,
// the digest text cut with an ellipsis.
func TestRenderQueriesFitsWidth(t *testing.T) {
	for _, w := range []int{20, 60, 80, 100, 200} {
		out := Render(Screen{Frame: queriesFrame(), View: ViewQueries, Width: w, Height: 30})
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if n := visibleLen(l); n > w {
				t.Errorf("width %d: line of %d columns: %q", w, n, l)
			}
		}
		if w == 100 && !strings.Contains(out, "UPDATE `orders` SE…") {
			t.Errorf("width 100: digest text not cut with an ellipsis:\n%s", out)
		}
	}
}

func snapshot(at time.Time, lost uint64, digests ...mysql.Digest) *mysql.DigestSnapshot {
	return &mysql.DigestSnapshot{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 16501}, At: at, Enabled: true,
		Source: dbpilot.QuerySourcePerformanceSchema, Capacity: 3, Lost: lost, Digests: digests}
}

// TestDigestState: the first read waits for a second; the second gives
// what ran between them as rates over the span; a server with
// performance_schema off or a failed read is a note, without rows.
func TestDigestState(t *testing.T) {
	t0 := fixedTime
	sel := mysql.Digest{Schema: "app", Digest: "d1", Text: "SELECT ?", Count: 100, TotalWait: 50e9, MaxWait: 2e9, RowsExamined: 100, FirstSeen: "x"}
	upd := mysql.Digest{Schema: "app", Digest: "d2", Text: "UPDATE t SET v = ?", Count: 10, TotalWait: 900e9, MaxWait: 400e9, RowsExamined: 5000, NoIndexUsed: 10, FirstSeen: "x"}
	var s digestState
	if !s.due(t0, 5*time.Second) {
		t.Fatal("a first read is not due")
	}
	s.update("127.0.0.1:16501", snapshot(t0, 4, sel, upd), nil, t0, 0)
	if s.rows != nil || s.span != 0 || s.source == nil || s.source.Digests != 2 || s.note != "" {
		t.Fatalf("first read: %+v", s)
	}
	if s.due(t0.Add(time.Second), 5*time.Second) || !s.due(t0.Add(5*time.Second), 5*time.Second) {
		t.Error("due before or not after the interval")
	}
	sel2, upd2 := sel, upd
	sel2.Count, sel2.TotalWait, sel2.RowsExamined = 150, 75e9, 150 // 50 calls, 25 ms
	upd2.Count, upd2.TotalWait, upd2.MaxWait, upd2.RowsExamined, upd2.NoIndexUsed = 12, 1900e9, 600e9, 6000, 12
	third := mysql.Digest{Schema: "", Digest: "d3", Text: "SHOW STATUS", Count: 1, TotalWait: 1e9, FirstSeen: "y"}
	s.update("127.0.0.1:16501", snapshot(t0.Add(5*time.Second), 7, sel2, upd2, third), nil, t0.Add(5*time.Second), 2)
	if s.span != 5*time.Second || len(s.rows) != 2 || !s.source.Full || s.source.LostInSpan != 3 {
		t.Fatalf("second read: span %s, rows %+v, source %+v", s.span, s.rows, s.source)
	}
	u, q := s.rows[0], s.rows[1] // heaviest first, the lightest cut by the limit
	if u.Digest != "d2" || u.Count != 2 || u.TotalMS != 1000 || u.AvgMS != 500 || u.MaxMS != 600 || u.NoIndexUsed != 2 ||
		u.LoadMS() != N(200) || u.CallsPerSec() != N(0.4) || u.RowsExaminedPerSec() != N(200) {
		t.Errorf("update row %+v", u)
	}
	if q.Digest != "d1" || q.Count != 50 || q.CallsPerSec() != N(10) || q.TotalMS != 25 || q.Instance != "127.0.0.1:16501" {
		t.Errorf("select row %+v", q)
	}
	m := mergeDigests("performance_schema", []*digestState{&s, nil}, 0)
	if m.Span != 5*time.Second || len(m.Rows) != 2 || len(m.Sources) != 1 || !m.At.Equal(t0.Add(5*time.Second)) {
		t.Errorf("merged %+v", m)
	}

	off := &mysql.DigestSnapshot{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: 16501}}
	s.update("127.0.0.1:16501", off, nil, t0.Add(10*time.Second), 0)
	if s.rows != nil || s.source != nil || !strings.Contains(s.note, "performance_schema is off on 127.0.0.1:16501") {
		t.Errorf("performance_schema off: %+v", s)
	}
	m = mergeDigests("performance_schema", []*digestState{&s}, 0)
	out := Render(Screen{Frame: &Frame{Time: fixedTime, Queries: m}, View: ViewQueries})
	if !strings.Contains(out, "note: performance_schema is off") || strings.Contains(out, "CALLS/s") || strings.Contains(out, "error") {
		t.Errorf("performance_schema off renders:\n%s", out)
	}

	s.update("127.0.0.1:16501", nil, errors.New("SELECT command denied"), t0.Add(15*time.Second), 0)
	if s.rows != nil || s.note != "127.0.0.1:16501: read digests: SELECT command denied" {
		t.Errorf("failed read: %+v", s)
	}
}

// serveQueries starts a fake serve and a Server source on it, in the q view.
func serveQueries(t *testing.T, fs *fakeServe, only ...dbpilot.InstanceKey) *Server {
	t.Helper()
	ts := httptest.NewServer(fs)
	t.Cleanup(ts.Close)
	src := NewServer(httpapi.NewClient(ts.URL, ""), only)
	t.Cleanup(func() { src.Close() })
	return src
}

func TestServerSourceQueries(t *testing.T) {
	fs := &fakeServe{t: t}
	src := serveQueries(t, fs)
	// Not in the q view: /api/queries is not asked.
	f, err := src.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.Queries != nil || len(fs.queryReports) != 0 {
		t.Fatalf("overview: queries %+v, asked %q", f.Queries, fs.queryReports)
	}
	src.SetView(ViewQueries, 15)
	before := time.Now()
	f, err = src.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.queryReports) != 1 {
		t.Fatalf("asked %q", fs.queryReports)
	}
	params, _ := url.ParseQuery(fs.queryReports[0])
	since, err := time.Parse(time.RFC3339Nano, params.Get("since"))
	if err != nil || params.Get("limit") != "15" || params.Get("by") != "total" || params.Get("instance") != "" {
		t.Errorf("GET /api/queries?%s", fs.queryReports[0])
	}
	if d := before.Sub(since); d < 59*time.Second || d > 61*time.Second {
		t.Errorf("since %s is %s before now, want the last minute", since, d)
	}
	q := f.Queries
	if q == nil || q.Span != time.Minute || len(q.Rows) != 4 || len(q.Sources) != 3 || len(q.Notes) != 0 ||
		!strings.Contains(sourceLine(q.Sources[2]), "127.0.0.1:16503  no statistics: performance_schema is off") {
		t.Fatalf("queries %+v", q)
	}
	if r := q.Rows[0]; r.Digest != "8c3f2a" || r.LoadMS() != N(900) || r.CallsPerSec() != N(20) {
		t.Errorf("first row %+v", r)
	}
	f.Time, f.Source = fixedTime, "server http://127.0.0.1:7070"
	golden(t, "server-queries.golden", Render(Screen{Frame: f, View: ViewQueries, Width: 160}))

	// Polled again at once (the next second's refresh): the same answer,
	// not asked again.
	f2, err := src.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs.queryReports) != 1 || f2.Queries != q {
		t.Errorf("asked %d times within QueriesEvery", len(fs.queryReports))
	}
	// Asked again once QueriesEvery passed.
	src.QueriesEvery = time.Nanosecond
	if _, err := src.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(fs.queryReports) != 2 {
		t.Errorf("asked %d times after QueriesEvery", len(fs.queryReports))
	}
}

func TestServerSourceQueriesOnly(t *testing.T) {
	fs := &fakeServe{t: t}
	src := serveQueries(t, fs, dbpilot.InstanceKey{Host: "localhost", Port: 16502})
	src.SetView(ViewQueries, 0)
	f, err := src.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	params, _ := url.ParseQuery(fs.queryReports[0])
	if params.Get("instance") != "127.0.0.1:16502" || params.Get("limit") != "20" {
		t.Errorf("GET /api/queries?%s", fs.queryReports[0])
	}
	if q := f.Queries; len(q.Rows) != 1 || q.Rows[0].Instance != "127.0.0.1:16502" || len(q.Sources) != 1 || len(q.Notes) != 0 {
		t.Errorf("queries %+v", q)
	}
}

// TestServerSourceQueriesErrors: a serve without query statistics (422
// unsupported, or 404 from an older serve) and a failure are notes in the q
// view, not errors of the refresh.
func TestServerSourceQueriesErrors(t *testing.T) {
	for _, tt := range []struct {
		status int
		code   string
		want   string
	}{
		{http.StatusUnprocessableEntity, dbpilot.EUNSUPPORTED, "this serve does not collect query statistics"},
		{http.StatusNotFound, dbpilot.ENOTFOUND, "this serve does not collect query statistics"},
		{http.StatusInternalServerError, dbpilot.EINTERNAL, "GET /api/queries: queries: Internal Server Error"},
	} {
		src := serveQueries(t, &fakeServe{t: t, queriesStatus: tt.status, queriesCode: tt.code})
		src.SetView(ViewQueries, 0)
		f, err := src.Poll(context.Background())
		if err != nil {
			t.Fatalf("%d: %v", tt.status, err)
		}
		if q := f.Queries; q == nil || len(q.Rows) != 0 || len(q.Notes) != 1 || !strings.Contains(q.Notes[0], tt.want) {
			t.Errorf("%d: queries %+v", tt.status, q)
		}
		if len(f.Notes) != 0 || len(f.Rows) != 3 {
			t.Errorf("%d: frame notes %q, %d rows", tt.status, f.Notes, len(f.Rows))
		}
		out := Render(Screen{Frame: f, View: ViewQueries})
		if !strings.Contains(out, "note: ") || strings.Contains(out, "CALLS/s") || strings.Contains(out, "waiting") {
			t.Errorf("%d renders:\n%s", tt.status, out)
		}
	}
}
