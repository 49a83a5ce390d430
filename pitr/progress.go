package pitr

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/gtid"
)

// applyProgress reports the apply: on a terminal one line rewritten in
// place with a bar, otherwise a line every interval. Transactions are
// counted from the sequence numbers of the target's position.
type applyProgress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	start    time.Time
	last     time.Time
	from     map[uint32]uint64
	until    map[uint32]uint64
	total    uint64
	done     uint64
	events   int64
}

func newApplyProgress(opt Options, from, until gtid.MariaList) *applyProgress {
	p := &applyProgress{w: opt.Progress, tty: opt.ProgressTTY, interval: opt.ProgressInterval, start: time.Now(),
		from: map[uint32]uint64{}, until: map[uint32]uint64{}}
	if p.interval <= 0 {
		p.interval = 10 * time.Second
		if p.tty {
			p.interval = 250 * time.Millisecond
		}
	}
	for _, g := range until {
		f, _ := from.DomainSeq(g.Domain)
		p.from[g.Domain], p.until[g.Domain] = f.Seq, g.Seq
		if g.Seq > f.Seq {
			p.total += g.Seq - f.Seq
		}
	}
	return p
}

func (p *applyProgress) update(pos gtid.MariaList, events int64) {
	var done uint64
	for d, u := range p.until {
		c, _ := pos.DomainSeq(d)
		s := min(c.Seq, u)
		if s > p.from[d] {
			done += s - p.from[d]
		}
	}
	p.done, p.events = done, events
	if p.w != nil && time.Since(p.last) >= p.interval {
		p.last = time.Now()
		p.print(false)
	}
}

func (p *applyProgress) finish() {
	if p.w != nil && p.total > 0 {
		p.print(true)
	}
}

func (p *applyProgress) print(final bool) {
	el := time.Since(p.start)
	secs := max(el.Seconds(), 1e-9)
	line := fmt.Sprintf("apply: transactions %d/%d, %.0f trx/s, events sent %d, elapsed %s",
		p.done, p.total, float64(p.done)/secs, p.events, el.Round(time.Second))
	if !final && p.done > 0 && p.done < p.total {
		eta := time.Duration(float64(el) * float64(p.total-p.done) / float64(p.done))
		line += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
	}
	if p.tty {
		frac := 1.0
		if p.total > 0 {
			frac = float64(p.done) / float64(p.total)
		}
		n := min(int(frac*20), 20)
		line = "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "] " + line
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(p.w, "\r\033[K%s%s", line, end)
		return
	}
	fmt.Fprintln(p.w, line)
}
