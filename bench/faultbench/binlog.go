package main

// The binary log archive row: a `dbpilot binlog stream` killed around a
// binary log rotation, restarted on the same directory, and the archive
// judged with `dbpilot binlog ls|verify` and mariadb-binlog.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/binlog"
	"github.com/dbpilot/dbpilot/gtid"
	"github.com/dbpilot/dbpilot/sandbox"
)

// typeRotate is the binary log's ROTATE_EVENT.
const typeRotate = 4

// primaryDB opens root's pool on the sandbox's one writable node.
func primaryDB(ctx context.Context, name string) (*sandbox.Descriptor, *sandbox.Node, *sql.DB, error) {
	d, err := sandbox.Load(name)
	if err != nil {
		return nil, nil, nil, err
	}
	w := writableNames(states(ctx, d, time.Second))
	if len(w) != 1 {
		return nil, nil, nil, fmt.Errorf("want one writable node, have %v", w)
	}
	p, _ := d.Node(w[0])
	db := rootDB(d, p, 10*time.Second)
	db.SetMaxOpenConns(4)
	return d, p, db, nil
}

// rotate rotates the primary's binary log with FLUSH BINARY LOGS and, right
// around it, kills the archive's stream: --kill stream sends SIGKILL to
// its process, --kill dump KILLs its dump threads on the server. --at
// times the kill from the moment FLUSH is sent (negative: before it);
// --on waits for a stage of the archive's rotation instead (tmp: the
// finished file being compressed; zst: the compressed file in place;
// index: its index entry written; next: the new file begun). After a SIGKILL it says where in the rotation the
// archive was left; the first word of its line (up to ":") names the
// stage.
func rotate(args []string) error {
	fs := flag.NewFlagSet("rotate", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	kill := fs.String("kill", "stream", "stream (SIGKILL the stream's process) or dump (KILL its dump threads)")
	pid := fs.Int("pid", 0, "the stream's process (--kill stream)")
	at := fs.Duration("at", 0, "kill this long after FLUSH BINARY LOGS is sent (negative: before)")
	on := fs.String("on", "", "kill once the archive shows this stage of the rotation: tmp, zst, index or next (instead of --at)")
	dir := fs.String("archive", "", "the archive directory")
	parse(fs, args)
	if *kill != "stream" && *kill != "dump" || *kill == "stream" && *pid <= 0 || *dir == "" {
		return errors.New("want --archive DIR and --kill stream --pid PID or --kill dump")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, _, db, err := primaryDB(ctx, *name)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := firstColumn(ctx, db, "SHOW MASTER STATUS")
	if err != nil || len(st) != 1 {
		return fmt.Errorf("SHOW MASTER STATUS on the primary: %v", err)
	}
	old := st[0]
	r := &rotation{kill: *kill, pid: *pid, flushed: make(chan error, 1)}
	if *kill == "dump" {
		if r.dumps, err = dumpThreads(ctx, db, d.Admin.User); err != nil {
			return err
		}
	}
	// Two sessions ready before the clock starts: one rotates, one kills.
	if r.flushConn, err = db.Conn(ctx); err != nil {
		return err
	}
	defer r.flushConn.Close()
	if r.killConn, err = db.Conn(ctx); err != nil {
		return err
	}
	defer r.killConn.Close()
	seen, err := r.run(ctx, *at, *on, *dir, old)
	if err != nil {
		return err
	}
	when := r.describe(old, *on, seen)
	if *kill == "dump" {
		fmt.Printf("dump thread killed: %s\n", when)
		return nil
	}
	// The stream is dead: what did it leave?
	for end := time.Now().Add(5 * time.Second); running(*pid) && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	stage, detail := archiveStage(*dir, old)
	fmt.Printf("%s: %s; archive: %s\n", stage, when, detail)
	return nil
}

// dumpThreads lists the ids of user's binary log dump threads on the server.
func dumpThreads(ctx context.Context, db *sql.DB, user string) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE user=? AND command LIKE 'Binlog Dump%'", user)
	if err != nil {
		return nil, err
	}
	var dumps []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			dumps = append(dumps, id)
		}
	}
	rows.Close()
	if len(dumps) == 0 {
		return nil, fmt.Errorf("no dump thread of %s on the primary", user)
	}
	return dumps, nil
}

// rotation is one FLUSH BINARY LOGS with a kill of the archive's stream
// timed around it.
type rotation struct {
	kill      string  // stream or dump
	pid       int     // the stream's process (kill stream)
	dumps     []int64 // its dump threads (kill dump)
	flushConn *sql.Conn
	killConn  *sql.Conn
	flushed   chan error

	flushStart, flushEnd, killAt time.Time
}

