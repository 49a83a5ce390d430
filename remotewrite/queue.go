package remotewrite

// entry is one queued sample: its series (shared labels), time in
// milliseconds and value.
type entry struct {
	s *series
	t int64
	v float64
}

// queue is a bounded FIFO of samples in a ring buffer that grows, by
// doubling, up to limit entries; pushing onto a full queue overwrites the
// oldest sample. It is not safe for concurrent use (the Sink's mutex
// guards it).
type queue struct {
	buf   []entry
	head  int // index of the oldest entry
	n     int
	limit int
}

// initialQueue is the ring's first size.
const initialQueue = 4096

func newQueue(limit int) *queue {
	return &queue{buf: make([]entry, min(limit, initialQueue)), limit: limit}
}

// push appends e and reports whether the oldest sample was dropped to make
// room.
func (q *queue) push(e entry) (dropped bool) {
	if q.n == len(q.buf) {
		if len(q.buf) < q.limit {
			q.grow()
		} else {
			q.buf[q.head] = e // the oldest makes room
			q.head = (q.head + 1) % len(q.buf)
			return true
		}
	}
	q.buf[(q.head+q.n)%len(q.buf)] = e
	q.n++
	return false
}

// grow doubles the ring (up to limit), keeping the order.
func (q *queue) grow() {
	nb := make([]entry, min(2*len(q.buf), q.limit))
	k := copy(nb, q.buf[q.head:])
	copy(nb[k:], q.buf[:q.head])
	q.buf, q.head = nb, 0
}

// pop moves up to max of the oldest samples to dst and returns it.
func (q *queue) pop(dst []entry, max int) []entry {
	for max > 0 && q.n > 0 {
		end := min(q.head+min(max, q.n), len(q.buf))
		dst = append(dst, q.buf[q.head:end]...)
		clear(q.buf[q.head:end]) // let series be collected
		k := end - q.head
		q.head = end % len(q.buf)
		q.n -= k
		max -= k
	}
	if q.n == 0 {
		q.head = 0
	}
	return dst
}

// len is the number of queued samples.
func (q *queue) len() int { return q.n }
