package report

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/browser"
	"github.com/dbpilot/dbpilot/internal/testutil"
)

// loadInput reads testdata/<name>/input.json: a report's data as serve
// gathered it (failover-bench was recorded by cmd/dbpilot's
// TestIncidentReport with DBPILOT_REPORT_RECORD; failover-history-errant is
// it with an old primary that returned with an errant transaction and was
// last read ahead of the new primary, and no bench run).
func loadInput(t *testing.T, name string) *Input {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &in
}

// TestGolden renders each recorded input and compares the page with
// testdata/<case>/report.html (go test -update rewrites it: open it in a
// browser to review).
func TestGolden(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		t.Run(d.Name(), func(t *testing.T) {
			page, err := HTML(loadInput(t, d.Name()))
			if err != nil {
				t.Fatal(err)
			}
			checkSelfContained(t, page)
			testutil.Golden(t, filepath.Join("testdata", d.Name(), "report.html"), page)
		})
	}
	if n < 2 {
		t.Errorf("%d recorded inputs in testdata", n)
	}
}

// checkSelfContained: the page names nothing outside itself and runs no
// script.
func checkSelfContained(t *testing.T, page []byte) {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "src=", "href=", "url(", "@import", "<script", "<link", "<iframe", "<img", "<object", "<embed", " on"} {
		re := regexp.MustCompile(regexp.QuoteMeta(bad))
		if bad == " on" {
			re = regexp.MustCompile(`<[^>]+\son[a-z]+=`) // an event handler attribute
		}
		if loc := re.FindIndex(page); loc != nil {
			t.Errorf("the page holds %q: %q", bad, page[max(0, loc[0]-80):min(len(page), loc[1]+80)])
		}
	}
}

// Text from the servers (an alert's summary, an audit message) is text in
// the page, never markup.
func TestEscapes(t *testing.T) {
	in := loadInput(t, "failover-bench")
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	in.Alerts = append(in.Alerts, &dbpilot.Alert{Rule: "Evil" + evil, Summary: evil, State: dbpilot.AlertFiring, ActiveAt: in.Recovery.Started,
		Labels: map[string]string{"instance": evil}})
	in.RecoveryEvents[0].Message = evil
	in.RecoveryEvents[0].Detail = map[string]string{"k" + evil: evil}
	in.Charts[0].Series = append(in.Charts[0].Series, dbpilot.Series{Labels: map[string]string{"instance": evil},
		Points: []dbpilot.Point{{T: in.Recovery.Started, V: 1}}})
	in.Recovery.Plan = strings.Replace(in.Recovery.Plan, "received every", evil, 1)
	page, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, markup := range []string{"<script", "<img"} {
		if i := bytes.Index(page, []byte(markup)); i >= 0 {
			t.Errorf("markup from the servers in the page: %q", page[max(0, i-80):min(len(page), i+80)])
		}
	}
	if !bytes.Contains(page, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Error("the markup does not show as text")
	}
}