// doKill kills the stream's process or its dump threads.
func (r *rotation) doKill(ctx context.Context) error {
	if r.kill == "stream" {
		return syscall.Kill(r.pid, syscall.SIGKILL)
	}
	var errs []error
	for _, id := range r.dumps {
		if _, err := r.killConn.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil && !strings.Contains(err.Error(), "Unknown thread") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flush sends FLUSH BINARY LOGS; its end is reported on r.flushed.
func (r *rotation) flush(ctx context.Context) {
	r.flushStart = time.Now()
	go func() {
		_, err := r.flushConn.ExecContext(ctx, "FLUSH BINARY LOGS")
		r.flushEnd = time.Now()
		r.flushed <- err
	}()
}

// run rotates and kills, at the stage on of the archive's rotation of old
// in dir when on is set, else at the offset at from the flush, and waits
// for the flush to end. It returns what it saw of the stage.
func (r *rotation) run(ctx context.Context, at time.Duration, on, dir, old string) (string, error) {
	seen := ""
	var err error
	switch {
	case on != "":
		r.flush(ctx)
		seen = waitStage(dir, old, on, 3*time.Second)
		r.killAt = time.Now()
		err = r.doKill(ctx)
	case at < 0:
		r.killAt = time.Now()
		err = r.doKill(ctx)
		time.Sleep(-at)
		r.flush(ctx)
	default:
		r.flush(ctx)
		if at > 0 {
			time.Sleep(at)
		}
		r.killAt = time.Now()
		err = r.doKill(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("kill: %w", err)
	}
	if err := <-r.flushed; err != nil {
		return "", fmt.Errorf("FLUSH BINARY LOGS: %w", err)
	}
	return seen, nil
}

// describe says what was killed when, from the moment FLUSH was sent.
func (r *rotation) describe(old, on, seen string) string {
	ms := func(t time.Time) string { return fmt.Sprintf("%+.1f ms", float64(t.Sub(r.flushStart))/1e6) }
	what := "kill -9 of the stream"
	if r.kill == "dump" {
		what = fmt.Sprintf("KILL of its dump thread(s) %v", r.dumps)
	}
	when := fmt.Sprintf("%s at FLUSH BINARY LOGS %s (%s rotated to the next file at %s)", what, ms(r.killAt), old, ms(r.flushEnd))
	if on != "" {
		if seen == "" {
			when += fmt.Sprintf("; stage %q not seen within 3 s", on)
		} else {
			when += "; on seeing " + seen
		}
	}
	return when
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitStage polls the archive directory until it shows the stage of the
// rotation of old, and says what it saw ("" when not within timeout).
func waitStage(dir, old, stage string, timeout time.Duration) string {
	for end := time.Now().Add(timeout); time.Now().Before(end); {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			n := e.Name()
			switch {
			case stage == "tmp" && strings.HasSuffix(n, binlog.ZstSuffix+".tmp"):
				return n
			case stage == "zst" && n == old+binlog.ZstSuffix:
				return n
			case stage == "next" && strings.HasSuffix(n, binlog.PartialSuffix) && n != old+binlog.PartialSuffix:
				return n
			case stage == "index" && n == binlog.IndexName:
				if b, _ := os.ReadFile(filepath.Join(dir, n)); bytes.Contains(b, []byte(`"name":"`+old+`"`)) {
					return "the index entry of " + old
				}
			}
		}
		runtime.Gosched() // a busy poll: a small file is compressed in well under a millisecond
	}
	return ""
}

// archiveStage names where a killed stream left the archive in the
// rotation of old, and lists the files that tell.
func archiveStage(dir, old string) (stage, detail string) {
	idx, _ := binlog.ReadIndex(dir)
	indexed := slices.ContainsFunc(idx, func(e binlog.IndexEntry) bool { return e.Name == old })
	ents, _ := os.ReadDir(dir)
	var parts []string
	tmp, zst := false, false
	var partial string
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasSuffix(n, ".tmp"):
			tmp = true
			parts = append(parts, n)
		case n == old+binlog.ZstSuffix:
			zst = true
			parts = append(parts, fmt.Sprintf("%s (indexed: %v)", n, indexed))
		case strings.HasSuffix(n, binlog.PartialSuffix):
			partial = n
			events, last := partialEvents(filepath.Join(dir, n))
			st, _ := os.Stat(filepath.Join(dir, n))
			var size int64
			if st != nil {
				size = st.Size()
			}
			parts = append(parts, fmt.Sprintf("%s (%d bytes, %d events, last %s)", n, size, events, last))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no partial file")
	}
	detail = strings.Join(parts, ", ")
	oldPartial := partial == old+binlog.PartialSuffix
	switch {
	case tmp:
		return "old file being compressed", detail
	case oldPartial && zst && indexed:
		return "old file indexed, its partial not yet removed", detail
	case oldPartial && zst:
		return "old file compressed, not yet indexed", detail
	case oldPartial:
		if _, last := partialEvents(filepath.Join(dir, partial)); last == "Rotate" {
			return "Rotate in the old file, not yet compressed", detail
		}
		return "before the Rotate reached the archive", detail
	case partial == "" && indexed:
		return "old file finished, next not begun", detail
	case partial != "":
		if n, _ := partialEvents(filepath.Join(dir, partial)); n == 0 {
			return "next file begun, nothing on disk", detail
		}
		return "next file begun", detail
	}
	return "unexpected", detail
}

// partialEvents counts the complete events of an archive file and names
// the last one's type.
func partialEvents(path string) (int, string) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "-"
	}
	defer f.Close()
	n, last := 0, "-"
	_ = binlog.ReadEvents(f, func(_ int64, e binlog.Event) error {
		n++
		last = strconv.Itoa(int(e.Type))
		if e.Type == typeRotate && !e.Artificial() {
			last = "Rotate"
		}
		return nil
	})
	return n, last
}

