package backup

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress counts work done and reports it: on a terminal as one line
// rewritten in place, otherwise as a line every interval.
type progress struct {
	verb      string // "dump", "restore"
	w         io.Writer
	tty       bool
	interval  time.Duration
	start     time.Time
	estRows   atomic.Int64
	rows      atomic.Int64
	bytes     atomic.Int64
	chunks    atomic.Int64
	chunksAll atomic.Int64
	tables    atomic.Int64
	tablesAll atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once
	done     sync.WaitGroup
}

func newProgress(verb string, w io.Writer, tty bool, interval time.Duration) *progress {
	if interval <= 0 {
		interval = 10 * time.Second
		if tty {
			interval = 250 * time.Millisecond
		}
	}
	return &progress{verb: verb, w: w, tty: tty, interval: interval, start: time.Now(), stop: make(chan struct{})}
}

// run reports until finish is called.
func (p *progress) run() {
	if p.w == nil {
		return
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.print(false)
			}
		}
	}()
}

// halt stops the periodic report; it may be called more than once.
func (p *progress) halt() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.done.Wait()
}

// finish stops reporting and prints the last line.
func (p *progress) finish() {
	p.halt()
	if p.w != nil {
		p.print(true)
	}
}

func (p *progress) print(final bool) {
	el := time.Since(p.start)
	rows, bytes := p.rows.Load(), p.bytes.Load()
	secs := el.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	line := fmt.Sprintf("%s: tables %d/%d, chunks %d/%d, rows %s, %s, %.1f MB/s, %s rows/s, elapsed %s",
		p.verb, p.tables.Load(), p.tablesAll.Load(), p.chunks.Load(), p.chunksAll.Load(),
		count(rows), size(bytes), float64(bytes)/secs/1e6, count(int64(float64(rows)/secs)), el.Round(time.Second))
	if est := p.estRows.Load(); !final && est > 0 && rows > 0 && rows < est {
		eta := time.Duration(float64(el) * float64(est-rows) / float64(rows))
		line += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
		if p.tty {
			line = bar(float64(rows)/float64(est)) + " " + line
		}
	}
	if p.tty {
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(p.w, "\r\033[K%s%s", line, end)
		return
	}
	fmt.Fprintln(p.w, line)
}

func bar(frac float64) string {
	const width = 20
	n := int(frac * width)
	if n > width {
		n = width
	}
	b := make([]byte, width)
	for i := range b {
		if i < n {
			b[i] = '#'
		} else {
			b[i] = '.'
		}
	}
	return "[" + string(b) + "]"
}

func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
