package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dbpilot/dbpilot"
)

// Screen is what Render draws: a frame in a view, in a terminal of Width
// columns and Height lines (0: unlimited).
type Screen struct {
	Frame  *Frame
	View   View
	Width  int
	Height int
	// Color highlights the active view name with reverse video (ANSI).
	Color bool
	// Err is a problem of the last refresh (the frame is then older).
	Err string
}

const (
	reverseOn  = "\x1b[7m"
	reverseOff = "\x1b[0m"
)

// Render draws s as text lines, each ending in "\n": a header with the view
// names (the active one in brackets, and in reverse video with Color), the
// time and the source; notes; then the view's table, one row per instance
// (per channel in the replication view, per digest in the queries view). Lines are cut to Width and the
// screen to Height lines.
func Render(s Screen) string {
	var lines []string
	lines = append(lines, header(s))
	f := s.Frame
	if s.Err != "" {
		lines = append(lines, "error: "+s.Err)
	}
	if f != nil {
		for _, n := range f.Notes {
			lines = append(lines, "note: "+n)
		}
	}
	lines = append(lines, "")
	if f == nil {
		lines = append(lines, "waiting for the first read...")
	} else {
		switch s.View {
		case ViewOverview:
			lines = append(lines, overview(f)...)
			if f.AlertsKnown {
				lines = append(lines, "")
				lines = append(lines, alertLines(f)...)
			}
		case ViewInnoDB:
			lines = append(lines, innodb(f)...)
		case ViewReplication:
			lines = append(lines, replication(f)...)
		case ViewWsrep:
			lines = append(lines, wsrep(f)...)
		case ViewQueries:
			lines = append(lines, queriesView(f, s.Width)...)
		}
	}
	if s.Height > 0 && len(lines) > s.Height {
		lines = lines[:s.Height]
	}
	var b strings.Builder
	for i, l := range lines {
		if i == 0 && s.Color {
			// The header carries escapes: cut it on its visible width.
			b.WriteString(cutANSI(l, s.Width))
		} else {
			b.WriteString(strings.TrimRight(cut(l, s.Width), " "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func header(s Screen) string {
	var b strings.Builder
	b.WriteString("dbpilot top ")
	for i, v := range views {
		name := fmt.Sprintf("%c:%s", v.key, v.name)
		if View(i) == s.View {
			name = "[" + name + "]"
			if s.Color {
				name = reverseOn + name + reverseOff
			}
		} else {
			name = " " + name + " "
		}
		b.WriteString(" " + name)
	}
	b.WriteString("  ^C:quit")
	right := ""
	if s.Frame != nil {
		right = s.Frame.Time.Format("2006-01-02 15:04:05") + "  " + s.Frame.Source
	}
	left := b.String()
	visible := visibleLen(left)
	pad := 2
	if s.Width > 0 && visible+2+utf8.RuneCountInString(right) < s.Width {
		pad = s.Width - visible - utf8.RuneCountInString(right)
	}
	if right == "" {
		return left
	}
	return left + strings.Repeat(" ", pad) + right
}

// column is one column of a table.
type column struct {
	title string
	right bool // numbers are right-aligned
}

// tableRow is the cells of one line; when tail is set it replaces every
// cell from index tailAt on (an error message).
type tableRow struct {
	cells  []string
	tail   string
	tailAt int
}

// table aligns rows under the columns, two spaces apart, trailing spaces
// trimmed.
func table(cols []column, rows []tableRow) []string {
	width := make([]int, len(cols))
	for i, c := range cols {
		width[i] = utf8.RuneCountInString(c.title)
	}
	for _, r := range rows {
		for i, c := range r.cells {
			if r.tail != "" && i >= r.tailAt {
				break
			}
			if n := utf8.RuneCountInString(c); i < len(width) && n > width[i] {
				width[i] = n
			}
		}
	}
	line := func(cells []string, tail string, tailAt int) string {
		var b strings.Builder
		for i := range cols {
			if tail != "" && i == tailAt {
				b.WriteString(tail)
				break
			}
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if cols[i].right {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if i < len(cols)-1 {
				b.WriteString("  ")
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.title
	}
	out := []string{line(titles, "", 0)}
	for _, r := range rows {
		out = append(out, line(r.cells, r.tail, r.tailAt))
	}
	return out
}

func errorRow(r Row, n int) tableRow {
	cells := make([]string, n)
	cells[0] = r.Instance
	cells[1] = dash(r.Role)
	return tableRow{cells: cells, tail: "error: " + oneLine(r.Err), tailAt: 2}
}

func overview(f *Frame) []string {
	cols := []column{{"INSTANCE", false}, {"ROLE", false}, {"QPS", true}, {"SEL/s", true}, {"INS/s", true},
		{"UPD/s", true}, {"DEL/s", true}, {"RUN", true}, {"CONN", true}, {"LAG", true}, {"DIRTY%", true},
		{"CKPT%", true}, {"ROWS_R/s", true}, {"ROWS_W/s", true}}
	if f.AlertsKnown {
		cols = append(cols, column{"ALERTS", true})
	}
	var rows []tableRow
	for _, r := range f.Rows {
		if r.Err != "" {
			rows = append(rows, errorRow(r, len(cols)))
			continue
		}
		cells := []string{r.Instance, r.Role, rate(r.QPS), rate(r.Select), rate(r.Insert), rate(r.Update), rate(r.Delete),
			count(r.ThreadsRunning), count(r.ThreadsConnected), lag(r), percent(r.DirtyPct), percent(r.CheckpointPct),
			rate(r.RowsRead), rate(sum(r.RowsInserted, r.RowsUpdated, r.RowsDeleted))}
		if f.AlertsKnown {
			cells = append(cells, strconv.Itoa(r.Alerts))
		}
		rows = append(rows, tableRow{cells: cells})
	}
	return table(cols, rows)
}

func innodb(f *Frame) []string {
	cols := []column{{"INSTANCE", false}, {"ROLE", false}, {"DIRTY%", true}, {"CKPT%", true}, {"CKPT_AGE", true},
		{"HISTORY", true}, {"ROWS_R/s", true}, {"ROWS_I/s", true}, {"ROWS_U/s", true}, {"ROWS_D/s", true},
		{"PEND_R", true}, {"PEND_W", true}, {"PEND_FSYNC", true}}
	var rows []tableRow
	for _, r := range f.Rows {
		if r.Err != "" {
			rows = append(rows, errorRow(r, len(cols)))
			continue
		}
		rows = append(rows, tableRow{cells: []string{r.Instance, r.Role, percent(r.DirtyPct), percent(r.CheckpointPct),
			size(r.CheckpointAge), count(r.HistoryLength), rate(r.RowsRead), rate(r.RowsInserted), rate(r.RowsUpdated),
			rate(r.RowsDeleted), count(r.PendingReads), count(r.PendingWrites), count(r.PendingFsyncs)}})
	}
	return table(cols, rows)
}

func replication(f *Frame) []string {
	cols := []column{{"INSTANCE", false}, {"ROLE", false}, {"CHANNEL", false}, {"SOURCE", false}, {"IO", false},
		{"SQL", false}, {"LAG", true}, {"RELAY_SPACE", true}, {"BACKLOG", true}, {"APPLY/s", true}, {"CATCH_UP", false},
		{"WORKERS", true}, {"RETRY/s", true}, {"COMMITS/GRP", true}, {"GRP_CLOSE/s", false}, {"GTID", false}}
	var rows []tableRow
	for _, r := range f.Rows {
		if r.Err != "" {
			rows = append(rows, errorRow(r, len(cols)))
			continue
		}
		gtid := dash(r.GTID)
		backlog, apply, catchUp, workers := applyCells(r.Apply)
		retries := retryCell(r.Apply)
		if len(r.Channels) == 0 {
			rows = append(rows, tableRow{cells: []string{r.Instance, r.Role, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", groupCell(r.GroupCommit), triggerCell(r.GroupCommit), gtid}})
			continue
		}
		for _, c := range r.Channels {
			name := c.Name
			if name == "" {
				name = "(default)"
			}
			l := "null"
			if c.Lag.Valid {
				l = seconds(c.Lag.V)
			}
			if len(r.Channels) == 1 && r.Lag.Valid {
				l = seconds(r.Lag.V) // the heartbeat lag when serve has it
			}
			rows = append(rows, tableRow{cells: []string{r.Instance, r.Role, name, c.Source, dash(c.IORunning),
				dash(c.SQLRunning), l, size(c.RelayLogSpace), backlog, apply, catchUp, workers, retries, groupCell(r.GroupCommit), triggerCell(r.GroupCommit), gtid}})
		}
	}
	return table(cols, rows)
}

// applyCells formats serve's catch-up figures of a replica: its backlog
// in transactions, its apply rate, the catch-up ("ok" caught up, the
// predicted time, "+N/s" falling behind by N transactions a second,
// "stopped", "?" not measured yet) and its busy/total parallel workers.
func applyCells(a *dbpilot.ReplicaApply) (backlog, apply, catchUp, workers string) {
	if a == nil {
		return "-", "-", "-", "-"
	}
	backlog, apply, workers = count(N(float64(a.BacklogTransactions))), "-", "-"
	if a.RateSeconds > 0 {
		apply = fixed(N(a.ApplyRate), 1)
	}
	if a.WorkersTotal > 0 {
		workers = fmt.Sprintf("%d/%d", a.WorkersBusy, a.WorkersTotal)
	}
	switch a.State {
	case dbpilot.CatchUpCaughtUp:
		catchUp = "ok"
	case dbpilot.CatchUpCatching:
		catchUp = seconds(math.Round(a.CatchUpSeconds))
	case dbpilot.CatchUpFalling:
		catchUp = "+" + strconv.FormatFloat(a.FallingBehindBy, 'f', 1, 64) + "/s"
	case dbpilot.CatchUpStopped:
		catchUp = "stopped"
	default:
		catchUp = "?"
	}
	return backlog, apply, catchUp, workers
}

// retryCell formats the transactions a replica's optimistic parallel
// apply retried per second over the last minute (MariaDB's
// Slave_retried_transactions), for a replica with parallel workers.
func retryCell(a *dbpilot.ReplicaApply) string {
	if a == nil || a.WorkersTotal == 0 {
		return "-"
	}
	return strconv.FormatFloat(a.RetryRate, 'f', 2, 64)
}

// triggerCell formats what closed a primary's binlog group commits, per
// second: binlog_commit_wait_count reached, binlog_commit_wait_usec
// elapsed, a transaction that must not wait ("count/timeout/lock_wait").
func triggerCell(gc *dbpilot.GroupCommit) string {
	if gc == nil || gc.GroupRate <= 0 {
		return "-"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	return f(gc.TriggerCountRate) + "/" + f(gc.TriggerTimeoutRate) + "/" + f(gc.TriggerLockWaitRate)
}

// groupCell formats a primary's commits per binlog group commit.
func groupCell(gc *dbpilot.GroupCommit) string {
	if gc == nil || gc.GroupRate <= 0 {
		return "-"
	}
	return strconv.FormatFloat(gc.CommitsPerGroup, 'f', 2, 64)
}

func wsrep(f *Frame) []string {
	cols := []column{{"INSTANCE", false}, {"ROLE", false}, {"WSREP_STATE", false}, {"CLUSTER_SIZE", true},
		{"RECV_Q", true}, {"SEND_Q", true}, {"FC_PAUSED%", true}, {"FC_SENT/s", true}, {"FC_RECV/s", true}, {"CERT_DEPS", true}}
	var rows []tableRow
	for _, r := range f.Rows {
		if r.Err != "" {
			rows = append(rows, errorRow(r, len(cols)))
			continue
		}
		if !r.Wsrep {
			rows = append(rows, tableRow{cells: []string{r.Instance, r.Role, "off", "-", "-", "-", "-", "-", "-", "-"}})
			continue
		}
		rows = append(rows, tableRow{cells: []string{r.Instance, r.Role, dash(r.WsrepState), count(r.WsrepClusterSize),
			count(r.WsrepRecvQueue), count(r.WsrepSendQueue), percent(r.WsrepFlowPaused),
			fixed(r.WsrepFCSent, 1), fixed(r.WsrepFCRecv, 1), fixed(r.WsrepCertDeps, 1)}})
	}
	return table(cols, rows)
}

func alertLines(f *Frame) []string {
	if len(f.Alerts) == 0 {
		return []string{"FIRING ALERTS: none"}
	}
	out := []string{fmt.Sprintf("FIRING ALERTS (%d)", len(f.Alerts))}
	for _, a := range f.Alerts {
		line := fmt.Sprintf("  %-8s  %s  %s", dash(a.Severity), a.Rule, dash(a.Labels["instance"]))
		if a.Summary != "" {
			line += "  " + oneLine(a.Summary)
		}
		out = append(out, line)
	}
	return out
}

// Lines formats a frame as one line per instance for output that is not a
// terminal: the time, then key=value pairs in a fixed order; "-" marks an
// unknown value, lag=null a replica that reports NULL. A source-level error
// is one line with error="...".
func Lines(f *Frame) []string {
	ts := f.Time.Format("2006-01-02T15:04:05.000Z07:00")
	var out []string
	for _, r := range f.Rows {
		var b strings.Builder
		b.WriteString(ts)
		kv := func(k, v string) {
			b.WriteString(" " + k + "=" + v)
		}
		kv("instance", r.Instance)
		if r.Err != "" {
			kv("role", dash(r.Role))
			kv("error", strconv.Quote(oneLine(r.Err)))
			out = append(out, b.String())
			continue
		}
		kv("role", r.Role)
		kv("qps", fixed(r.QPS, 1))
		kv("select", fixed(r.Select, 1))
		kv("insert", fixed(r.Insert, 1))
		kv("update", fixed(r.Update, 1))
		kv("delete", fixed(r.Delete, 1))
		kv("threads_running", fixed(r.ThreadsRunning, 0))
		kv("threads_connected", fixed(r.ThreadsConnected, 0))
		switch {
		case r.LagNull:
			kv("lag", "null")
		default:
			kv("lag", fixed(r.Lag, 1))
		}
		kv("dirty_pct", fixed(r.DirtyPct, 1))
		kv("checkpoint_pct", fixed(r.CheckpointPct, 1))
		kv("rows_read", fixed(r.RowsRead, 1))
		kv("rows_inserted", fixed(r.RowsInserted, 1))
		kv("rows_updated", fixed(r.RowsUpdated, 1))
		kv("rows_deleted", fixed(r.RowsDeleted, 1))
		kv("history", fixed(r.HistoryLength, 0))
		if len(r.Channels) > 0 {
			io, sql := "Yes", "Yes"
			for _, c := range r.Channels {
				if c.IORunning != "Yes" {
					io = c.IORunning
				}
				if c.SQLRunning != "Yes" {
					sql = c.SQLRunning
				}
			}
			kv("io", dash(io))
			kv("sql", dash(sql))
		}
		if r.Apply != nil {
			backlog, apply, catchUp, workers := applyCells(r.Apply)
			kv("backlog", backlog)
			kv("apply_per_s", apply)
			kv("catch_up", catchUp)
			kv("workers", workers)
			kv("retries_per_s", retryCell(r.Apply))
		}
		if r.GroupCommit != nil {
			kv("commits_per_group", groupCell(r.GroupCommit))
			kv("group_close_per_s", triggerCell(r.GroupCommit))
		}
		if r.Wsrep {
			kv("wsrep_state", strconv.Quote(r.WsrepState))
			kv("wsrep_recv_queue", fixed(r.WsrepRecvQueue, 0))
			kv("wsrep_fc_paused_pct", fixed(r.WsrepFlowPaused, 1))
			kv("wsrep_fc_sent_per_s", fixed(r.WsrepFCSent, 1))
		}
		if f.AlertsKnown {
			kv("alerts", strconv.Itoa(r.Alerts))
		}
		out = append(out, b.String())
	}
	return out
}

// fixed formats n with prec decimals, "-" when unknown.
func fixed(n Num, prec int) string {
	if !n.Valid {
		return "-"
	}
	return strconv.FormatFloat(n.V, 'f', prec, 64)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func sum(ns ...Num) Num {
	var t float64
	for _, n := range ns {
		if !n.Valid {
			return Num{}
		}
		t += n.V
	}
	return N(t)
}

// rate formats a per-second value compactly: 0, 0.5, 3.0, 12, 4512, 123k,
// 12.3M.
func rate(n Num) string {
	if !n.Valid {
		return "-"
	}
	v := n.V
	switch a := math.Abs(v); {
	case a < 10 && v != 0:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a < 100_000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a < 10_000_000:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	default:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	}
}

// count formats a gauge that is a whole number: 3, 4512, 123k.
func count(n Num) string {
	if !n.Valid {
		return "-"
	}
	v := math.Round(n.V)
	if math.Abs(v) < 10 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return rate(N(v))
}

func percent(n Num) string {
	if !n.Valid {
		return "-"
	}
	return strconv.FormatFloat(n.V, 'f', 1, 64)
}

// size formats a size in 1024 units: 924B, 33K, 32M, 1.5G.
func size(n Num) string {
	if !n.Valid {
		return "-"
	}
	v := n.V
	units := []string{"B", "K", "M", "G", "T"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i > 0 && math.Abs(v) < 10 && v != math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 1, 64) + units[i]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + units[i]
}

func seconds(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64) + "s"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "s"
}

// lag formats a row's lag: "-" for an instance that does not replicate,
// "null" when a channel reports NULL.
func lag(r Row) string {
	switch {
	case r.LagNull:
		return "null"
	case !r.Lag.Valid:
		return "-"
	}
	return seconds(r.Lag.V)
}

// cut truncates s to width runes (0: no limit).
func cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width])
}

// visibleLen counts the runes of s outside ANSI escape sequences.
func visibleLen(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			if r >= '@' && r <= '~' && r != '[' {
				esc = false
			}
		case r == '\x1b':
			esc = true
		default:
			n++
		}
	}
	return n
}

// cutANSI truncates s to width visible runes, keeping escape sequences and
// resetting attributes at the end when it cut.
func cutANSI(s string, width int) string {
	if width <= 0 || visibleLen(s) <= width {
		return s
	}
	var b strings.Builder
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			b.WriteRune(r)
			if r >= '@' && r <= '~' && r != '[' {
				esc = false
			}
		case r == '\x1b':
			esc = true
			b.WriteRune(r)
		default:
			if n == width {
				continue
			}
			n++
			b.WriteRune(r)
		}
	}
	b.WriteString(reverseOff)
	return b.String()
}