// archiveFile is what `dbpilot binlog ls --json` says of one file.
type archiveFile struct {
	File      string `json:"file"`
	GTIDStart string `json:"gtid_start"`
	GTIDEnd   string `json:"gtid_end"`
	FirstGTID string `json:"first_gtid"`
	LastGTID  string `json:"last_gtid"`
	Trx       int    `json:"transactions"`
	Partial   bool   `json:"partial"`
	Source    string `json:"source"`
	ServerID  uint32 `json:"server_id"`
}

// ls runs `dbpilot binlog ls --json DIR`.
func ls(dbp, dir string) ([]archiveFile, error) {
	out, err := exec.Command(dbp, "binlog", "ls", "--json", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("binlog ls: %v: %s", err, firstLine(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("binlog ls: %w", err)
	}
	var files []archiveFile
	if err := json.Unmarshal(out, &files); err != nil {
		return nil, fmt.Errorf("binlog ls: %w", err)
	}
	return files, nil
}

// covers reports whether archive position a has every domain of b at
// least as far (a MariaDB gtid_binlog_pos form each).
func covers(a, b string) (bool, error) {
	la, err := gtid.ParseMariaList(a)
	if err != nil {
		return false, err
	}
	lb, err := gtid.ParseMariaList(b)
	if err != nil {
		return false, err
	}
	for _, d := range lb.Domains() {
		gb, _ := lb.DomainSeq(d)
		ga, ok := la.DomainSeq(d)
		if gb.Seq > 0 && (!ok || ga.Seq < gb.Seq) {
			return false, nil
		}
	}
	return true, nil
}

// firstColumn returns the first column of every row of q.
func firstColumn(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, string(vals[0]))
	}
	return out, rows.Err()
}

func binlogPos(ctx context.Context, db *sql.DB) (string, error) {
	var p string
	err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&p)
	return strings.Join(strings.Fields(p), ""), err
}

