package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"
)

// errorLogEvery limits the log lines of failing sends.
const errorLogEvery = time.Minute

// newHTTPClient returns a client for one target: a few kept connections,
// no redirects (they could take credentials to another host).
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// run is the target's sender: it sends a batch when MaxSamplesPerSend
// samples are queued or BatchSendDeadline passed since the last send, and
// after Close what is left, until the queue is empty or FlushTimeout
// passes.
func (s *Sink) run() {
	defer close(s.done)
	enc := &encoder{}
	var batch []entry
	deadline := time.NewTimer(s.opt.BatchSendDeadline)
	defer deadline.Stop()
	flushing := false
	for s.stop.Err() == nil {
		s.mu.Lock()
		n := s.q.len()
		if n >= s.batch || (n > 0 && flushing) {
			batch = s.take(batch[:0])
			s.mu.Unlock()
			s.send(enc, batch)
			if !flushing {
				deadline.Reset(s.opt.BatchSendDeadline)
			}
			continue
		}
		s.mu.Unlock()
		if flushing {
			return // empty
		}
		select {
		case <-s.ready:
		case <-deadline.C:
			s.mu.Lock()
			if s.q.len() > 0 {
				batch = s.take(batch[:0])
				s.mu.Unlock()
				s.send(enc, batch)
			} else {
				s.mu.Unlock()
			}
			deadline.Reset(s.opt.BatchSendDeadline)
		case <-s.flush:
			flushing = true
		}
	}
}

// take pops the next batch and marks it in flight. The caller holds s.mu.
func (s *Sink) take(dst []entry) []entry {
	dst = s.q.pop(dst, s.batch)
	s.inFlight.Store(int64(len(dst)))
	return dst
}

// send sends a batch, retrying 5xx, 429 and network errors with
// exponential backoff until it is accepted, refused, or Close gives up.
func (s *Sink) send(enc *encoder, batch []entry) {
	defer s.inFlight.Store(0)
	n := int64(len(batch))
	body := enc.encode(batch)
	clear(batch) // let series be collected
	backoff := s.opt.MinBackoff
	for {
		code, retryAfter, err := s.post(body)
		if err == nil {
			s.st.sent.Add(n)
			s.st.bytes.Add(int64(len(body)))
			return
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			s.st.failed.Add(n)
			s.logError("refused", "remote write: the receiver refused a batch; its samples are lost", code, err)
			return
		}
		s.logError("retry", "remote write: send failed; retrying", code, err)
		s.st.retried.Add(n)
		wait := backoff
		if retryAfter > 0 {
			wait = min(retryAfter, s.opt.MaxBackoff)
		}
		backoff = min(2*backoff, s.opt.MaxBackoff)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.stop.Done():
			t.Stop()
			s.st.dropped.Add(n)
			return
		}
	}
}

// permanentError is an answer not worth retrying (a 4xx other than 429).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// post sends one request and returns its status code ("error" when there
// is no answer), the answer's Retry-After, and an error unless it was
// accepted; a *permanentError when retrying would not help.
func (s *Sink) post(body []byte) (code string, retryAfter time.Duration, err error) {
	// Close's deadline ends a request in progress too.
	ctx, cancel := context.WithTimeout(s.stop, s.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return "error", 0, &permanentError{err}
	}
	for k, v := range s.opt.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", s.opt.UserAgent)
	switch {
	case s.opt.Username != "":
		req.SetBasicAuth(s.opt.Username, s.opt.Password)
	case s.opt.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+s.opt.BearerToken)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		s.st.request("error", time.Since(start), false)
		// The *url.Error names the URL as given, credentials included:
		// keep only its cause.
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) && uerr.Unwrap() != nil {
			err = uerr.Unwrap()
		}
		return "error", 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // keep the connection
	code = strconv.Itoa(resp.StatusCode)
	ok := resp.StatusCode/100 == 2
	s.st.request(code, time.Since(start), ok)
	if ok {
		return code, 0, nil
	}
	err = fmt.Errorf("HTTP %s: %s", code, oneLine(string(msg)))
	if resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests {
		if sec, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && sec > 0 {
			retryAfter = time.Duration(sec) * time.Second
		}
		return code, retryAfter, err
	}
	return code, 0, &permanentError{err}
}

// logError logs a send error, at most once a minute per kind.
func (s *Sink) logError(kind, msg, code string, err error) {
	s.logMu.Lock()
	if s.logged == nil {
		s.logged = map[string]time.Time{}
	}
	now := time.Now()
	if now.Sub(s.logged[kind]) < errorLogEvery {
		s.logMu.Unlock()
		return
	}
	s.logged[kind] = now
	s.logMu.Unlock()
	st := s.Stats()
	s.log.Warn(msg, "code", code, "error", err, "queued", st.Pending, "dropped_total", st.Dropped, "failed_total", st.Failed)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// encoder builds request bodies: a WriteRequest (wire.go) with one TimeSeries
// per series of the batch (its samples in queue order), marshalled and
// snappy-compressed (block format, as the protocol wants). Its buffers are
// reused from one batch to the next.
type encoder struct {
	index   map[*series]int
	req     writeRequest
	samples []sample
	pb      []byte
	out     []byte
}

func (e *encoder) encode(batch []entry) []byte {
	if e.index == nil {
		e.index = map[*series]int{}
	}
	clear(e.index)
	ts := e.req.Timeseries[:0]
	// Count each series' samples, then lay them out in one slice.
	counts := make([]int, 0, 64)
	for _, en := range batch {
		i, ok := e.index[en.s]
		if !ok {
			i = len(ts)
			e.index[en.s] = i
			ts = append(ts, timeSeries{Labels: en.s.labels})
			counts = append(counts, 0)
		}
		counts[i]++
	}
	if cap(e.samples) < len(batch) {
		e.samples = make([]sample, len(batch))
	}
	all := e.samples[:len(batch)]
	off := 0
	for i := range ts {
		ts[i].Samples = all[off : off : off+counts[i]]
		off += counts[i]
	}
	for _, en := range batch {
		i := e.index[en.s]
		ts[i].Samples = append(ts[i].Samples, sample{Value: en.v, Timestamp: en.t})
	}
	e.req.Timeseries = ts
	if size := e.req.size(); cap(e.pb) < size {
		e.pb = make([]byte, 0, size)
	}
	e.pb = e.req.appendTo(e.pb[:0])
	e.out = s2.EncodeSnappy(e.out[:cap(e.out)], e.pb)
	// Drop label references until the next batch.
	for i := range ts {
		ts[i] = timeSeries{}
	}
	return e.out
}