// The sections of a recorded failover under bench, as the page shows them.
func TestBuildFailoverBench(t *testing.T) {
	in := loadInput(t, "failover-bench")
	r := Build(in)
	rec := in.Recovery
	if r.Outcome != "success" || r.Unavailable != rec.WritesOpen.Sub(rec.DetectedAt) {
		t.Errorf("outcome %q, unavailable %s", r.Outcome, r.Unavailable)
	}
	// Every step of the recovery, in order, once; the markers after the
	// step that made them.
	var steps []int64
	for _, row := range r.Timeline {
		if row.Kind == RowStep {
			steps = append(steps, row.AuditID)
		}
	}
	var want []int64
	for _, e := range in.RecoveryEvents {
		want = append(want, e.ID)
	}
	if !slices.Equal(steps, want) {
		t.Errorf("timeline steps %v, want %v", steps, want)
	}
	for i, row := range r.Timeline {
		if i > 0 && row.Time.Before(r.Timeline[i-1].Time) {
			t.Errorf("timeline row %d (%s) before row %d", i, row.Event, i-1)
		}
	}
	// Durations: recorded by the step when it says, else to the next.
	for _, row := range r.Timeline {
		switch row.Event {
		case dbpilot.AuditDetect, dbpilot.AuditRepoint, dbpilot.AuditDone:
			if row.DurationSource != DurationRecorded {
				t.Errorf("%s: duration %s %q, want recorded", row.Event, row.Duration, row.DurationSource)
			}
		case dbpilot.AuditPlan, dbpilot.AuditPromote:
			if row.DurationSource != DurationToNext || row.Duration <= 0 {
				t.Errorf("%s: duration %s %q, want to the next step", row.Event, row.Duration, row.DurationSource)
			}
		case dbpilot.AuditRecovered:
			if row.DurationSource != "" {
				t.Errorf("the last step has a duration %s %q", row.Duration, row.DurationSource)
			}
		}
	}
	if d := r.Decision; !d.Parsed || d.Chosen != rec.NewPrimary.String() || len(d.Candidates) != 2 || !d.Candidates[0].Chosen || d.Reason == "" {
		t.Errorf("decision %+v", d)
	}
	checks := map[string]string{}
	for _, c := range r.Checks {
		checks[c.ID] = c.Status
	}
	if !maps.Equal(checks, map[string]string{"lost-replicas": NoneFound, "missing-transactions": NoneFound, "errant": NotChecked, "acknowledged-writes": NoneFound}) {
		t.Errorf("checks %v", checks)
	}
	im := r.Impact
	if im == nil || !im.HasStall || im.LongestStall <= 0 || im.ErrorsTotal == 0 || len(im.Seconds) < 5 || im.Chart.Empty {
		t.Fatalf("impact %+v", im)
	}
	if len(r.Charts) != 5 || r.Charts[0].Empty {
		t.Errorf("%d charts, the first empty %v", len(r.Charts), r.Charts[0].Empty)
	}
	if r.TopologyNote != "" || len(r.Topology) != 2 || r.Topology[0].Instances != 3 || r.Topology[1].Instances != 2 {
		t.Errorf("topology: note %q, %d drawings %+v", r.TopologyNote, len(r.Topology), r.Topology)
	}
}

// An old primary that returned with an errant transaction, and a last read
// of it ahead of the new primary.
func TestBuildHistoryErrant(t *testing.T) {
	in := loadInput(t, "failover-history-errant")
	r := Build(in)
	checks := map[string]Check{}
	for _, c := range r.Checks {
		checks[c.ID] = c
	}
	if c := checks["missing-transactions"]; c.Status != Found || !strings.Contains(strings.Join(c.Lines, "\n"), "3 transaction(s) missing") {
		t.Errorf("missing transactions: %+v", c)
	}
	if c := checks["errant"]; c.Status != Found || !strings.Contains(strings.Join(c.Lines, "\n"), "-224") {
		t.Errorf("errant: %+v", c)
	}
	if _, ok := checks["acknowledged-writes"]; ok || r.Impact != nil {
		t.Error("a ledger check without a bench run")
	}
	if len(r.Topology) != 2 || r.Topology[0].Primary != in.Recovery.OldPrimary.String() || r.Topology[1].Primary != in.Recovery.NewPrimary.String() {
		t.Fatalf("topology %+v", r.Topology)
	}
	before, after := string(r.Topology[0].SVG), string(r.Topology[1].SVG)
	for _, k := range []string{in.Recovery.NewPrimary.String()} {
		if !strings.Contains(before, `data-from="`+in.Recovery.OldPrimary.String()+`" data-to="`+k+`"`) {
			t.Errorf("before: no edge to %s", k)
		}
	}
	if !strings.Contains(after, `data-key="`+in.Recovery.NewPrimary.String()+`" data-role="primary"`) || strings.Contains(after, in.Recovery.OldPrimary.String()) {
		t.Errorf("after: %s", after)
	}
	if len(r.Topology[1].Problems) != 1 || len(r.Notes) != 1 {
		t.Errorf("problems %v, notes %v", r.Topology[1].Problems, r.Notes)
	}
}