// archiveWait waits until the archive (as `dbpilot binlog ls` reads it)
// holds every transaction the primary had written when it began.
func archiveWait(args []string) error {
	fs := flag.NewFlagSet("archive-wait", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	dbp := fs.String("dbpilot", "dbpilot", "the dbpilot binary")
	dir := fs.String("archive", "", "the archive directory")
	timeout := fs.Duration("timeout", 20*time.Second, "give up after")
	parse(fs, args)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout+10*time.Second)
	defer cancel()
	_, _, db, err := primaryDB(ctx, *name)
	if err != nil {
		return err
	}
	defer db.Close()
	want, err := binlogPos(ctx, db)
	if err != nil {
		return err
	}
	t0 := time.Now()
	last := "nothing"
	for time.Since(t0) < *timeout {
		files, err := ls(*dbp, *dir)
		if err != nil {
			last = err.Error()
		} else if len(files) > 0 {
			end := files[len(files)-1].GTIDEnd
			last = "archive at " + end
			if ok, err := covers(end, want); err != nil {
				return err
			} else if ok {
				fmt.Printf("archive at %s (the primary was at %s) within %.2f s\n", end, want, time.Since(t0).Seconds())
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the archive did not reach the primary's %s within %s: %s", want, *timeout, last)
}

// archiveCheck judges the archive once the writer stopped and the stream
// caught up and ended: `dbpilot binlog verify` passes; the archive starts
// at the start of the primary's first binary log and ends at its
// gtid_binlog_pos (so, verify's continuity holding, no GTID is missing in
// between); and mariadb-binlog finds in the archived files every row the
// writer had acknowledged and every row the primary holds, each once.
func archiveCheck(args []string) error {
	fs := flag.NewFlagSet("archive-check", flag.ExitOnError)
	name := fs.String("sandbox", "", "sandbox")
	dbp := fs.String("dbpilot", "dbpilot", "the dbpilot binary")
	dir := fs.String("archive", "", "the archive directory")
	obs := fs.String("dir", "", "the observation's directory (the writer's acknowledgements)")
	parse(fs, args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, p, db, err := primaryDB(ctx, *name)
	if err != nil {
		return err
	}
	defer db.Close()
	var c findings
	c.verify(*dbp, *dir)
	if err := c.gtidRange(ctx, db, p, *dbp, *dir); err != nil {
		return err
	}
	if err := c.rows(ctx, d, p, *dir, *obs); err != nil {
		return err
	}
	fmt.Println(strings.Join(append(c.bad, c.said...), "; "))
	if len(c.bad) > 0 {
		return errors.New("the archive is not complete and sound")
	}
	return nil
}

// findings are what archiveCheck found wrong (bad) and right (said).
type findings struct {
	bad, said []string
}

// verify runs `dbpilot binlog verify` on the archive in dir.
func (c *findings) verify(dbp, dir string) {
	out, verr := exec.Command(dbp, "binlog", "verify", "--json", dir).Output()
	var rep struct {
		Files    []json.RawMessage `json:"files"`
		Position string            `json:"position"`
		Problems []struct {
			Message string `json:"message"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		c.bad = append(c.bad, fmt.Sprintf("binlog verify: %v (%v)", err, verr))
		return
	}
	switch {
	case verr != nil || len(rep.Problems) > 0:
		var ms []string
		for _, pr := range rep.Problems {
			ms = append(ms, pr.Message)
		}
		c.bad = append(c.bad, fmt.Sprintf("binlog verify: %v, %d problem(s): %s", verr, len(ms), cut(strings.Join(ms, " | "), 400)))
	default:
		c.said = append(c.said, fmt.Sprintf("binlog verify: sound, %d files", len(rep.Files)))
	}
}

// gtidRange judges the archive's GTID range against the primary p's (from
// the start of its first binary log to its gtid_binlog_pos), and that each
// finished file's index entry names the server it came from.
func (c *findings) gtidRange(ctx context.Context, db *sql.DB, p *sandbox.Node, dbp, dir string) error {
	files, err := ls(dbp, dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("the archive holds no file")
	}
	pos, err := binlogPos(ctx, db)
	if err != nil {
		return err
	}
	logs, err := firstColumn(ctx, db, "SHOW BINARY LOGS")
	if err != nil || len(logs) == 0 {
		return fmt.Errorf("SHOW BINARY LOGS: %v", err)
	}
	firstLog := logs[0]
	var oldest string
	if err := db.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, 4)", firstLog).Scan(&oldest); err != nil {
		return fmt.Errorf("BINLOG_GTID_POS(%s, 4): %w", firstLog, err)
	}
	first, lastF := files[0], files[len(files)-1]
	firstGTID := ""
	for _, f := range files {
		if f.FirstGTID != "" {
			firstGTID = f.FirstGTID
			break
		}
	}
	startOK := samePos(first.GTIDStart, oldest)
	endOK := samePos(lastF.GTIDEnd, pos)
	rng := fmt.Sprintf("archive %s..%s in %d files", orDash(firstGTID), orDash(lastF.LastGTID), len(files))
	if !startOK {
		c.bad = append(c.bad, fmt.Sprintf("%s starts at %q, but the primary's first binary log %s starts at %q", rng, first.GTIDStart, firstLog, oldest))
	}
	if !endOK {
		c.bad = append(c.bad, fmt.Sprintf("%s ends at %s, the primary's gtid_binlog_pos is %s", rng, lastF.GTIDEnd, pos))
	}
	if startOK && endOK {
		c.said = append(c.said, fmt.Sprintf("%s: from the start of the primary's first binary log (%q) to its gtid_binlog_pos %s", rng, oldest, pos))
	}
	// Each finished file's index entry names the server it came from.
	var anon []string
	for _, f := range files {
		if !f.Partial && (f.Source != p.Key().String() || f.ServerID == 0) {
			anon = append(anon, fmt.Sprintf("%s (source %q, server_id %d)", f.File, f.Source, f.ServerID))
		}
	}
	if len(anon) > 0 {
		c.bad = append(c.bad, fmt.Sprintf("index entries without their source %s: %s", p.Key(), strings.Join(anon, ", ")))
	}
	return nil
}

// rows judges the writer's rows, as mariadb-binlog reads the archived files
// in dir: every row acknowledged (in the observation obs) and every row on
// the primary p is there, each once.
func (c *findings) rows(ctx context.Context, d *sandbox.Descriptor, p *sandbox.Node, dir, obs string) error {
	ids, err := archivedRows(dir)
	if err != nil {
		return err
	}
	acks, err := readAcks(obs)
	if err != nil {
		return err
	}
	have, err := rowIDs(ctx, d, p)
	if err != nil {
		return err
	}
	var missAck, missRow, dup []int64
	for _, a := range acks {
		if ids[a.id] == 0 {
			missAck = append(missAck, a.id)
		}
	}
	for id := range have {
		if ids[id] == 0 {
			missRow = append(missRow, id)
		}
	}
	for id, n := range ids {
		if n > 1 {
			dup = append(dup, id)
		}
	}
	slices.Sort(missAck)
	slices.Sort(missRow)
	slices.Sort(dup)
	rowsSaid := fmt.Sprintf("mariadb-binlog: %d writer rows in the archive; %d of %d acknowledged and %d of %d on %s missing from it, %d twice",
		len(ids), len(missAck), len(acks), len(missRow), len(have), p.Name, len(dup))
	if len(missAck)+len(missRow)+len(dup) > 0 || len(acks) == 0 {
		c.bad = append(c.bad, rowsSaid+fmt.Sprintf(" (missing acked: %s; missing rows: %s; twice: %s)", idList(missAck), idList(missRow), idList(dup)))
	} else {
		c.said = append(c.said, rowsSaid)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// samePos compares two MariaDB positions domain by domain.
func samePos(a, b string) bool {
	la, err1 := gtid.ParseMariaList(a)
	lb, err2 := gtid.ParseMariaList(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return gtid.HighestPerDomain(la).Equal(gtid.HighestPerDomain(lb))
}

func idList(ids []int64) string {
	if len(ids) == 0 {
		return "none"
	}
	var s []string
	for i, id := range ids {
		if i == 10 {
			s = append(s, fmt.Sprintf("… %d more", len(ids)-10))
			break
		}
		s = append(s, strconv.FormatInt(id, 10))
	}
	return strings.Join(s, ",")
}

// archivedRows reads every archive file (decompressed) with mariadb-binlog
// and counts the rows inserted into the bench table, by id.
func archivedRows(dir string) (map[int64]int, error) {
	tool, err := exec.LookPath("mariadb-binlog")
	if err != nil {
		return nil, err
	}
	files, err := binlog.Files(dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "faultbench-binlog")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ids := map[int64]int{}
	insert := regexp.MustCompile("^### INSERT INTO `" + benchDB + "`\\.`t`$")
	col1 := regexp.MustCompile(`^###   @1=(\d+)`)
	for i, f := range files {
		rc, err := binlog.OpenFile(f.Path)
		if err != nil {
			return nil, err
		}
		plain := filepath.Join(tmp, fmt.Sprintf("%04d-%s", i, f.Name))
		w, err := os.Create(plain)
		if err == nil {
			_, err = io.Copy(w, rc)
			err = errors.Join(err, w.Close())
		}
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("decompress %s: %w", f.Path, err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(tool, "--verbose", "--base64-output=DECODE-ROWS", plain)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("mariadb-binlog %s: %v: %s", filepath.Base(f.Path), err, firstLine(stderr.String()))
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		inInsert := false
		for sc.Scan() {
			l := sc.Text()
			switch {
			case insert.MatchString(l):
				inInsert = true
			case inInsert:
				if m := col1.FindStringSubmatch(l); m != nil {
					id, _ := strconv.ParseInt(m[1], 10, 64)
					ids[id]++
					inInsert = false
				} else if !strings.HasPrefix(l, "### SET") {
					inInsert = false
				}
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		_ = os.Remove(plain)
	}
	return ids, nil
}
