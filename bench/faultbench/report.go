package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/sandbox"
)

// columns of the fault matrix.
var header = []string{"scenario", "expected", "observed", "most writable at once", "acked writes lost", "writes open after", "verdict"}

// notes collects repeatable --note flags.
type notes []string

func (n *notes) String() string     { return strings.Join(*n, "; ") }
func (n *notes) Set(v string) error { *n = append(*n, v); return nil }

type ack struct {
	id         int64
	node       string
	start, end int64
}

func readAcks(dir string) ([]ack, error) {
	f, err := os.Open(filepath.Join(dir, acksFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ack
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 4 {
			continue
		}
		var a ack
		a.id, _ = strconv.ParseInt(p[0], 10, 64)
		a.node = p[1]
		a.start, _ = strconv.ParseInt(p[2], 10, 64)
		a.end, _ = strconv.ParseInt(p[3], 10, 64)
		out = append(out, a)
	}
	return out, sc.Err()
}

type sample struct {
	at    int64
	node  string
	state byte
}

func readSamples(dir string) ([]sample, error) {
	f, err := os.Open(filepath.Join(dir, monitorFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []sample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 3 || len(p[2]) != 1 {
			continue
		}
		at, _ := strconv.ParseInt(p[0], 10, 64)
		out = append(out, sample{at: at, node: p[1], state: p[2][0]})
	}
	return out, sc.Err()
}

// readNs reads a file holding a time in Unix nanoseconds (date +%s%N).
func readNs(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// reportFlags are report's command line.
type reportFlags struct {
	name, dir, tbl      string
	scenario, expected  string
	expect, faulted     string
	url, cluster        string
	met, noAttempt, gap bool
	pauseWithin, settle time.Duration
	openWithin          time.Duration
	extra               notes
}

func parseReportFlags(args []string) *reportFlags {
	var f reportFlags
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	fs.StringVar(&f.name, "sandbox", "", "sandbox")
	fs.StringVar(&f.dir, "dir", "", "the observation's directory")
	fs.StringVar(&f.tbl, "table", "", "table file to append the row to")
	fs.StringVar(&f.scenario, "scenario", "", "scenario")
	fs.StringVar(&f.expected, "expected", "", "expected outcome, as printed")
	fs.StringVar(&f.expect, "expect", "custom", "failover (the faulted node lost the primary role), none (the first primary kept it, no recovery), or custom (only --met)")
	fs.StringVar(&f.faulted, "faulted", "", "the node the fault hit when it was the primary: writes open counts writes on other nodes only")
	fs.StringVar(&f.url, "url", "", "serve's URL, to count recoveries")
	fs.StringVar(&f.cluster, "cluster", "", "cluster name in serve")
	fs.BoolVar(&f.met, "met", true, "the script's own checks of the expectation passed")
	fs.BoolVar(&f.noAttempt, "no-attempt", false, "with --expect none: any recovery recorded, even one that failed, violates")
	fs.BoolVar(&f.gap, "gap", false, "report the longest pause between acknowledged writes after the fault")
	fs.DurationVar(&f.pauseWithin, "pause-within", 0, "with --gap: a bound on that pause the expectation names (0: none)")
	fs.DurationVar(&f.settle, "settle", 30*time.Second, "wait this long for a running recovery to end")
	fs.DurationVar(&f.openWithin, "open-within", 0, "a bound on the time to writes open that the expectation names (0: none)")
	fs.Var(&f.extra, "note", "what the script observed (repeatable)")
	parse(fs, args)
	return &f
}

// judgement is a scenario's row in the making: what was observed, and
// whether the expectation still holds.
type judgement struct {
	observed []string
	ok       bool
}

func (j *judgement) note(s ...string) { j.observed = append(j.observed, s...) }

// violate notes s and marks the expectation violated.
func (j *judgement) violate(s string) {
	j.note(s)
	j.ok = false
}

// scene is what report judges: the observation and the servers' final state.
type scene struct {
	d            *sandbox.Descriptor
	acks         []ack
	samples      []sample
	firstPrimary string
	fault        int64
	hasFault     bool
	final        []nodeState
	fw           []string // the writable nodes at the end
	finalPrimary string   // the only writable node at the end, if there is one
}

// report judges one scenario from its observation and the servers' final
// state, prints its row and appends it to the table file.
func report(args []string) error {
	f := parseReportFlags(args)
	s, err := readScene(f.name, f.dir)
	if err != nil {
		return err
	}
	j := &judgement{ok: f.met}
	var recs []dbpilot.Recovery
	recErr := errors.New("no serve asked")
	if f.url != "" {
		recs, recErr = settledRecoveries(f.url, f.cluster, f.settle)
	}
	if err := j.role(f, s, recs, recErr); err != nil {
		return err
	}
	j.note(f.extra...)
	maxW := j.together(s)
	lost, lostText := j.lost(f, s)
	openText := j.open(f, s)

	verdict := "held"
	if !j.ok || maxW > 1 || lost != 0 {
		verdict = "VIOLATED"
	}
	return emit(f.tbl, []string{f.scenario, f.expected, strings.Join(j.observed, "; "), strconv.Itoa(maxW), lostText, openText, verdict})
}

// readScene reads the observation in dir and the final topology, as the
// servers of sandbox name say.
func readScene(name, dir string) (*scene, error) {
	d, err := sandbox.Load(name)
	if err != nil {
		return nil, err
	}
	acks, err := readAcks(dir)
	if err != nil {
		return nil, err
	}
	samples, err := readSamples(dir)
	if err != nil {
		return nil, err
	}
	first, _ := os.ReadFile(filepath.Join(dir, primaryFile))
	s := &scene{d: d, acks: acks, samples: samples, firstPrimary: strings.TrimSpace(string(first))}
	s.fault, s.hasFault = readNs(filepath.Join(dir, faultFile))
	s.final = states(context.Background(), d, time.Second)
	s.fw = writableNames(s.final)
	if len(s.fw) == 1 {
		s.finalPrimary = s.fw[0]
	}
	return s, nil
}

// settledRecoveries reads serve's recoveries of cluster, waiting up to settle
// for a recovery still running to end.
func settledRecoveries(url, cluster string, settle time.Duration) ([]dbpilot.Recovery, error) {
	var recs []dbpilot.Recovery
	var err error
	for end := time.Now().Add(settle); ; {
		recs = nil
		err = getJSON(url+"/api/recoveries?cluster="+cluster, &recs)
		if err == nil && !slices.ContainsFunc(recs, func(r dbpilot.Recovery) bool { return r.Ended.IsZero() }) || time.Now().After(end) {
			return recs, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// recoveriesText shows the recoveries as recorded.
func recoveriesText(recs []dbpilot.Recovery, recErr error) string {
	if recErr != nil {
		return "recoveries unknown (" + firstLine(recErr.Error()) + ")"
	}
	var ks []string
	for _, r := range recs {
		st := "ok"
		if !r.Success {
			st = "failed"
			if r.Ended.IsZero() {
				st = "open"
			}
		}
		k := fmt.Sprintf("#%d %s %s", r.ID, r.Kind, st)
		if r.Error != "" {
			k += " (" + cut(r.Error, 160) + ")"
		}
		ks = append(ks, k)
	}
	if len(ks) == 0 {
		return "0 recoveries"
	}
	return strings.Join(ks, ", ")
}

// role judges who holds the primary role at the end against --expect, and
// serve's record of recoveries.
func (j *judgement) role(f *reportFlags, s *scene, recs []dbpilot.Recovery, recErr error) error {
	succeeded := 0
	for _, r := range recs {
		if r.Success {
			succeeded++
		}
	}
	switch f.expect {
	case "failover":
		switch {
		case s.finalPrimary == "":
			j.violate(fmt.Sprintf("no single primary at the end (writable: %v)", s.fw))
		case s.finalPrimary == f.faulted:
			j.violate("no failover: " + s.finalPrimary + " still primary")
		default:
			j.note(fmt.Sprintf("failover %s→%s", s.firstPrimary, s.finalPrimary))
		}
		// The servers say whether the failover happened; serve's record
		// must exist, and its state is shown as recorded.
		if f.url != "" {
			j.note(recoveriesText(recs, recErr))
			if recErr == nil && len(recs) == 0 {
				j.ok = false
			}
		}
	case "none":
		if s.finalPrimary == s.firstPrimary {
			j.note("no failover: " + s.finalPrimary + " primary")
		} else {
			j.violate(fmt.Sprintf("primary role moved: %s→%v", s.firstPrimary, s.fw))
		}
		if f.url != "" {
			j.note(recoveriesText(recs, recErr))
			if recErr != nil || succeeded != 0 || f.noAttempt && len(recs) != 0 {
				j.ok = false
			}
		}
	case "custom":
	default:
		return fmt.Errorf("--expect %q: want failover, none or custom", f.expect)
	}
	return nil
}

// together notes the most writable nodes in one monitor sample, and in the
// writer's view, and returns that most.
func (j *judgement) together(s *scene) int {
	sp := splits(s.samples)
	maxW := sp.max
	if sp.ticks > 0 {
		when := ""
		if s.hasFault {
			when = fmt.Sprintf(" from %+.2f s", float64(sp.firstAt-s.fault)/1e9)
		}
		j.note(fmt.Sprintf("monitor: %s writable together in %d sample(s)%s", strings.Join(sp.firstNodes, "+"), sp.ticks, when))
	}
	if il := interleaved(s.acks); len(il) > 0 {
		maxW = max(maxW, 2)
		j.note(il...)
	}
	if len(s.samples) == 0 {
		j.violate("monitor recorded nothing")
	}
	return maxW
}

// lost counts the acknowledged writes missing on the final primary: -1 and
// "?" when there is no final primary or its rows cannot be read.
func (j *judgement) lost(f *reportFlags, s *scene) (int, string) {
	if s.finalPrimary == "" {
		if f.expect != "custom" || len(s.fw) > 1 {
			j.note(fmt.Sprintf("no single writable node to count rows on (writable: %v)", s.fw))
		}
		return -1, "?"
	}
	p, _ := s.d.Node(s.finalPrimary)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	have, err := rowIDs(ctx, s.d, p)
	cancel()
	if err != nil {
		j.note("final rows unreadable: " + firstLine(err.Error()))
		return -1, "?"
	}
	var missing []ack
	for _, a := range s.acks {
		if !have[a.id] {
			missing = append(missing, a)
		}
	}
	j.note(extraRows(s.d, have, s.finalPrimary, s.final, s.fault, s.hasFault)...)
	if len(missing) > 0 {
		by := map[string]int{}
		for _, a := range missing {
			by[a.node]++
		}
		var parts []string
		for n, c := range by {
			parts = append(parts, fmt.Sprintf("%d acked on %s", c, n))
		}
		slices.Sort(parts)
		j.note("lost: " + strings.Join(parts, ", "))
	}
	return len(missing), fmt.Sprintf("%d of %d", len(missing), len(s.acks))
}

// open judges the time to writes open: the fault to the first write
// acknowledged after it (begun after it, on a node the fault did not hit),
// and with --gap the longest pause between acknowledged writes.
func (j *judgement) open(f *reportFlags, s *scene) string {
	if !s.hasFault {
		return "-"
	}
	openText := "never"
	if at, found := writesOpen(s.acks, s.fault, f.faulted); found {
		openText = fmt.Sprintf("%.2f s", float64(at-s.fault)/1e9)
		if f.openWithin > 0 && time.Duration(at-s.fault) > f.openWithin {
			j.violate(fmt.Sprintf("writes open later than %s", f.openWithin))
		}
	} else {
		j.ok = false
	}
	if f.gap {
		p := longestPause(s.acks, s.fault)
		j.note(fmt.Sprintf("longest pause between acked writes after the fault %.0f ms", float64(p)/1e6))
		if f.pauseWithin > 0 && time.Duration(p) > f.pauseWithin {
			j.violate(fmt.Sprintf("writes paused longer than %s", f.pauseWithin))
		}
	}
	return openText
}

// split is what the monitor saw of nodes writable together.
type split struct {
	max        int      // most writable nodes in one sample
	ticks      int      // samples with more than one
	firstAt    int64    // the first of those
	firstNodes []string // and its writable nodes
}

// splits reads the monitor's samples (the lines of one sample share its
// time and are consecutive).
func splits(samples []sample) split {
	var sp split
	for i := 0; i < len(samples); {
		j := i
		var w []string
		for j < len(samples) && samples[j].at == samples[i].at {
			if samples[j].state == 'W' {
				w = append(w, samples[j].node)
			}
			j++
		}
		sp.max = max(sp.max, len(w))
		if len(w) > 1 {
			if sp.ticks == 0 {
				sp.firstAt, sp.firstNodes = samples[i].at, w
			}
			sp.ticks++
		}
		i = j
	}
	return sp
}

// interleaved is the writer's view of two writable nodes: a node that
// acknowledged a write begun after another node had acknowledged one,
// while that other node went on acknowledging writes begun after it, took
// writes beside it. A clean failover or switchover (all of X's writes,
// then all of Y's) has none.
func interleaved(acks []ack) []string {
	firstEnd, lastStart := map[string]int64{}, map[string]int64{}
	for _, a := range acks {
		if v, seen := firstEnd[a.node]; !seen || a.end < v {
			firstEnd[a.node] = a.end
		}
		lastStart[a.node] = max(lastStart[a.node], a.start)
	}
	nodes := make([]string, 0, len(firstEnd))
	for n := range firstEnd {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	count := map[string]int{}
	for _, a := range acks {
		for _, y := range nodes {
			if y != a.node && firstEnd[y] < a.start && lastStart[y] > a.end {
				count[a.node+" between writes on "+y]++
				break
			}
		}
	}
	var out []string
	for k, v := range count {
		out = append(out, fmt.Sprintf("writer: %d write(s) acked on %s", v, k))
	}
	slices.Sort(out)
	return out
}

// writesOpen returns when the first write begun at or after the fault,
// on a node other than faulted, was acknowledged.
func writesOpen(acks []ack, fault int64, faulted string) (int64, bool) {
	best := int64(-1)
	for _, a := range acks {
		if a.start >= fault && a.node != faulted && (best < 0 || a.end < best) {
			best = a.end
		}
	}
	return best, best >= 0
}

// longestPause returns the longest time without an acknowledgement from
// the fault to the last acknowledgement.
func longestPause(acks []ack, fault int64) int64 {
	var ends []int64
	for _, a := range acks {
		if a.end >= fault {
			ends = append(ends, a.end)
		}
	}
	slices.Sort(ends)
	longest, prev := int64(0), fault
	for _, e := range ends {
		longest = max(longest, e-prev)
		prev = e
	}
	return longest
}

// extraRows says which answering nodes hold bench rows the final primary
// (holding have) lacks: commits made where the primary was not, and when
// they were written (the row's NOW(6), relative to the fault).
func extraRows(d *sandbox.Descriptor, have map[int64]bool, primary string, final []nodeState, fault int64, hasFault bool) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for _, s := range final {
		if !s.answered || s.node.Name == primary {
			continue
		}
		db := rootDB(d, s.node, 5*time.Second)
		rows, err := db.QueryContext(ctx, "SELECT id, UNIX_TIMESTAMP(at) FROM "+benchDB+".t")
		if err != nil {
			db.Close()
			continue
		}
		extra := 0
		first, last := math.Inf(1), math.Inf(-1)
		for rows.Next() {
			var id int64
			var at float64
			if rows.Scan(&id, &at) != nil || have[id] {
				continue
			}
			extra++
			first, last = math.Min(first, at), math.Max(last, at)
		}
		rows.Close()
		db.Close()
		if extra == 0 {
			continue
		}
		when := ""
		if hasFault {
			f := float64(fault) / 1e9
			when = fmt.Sprintf(", written %+.2f s to %+.2f s from the fault", first-f, last-f)
		}
		out = append(out, fmt.Sprintf("%s holds %d row(s) %s lacks%s", s.node.Name, extra, primary, when))
	}
	return out
}

// rowIDs reads every bench row id of a node.
func rowIDs(ctx context.Context, d *sandbox.Descriptor, n *sandbox.Node) (map[int64]bool, error) {
	db := rootDB(d, n, 5*time.Second)
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT id FROM "+benchDB+".t")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		have[id] = true
	}
	return have, rows.Err()
}

// cut shortens s to at most n runes.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// emit prints a row and appends it to the table file.
func emit(tbl string, cells []string) error {
	for i, c := range cells {
		c = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
		if c == "" {
			c = "-"
		}
		cells[i] = c
	}
	fmt.Printf("row: %s\n", strings.Join(cells, " · "))
	if tbl == "" {
		return nil
	}
	f, err := os.OpenFile(tbl, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, strings.Join(cells, "\t"))
	return errors.Join(err, f.Close())
}

// row appends a row the script judged itself (exit codes, scenarios not
// run).
func row(args []string) error {
	fs := flag.NewFlagSet("row", flag.ExitOnError)
	tbl := fs.String("table", "", "table file")
	scenario := fs.String("scenario", "", "scenario")
	expected := fs.String("expected", "", "expected")
	observed := fs.String("observed", "", "observed")
	writable := fs.String("writable", "-", "most writable at once")
	lost := fs.String("lost", "-", "acknowledged writes lost")
	open := fs.String("open", "-", "writes open after")
	verdict := fs.String("verdict", "", "held, VIOLATED or not run")
	parse(fs, args)
	switch *verdict {
	case "held", "VIOLATED", "not run":
	default:
		return fmt.Errorf("--verdict %q: want held, VIOLATED or not run", *verdict)
	}
	return emit(*tbl, []string{*scenario, *expected, *observed, *writable, *lost, *open, *verdict})
}

// table prints the table file as one aligned table; an observation too
// long for its column wraps onto continuation lines.
func table(args []string) error {
	fs := flag.NewFlagSet("table", flag.ExitOnError)
	tbl := fs.String("table", "", "table file")
	width := fs.Int("observed-width", 70, "wrap the observed column at this width")
	parse(fs, args)
	b, err := os.ReadFile(*tbl)
	if err != nil {
		return err
	}
	rows := [][]string{header}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			rows = append(rows, strings.Split(l, "\t"))
		}
	}
	// Each row becomes one or more lines, the observed column wrapped.
	var lines [][]string
	for ri, r := range rows {
		parts := []string{r[2]}
		if ri > 0 {
			parts = wrap(r[2], *width)
		}
		for i, p := range parts {
			l := make([]string, len(r))
			if i == 0 {
				copy(l, r)
			}
			l[2] = p
			lines = append(lines, l)
		}
		if ri == 0 {
			lines = append(lines, nil) // the rule under the header
		}
	}
	w := make([]int, len(header))
	for _, l := range lines {
		for i, c := range l {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for _, l := range lines {
		if l == nil {
			var rule []string
			for _, n := range w {
				rule = append(rule, strings.Repeat("-", n))
			}
			fmt.Fprintln(out, strings.Join(rule, "-+-"))
			continue
		}
		var cells []string
		for i, c := range l {
			cells = append(cells, c+strings.Repeat(" ", w[i]-len([]rune(c))))
		}
		fmt.Fprintln(out, strings.TrimRight(strings.Join(cells, " | "), " "))
	}
	return nil
}

// wrap splits s into lines of at most width runes at "; " or spaces.
func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			out = append(out, line)
			line = "  " + word
			continue
		}
		if line == "" {
			line = word
		} else {
			line += " " + word
		}
	}
	return append(out, line)
}

// fenced reads the monitor's samples of a node that was started again at
// --since (a file holding Unix ns) and says how long it answered writable
// before it answered read_only; it fails when that took longer than
// --within, or when it was never seen read_only within --wait.
func fenced(args []string) error {
	fs := flag.NewFlagSet("fenced", flag.ExitOnError)
	dir := fs.String("dir", "", "the observation's directory")
	node := fs.String("node", "node1", "node")
	since := fs.String("since", "", "file holding the Unix ns the node was started at")
	event := fs.String("event", "its start", "what happened at --since, as printed")
	within := fs.Duration("within", 2*time.Second, "the bound")
	wait := fs.Duration("wait", 10*time.Second, "wait this long for a read_only sample")
	parse(fs, args)
	t0, ok := readNs(*since)
	if !ok {
		return fmt.Errorf("no start time in %s", *since)
	}
	end := time.Now().Add(*wait)
	for {
		ss, err := readSamples(*dir)
		if err != nil {
			return err
		}
		var firstAnswer, firstW, firstR int64 = -1, -1, -1
		for _, s := range ss {
			if s.node != *node || s.at < t0 {
				continue
			}
			if firstAnswer < 0 && s.state != 'X' {
				firstAnswer = s.at
			}
			if firstW < 0 && s.state == 'W' {
				firstW = s.at
			}
			if s.state == 'R' {
				firstR = s.at
				break
			}
		}
		if firstR >= 0 {
			if firstW < 0 {
				fmt.Printf("%s read_only from its first answer (%.2f s after %s)\n", *node, float64(firstR-t0)/1e9, *event)
				return nil
			}
			took := time.Duration(firstR - firstW)
			fmt.Printf("%s answered writable %.2f s after %s, read_only %.2f s later\n", *node, float64(firstW-t0)/1e9, *event, took.Seconds())
			if took > *within {
				return fmt.Errorf("fenced after %s, more than %s", took, *within)
			}
			return nil
		}
		if time.Now().After(end) {
			if firstW >= 0 {
				fmt.Printf("%s writable since %.2f s after %s, never read_only within %s\n", *node, float64(firstW-t0)/1e9, *event, *wait)
			} else {
				fmt.Printf("%s never answered within %s of %s\n", *node, *wait, *event)
			}
			return errors.New("not fenced")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// switchovers asks serve for two switchovers of one cluster at once, to
// two different nodes, and says what each got; it fails unless one was
// done and the other refused as a conflict (409).
func switchovers(args []string) error {
	fs := flag.NewFlagSet("switchovers", flag.ExitOnError)
	url := fs.String("url", "", "serve's URL")
	name := fs.String("sandbox", "", "sandbox (token and node addresses)")
	cluster := fs.String("cluster", "", "cluster")
	to := fs.String("to", "node2,node3", "the two candidates")
	parse(fs, args)
	d, err := sandbox.Load(*name)
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(filepath.Join(d.Dir, "api-token"))
	if err != nil {
		return err
	}
	targets := strings.Split(*to, ",")
	type answer struct {
		code int
		body string
	}
	answers := make([]answer, len(targets))
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	for i, t := range targets {
		n, err := d.Node(t)
		if err != nil {
			return err
		}
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"to":%q}`, n.Key().String())
			req, _ := http.NewRequest(http.MethodPost, *url+"/api/clusters/"+*cluster+"/switchover", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
			req.Header.Set("Content-Type", "application/json")
			c := http.Client{Timeout: 60 * time.Second}
			ready.Done()
			<-start
			resp, err := c.Do(req)
			if err != nil {
				answers[i] = answer{0, err.Error()}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			answers[i] = answer{resp.StatusCode, strings.TrimSpace(string(b))}
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	done, conflict := 0, 0
	var parts []string
	for i, a := range answers {
		msg := a.body
		if a.code >= 200 && a.code < 300 {
			done++
			msg = "done"
		} else if a.code == http.StatusConflict {
			conflict++
		}
		if len(msg) > 90 {
			msg = msg[:90] + "…"
		}
		parts = append(parts, fmt.Sprintf("to %s: %d %s", targets[i], a.code, msg))
	}
	fmt.Println(strings.Join(parts, "; "))
	if done != 1 || conflict != 1 {
		return fmt.Errorf("%d done, %d refused as a conflict; want 1 and 1", done, conflict)
	}
	return nil
}