// A check says "none found" only when it ran; with nothing recorded it says
// "not checked".
func TestChecksNotChecked(t *testing.T) {
	key := func(p int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: p} }
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	base := dbpilot.Recovery{ID: 7, Cluster: "c", Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: key(1), NewPrimary: key(2),
		DetectedAt: t0, Started: t0.Add(time.Millisecond), WritesOpen: t0.Add(50 * time.Millisecond), Ended: t0.Add(80 * time.Millisecond), Success: true}
	for _, c := range []struct {
		name string
		in   Input
		id   string
		want string
	}{
		{"running", Input{Recovery: func() dbpilot.Recovery { r := base; r.Ended, r.Success = time.Time{}, false; return r }()}, "lost-replicas", NotChecked},
		{"failed", Input{Recovery: func() dbpilot.Recovery { r := base; r.Success, r.Error = false, "boom"; return r }()}, "lost-replicas", NotChecked},
		{"done", Input{Recovery: base}, "lost-replicas", NoneFound},
		{"lost", Input{Recovery: func() dbpilot.Recovery { r := base; r.LostReplicas = []dbpilot.InstanceKey{key(3)}; return r }()}, "lost-replicas", Found},
		{"no old position", Input{Recovery: base}, "missing-transactions", NotChecked},
		{"no new position", Input{Recovery: base, OldPrimaryPosition: &Position{Domains: map[uint32]uint64{0: 5}}}, "missing-transactions", NotChecked},
		{"even", Input{Recovery: base, OldPrimaryPosition: &Position{Domains: map[uint32]uint64{0: 5}},
			RecoveryEvents: []dbpilot.AuditEvent{{Event: dbpilot.AuditApplyRelayLog, Instance: key(2), Detail: map[string]string{"received": "0-1-5"}}}}, "missing-transactions", NoneFound},
		{"behind", Input{Recovery: base, OldPrimaryPosition: &Position{Domains: map[uint32]uint64{0: 5, 1: 2}},
			RecoveryEvents: []dbpilot.AuditEvent{{Event: dbpilot.AuditApplyRelayLog, Instance: key(2), Detail: map[string]string{"received": "0-1-5"}}}}, "missing-transactions", Found},
		{"mysql", Input{Recovery: base, OldPrimaryPosition: &Position{Executed: 10},
			RecoveryEvents: []dbpilot.AuditEvent{{Event: dbpilot.AuditApplyRelayLog, Instance: key(2), Detail: map[string]string{"received": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10"}}}}, "missing-transactions", NoneFound},
		{"not back", Input{Recovery: base}, "errant", NotChecked},
		{"compared clean", Input{Recovery: base, Fenced: &dbpilot.FencedInstance{Key: key(1), Compared: true, Primary: key(2)}}, "errant", NoneFound},
		{"rejoined", Input{Recovery: base, OldPrimaryEvents: []dbpilot.AuditEvent{{Event: dbpilot.AuditRejoin, Instance: key(1), Message: "rejoined"}}}, "errant", NoneFound},
		{"switchover", Input{Recovery: func() dbpilot.Recovery { r := base; r.Kind = dbpilot.RecoverySwitchover; return r }()}, "errant", NotChecked},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, ch := range checks(&c.in) {
				if ch.ID == c.id && ch.Status != c.want {
					t.Errorf("%s: %q %v, want %q", c.id, ch.Status, ch.Lines, c.want)
				}
			}
		})
	}
	for _, c := range []struct {
		l    LedgerInput
		want string
	}{
		{LedgerInput{}, NotChecked},
		{LedgerInput{HasAcked: true, Acked: 5}, NotChecked},
		{LedgerInput{HasAcked: true, Failed: true}, NotChecked},
		{LedgerInput{HasAcked: true, HasLost: true, Acked: 5}, NoneFound},
		{LedgerInput{HasAcked: true, HasLost: true, Acked: 5, Lost: 1}, Found},
	} {
		if got := ledgerCheck(c.l); got.Status != c.want {
			t.Errorf("ledger %+v: %q, want %q", c.l, got.Status, c.want)
		}
	}
}

// The first symptom is the earliest of the detection, the old primary's
// alerts pending before it (and not over before it) and the cluster's
// events about it.
func TestFirstSymptom(t *testing.T) {
	old := dbpilot.InstanceKey{Host: "127.0.0.1", Port: 1}
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	in := &Input{Recovery: dbpilot.Recovery{Kind: dbpilot.RecoveryFailoverAuto, OldPrimary: old, DetectedAt: t0, Started: t0.Add(time.Second)},
		From: t0.Add(-5 * time.Minute), To: t0.Add(5 * time.Minute)}
	if s := firstSymptom(in); !s.Time.Equal(t0) {
		t.Errorf("alone: %+v", s)
	}
	in.Alerts = []*dbpilot.Alert{
		{Rule: "Over", ActiveAt: t0.Add(-4 * time.Minute), ResolvedAt: t0.Add(-3 * time.Minute), Labels: map[string]string{"instance": old.String()}},
		{Rule: "Other", ActiveAt: t0.Add(-3 * time.Minute), Labels: map[string]string{"instance": "127.0.0.1:2"}},
		{Rule: "SemiSyncNoAck", ActiveAt: t0.Add(-2 * time.Second), Labels: map[string]string{"instance": old.String()}},
		{Rule: "MySQLDown", ActiveAt: t0.Add(time.Second), Labels: map[string]string{"instance": old.String()}},
	}
	if s := firstSymptom(in); !s.Time.Equal(t0.Add(-2*time.Second)) || !strings.Contains(s.What, "SemiSyncNoAck") {
		t.Errorf("with alerts: %+v", s)
	}
	in.ClusterEvents = []dbpilot.AuditEvent{{Time: t0.Add(-time.Minute), Instance: old, Event: dbpilot.AuditForced, Message: "forced"}}
	if s := firstSymptom(in); !s.Time.Equal(t0.Add(-time.Minute)) {
		t.Errorf("with an event: %+v", s)
	}
	planned := &Input{Recovery: dbpilot.Recovery{Kind: dbpilot.RecoverySwitchover, Started: t0}}
	if s := firstSymptom(planned); !s.Time.Equal(t0) || !strings.Contains(s.What, "requested") {
		t.Errorf("planned: %+v", s)
	}
}

// Errors by class are each counter's increase over the window, from its
// value at the window's start, a new run's counter counted from 0.
func TestErrorsByClass(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	pts := func(vs ...float64) []dbpilot.Point {
		var p []dbpilot.Point
		for i, v := range vs {
			p = append(p, dbpilot.Point{T: t0.Add(time.Duration(i) * time.Second), V: v})
		}
		return p
	}
	l := func(class, wl string) map[string]string { return map[string]string{"class": class, "workload": wl} }
	base := []dbpilot.Series{{Labels: l("connection", "a"), Points: pts(4)}}
	raw := []dbpilot.Series{
		{Labels: l("connection", "a"), Points: pts(4, 6, 9)}, // 5 in the window
		{Labels: l("read_only", "a"), Points: pts(0, 3, 3)},  // from zero: 3
		{Labels: l("connection", "b"), Points: pts(2, 5, 1)}, // a new run: 2 + 3 + 1
		{Labels: l("timeout", "a"), Points: pts(7)},          // its first sample in the window: 7
	}
	got := errorsByClass(base, raw)
	want := map[string]int64{"connection": 11, "read_only": 3, "timeout": 7}
	if len(got) != len(want) || got["connection"] != 11 || got["read_only"] != 3 || got["timeout"] != 7 {
		t.Errorf("errors by class %v, want %v", got, want)
	}
}

// The plan's text (recovery.Plan.String()) reads back into what the planner
// decided: every recorded plan of recovery/testdata.
func TestDecisionReadsPlans(t *testing.T) {
	dirs, err := filepath.Glob("../recovery/testdata/plans/*/plan.golden.txt")
	if err != nil || len(dirs) < 10 {
		t.Fatalf("%d plans: %v", len(dirs), err)
	}
	for _, txt := range dirs {
		name := filepath.Base(filepath.Dir(txt))
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(txt)
			if err != nil {
				t.Fatal(err)
			}
			js, err := os.ReadFile(filepath.Join(filepath.Dir(txt), "plan.golden.json"))
			if err != nil {
				t.Fatal(err)
			}
			var plan struct {
				Candidate  dbpilot.InstanceKey `json:"candidate"`
				Reason     string              `json:"reason"`
				Candidates []struct {
					Key      dbpilot.InstanceKey `json:"key"`
					Eligible bool                `json:"eligible"`
					Rule     string              `json:"rule"`
					Position string              `json:"position"`
					Notes    []string            `json:"notes"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal(js, &plan); err != nil {
				t.Skipf("no plan (%s): %v", strings.TrimSpace(string(js))[:min(60, len(js))], err)
			}
			d := decision(dbpilot.Recovery{Plan: string(text)}, nil)
			if !d.Parsed {
				t.Fatalf("not read:\n%s", text)
			}
			if d.Chosen != keyString(plan.Candidate) || d.Reason != plan.Reason || len(d.Candidates) != len(plan.Candidates) {
				t.Fatalf("chosen %q (%q), %d candidates; want %q (%q), %d", d.Chosen, d.Reason, len(d.Candidates), keyString(plan.Candidate), plan.Reason, len(plan.Candidates))
			}
			for i, c := range plan.Candidates {
				got := d.Candidates[i]
				pos := c.Position
				if pos == "" {
					pos = "unknown"
				}
				if got.Key != c.Key.String() || got.Eligible != c.Eligible || got.Rule != c.Rule || got.Received != pos ||
					!slices.Equal(got.Notes, c.Notes) && len(got.Notes)+len(c.Notes) > 0 || got.Chosen != (c.Key == plan.Candidate) {
					t.Errorf("candidate %d: %+v, want %+v", i, got, c)
				}
			}
		})
	}
}

// The recorded reports in Chromium: each section renders, the topology
// drawings and the charts have their nodes and lines. Screenshots
// incident-report-<case>.png go to build/screenshots/ (or
// $DBPILOT_SCREENSHOTS).
func TestGoldenInBrowser(t *testing.T) {
	p := browser.New(t)
	for _, c := range []struct {
		name        string
		nodes       int // topology nodes drawn
		benchChart  bool
		checksFound int
	}{
		{"failover-bench", 5, true, 0},
		{"failover-history-errant", 5, false, 2},
	} {
		page, err := HTML(loadInput(t, c.name))
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), c.name+".html")
		if err := os.WriteFile(file, page, 0o644); err != nil {
			t.Fatal(err)
		}
		p.Navigate("file://" + file)
		p.WaitSelector("footer", 10*time.Second)
		for _, id := range []string{"key-times", "timeline", "decision", "topology", "charts", "alerts", "transactions", "impact"} {
			if !p.Has("#" + id) {
				t.Errorf("%s: no #%s", c.name, id)
			}
		}
		if n := p.Count("svg.topology g.node"); n != c.nodes {
			t.Errorf("%s: %d topology nodes drawn, want %d", c.name, n, c.nodes)
		}
		if n := p.Count("#charts svg.chart polyline"); n == 0 {
			t.Errorf("%s: no chart line", c.name)
		}
		if got := p.Has("#chart-bench-latency svg polyline"); got != c.benchChart {
			t.Errorf("%s: bench latency chart drawn %v, want %v", c.name, got, c.benchChart)
		}
		if n := p.Count(`tr.check[data-status="found"]`); n != c.checksFound {
			t.Errorf("%s: %d checks found something, want %d", c.name, n, c.checksFound)
		}
		// The drawings fit the page: none wider than the body.
		if w := p.EvalString(`String([...document.querySelectorAll("svg")].filter((s) => s.getBoundingClientRect().right > document.body.getBoundingClientRect().right + 1).length)`); w != "0" {
			t.Errorf("%s: %s drawings overflow the page", c.name, w)
		}
		p.Screenshot("incident-report-" + c.name)
	}
}

// The size of the report of a typical recovery: the recorded failover
// (with its bench run) made 5 minutes after its end, its charts full: 10
// minutes of 3 instances at the step serve queries them with (2 s: 301
// points a series). Logged, and bounded so that a change that bloats the page
// shows here.
func TestSizeTypical(t *testing.T) {
	in := loadInput(t, "failover-bench")
	in.To = in.Recovery.Ended.Add(5 * time.Minute) // made later than the recording was
	step := 2 * time.Second
	var instances []string
	for _, i := range in.Before.Instances {
		instances = append(instances, i.Key.String())
	}
	for ci := range in.Charts {
		var ss []dbpilot.Series
		for k, inst := range instances {
			s := dbpilot.Series{Labels: map[string]string{"instance": inst}}
			for at := in.From; !at.After(in.To); at = at.Add(step) {
				s.Points = append(s.Points, dbpilot.Point{T: at, V: float64(100*(k+1)) + 37.25*float64(at.Unix()%7)})
			}
			ss = append(ss, s)
		}
		in.Charts[ci].Series = ss
	}
	page, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a typical report: %d bytes (%.0f KiB): %d charts of %d series of %d points", len(page), float64(len(page))/1024,
		len(in.Charts), len(instances), len(in.Charts[0].Series[0].Points))
	if len(page) > 400<<10 {
		t.Errorf("the report is %d KiB", len(page)>>10)
	}
}
