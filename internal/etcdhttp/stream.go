package etcdhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// etcd's streaming calls (lease keepalive, watch) come out of the gateway
// as a sequence of {"result": ...} objects, or {"error": ...} when the
// stream fails. The request is one JSON object and the request body ends
// after it: etcd 3.4's HTTP/1.1 server (Go 1.19) withholds the response
// until the request body is finished, so a body kept open (an io.Pipe
// for later requests on the same stream) would stall the answers. A
// watch or keepalive stream stays open after its request body ends.

// decodeMsg reads the next message of a stream.
func decodeMsg(dec *json.Decoder, ep string, result any) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("etcd at %s: stream: decode %.200q: %w", ep, raw, err)
	}
	if len(m.Error) > 0 && string(m.Error) != "null" {
		return parseError(ep, raw)
	}
	if len(m.Result) == 0 {
		return fmt.Errorf("etcd at %s: stream: unexpected message %.200q", ep, raw)
	}
	if err := json.Unmarshal(m.Result, result); err != nil {
		return fmt.Errorf("etcd at %s: stream: decode %.200q: %w", ep, m.Result, err)
	}
	return nil
}

// openStream posts one request object to a streaming call and returns
// the answer's body (status 200), or etcd's error.
func (c *Client) openStream(ctx context.Context, path string, body []byte, requireLeader bool) (*http.Response, int, error) {
	resp, i, err := c.post(ctx, path, body, true, requireLeader)
	if err != nil {
		return nil, i, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		e := parseError(c.eps[i], b)
		if e.Code == 14 {
			c.next(i)
		}
		return nil, i, e
	}
	return resp, i, nil
}

// LeaseKeepAlive renews lease id once and returns its TTL in seconds as
// etcd now sees it. A TTL of 0 or less, or an IsLeaseNotFound error,
// means the lease is gone. It needs the answering member to have a leader.
func (c *Client) LeaseKeepAlive(ctx context.Context, id int64) (int64, error) {
	ctx, cancel := c.unaryContext(ctx)
	defer cancel()
	body, err := json.Marshal(struct {
		ID int64 `json:"ID,string"`
	}{id})
	if err != nil {
		return 0, err
	}
	if err := c.ensureToken(ctx); err != nil {
		return 0, err
	}
	var ttl int64
	for attempt := 0; ; attempt++ {
		tok, _ := c.getToken()
		ttl, err = c.keepAliveOnce(ctx, body)
		if err != nil && attempt == 0 && tokenError(err) && c.canAuth() {
			if aerr := c.reauth(ctx, tok); aerr != nil {
				return 0, aerr
			}
			continue
		}
		return ttl, err
	}
}

func (c *Client) keepAliveOnce(ctx context.Context, body []byte) (int64, error) {
	resp, i, err := c.openStream(ctx, "/v3/lease/keepalive", body, true)
	if err != nil {
		return 0, err
	}
	// Closed without reading the rest: the stream's end (and trailers)
	// is not waited for.
	defer resp.Body.Close()
	var out struct {
		Header ResponseHeader `json:"header"`
		ID     int64          `json:"ID,string"`
		TTL    int64          `json:"TTL,string"`
	}
	if err := decodeMsg(json.NewDecoder(resp.Body), c.eps[i], &out); err != nil {
		if !IsAuth(err) && !errors.Is(ctx.Err(), context.Canceled) {
			c.next(i)
		}
		return 0, err
	}
	return out.TTL, nil
}

// WatchRequest creates a watch of a key or a range from a revision.
type WatchRequest struct {
	Key           []byte `json:"key"`
	RangeEnd      []byte `json:"range_end,omitempty"`
	StartRevision int64  `json:"start_revision,omitempty,string"`
	PrevKV        bool   `json:"prev_kv,omitempty"`
}

// Event is a change of one key: Type "DELETE", or "" / "PUT" for a put
// (the gateway leaves PUT, the enum's zero, out).
type Event struct {
	Type   string    `json:"type"`
	Kv     *KeyValue `json:"kv"`
	PrevKv *KeyValue `json:"prev_kv"`
}

// IsDelete reports whether the event deleted its key.
func (e *Event) IsDelete() bool { return e.Type == "DELETE" }

// WatchResponse is one message of a watch.
type WatchResponse struct {
	Header          ResponseHeader `json:"header"`
	WatchID         int64          `json:"watch_id,string"`
	Created         bool           `json:"created"`
	Canceled        bool           `json:"canceled"`
	CompactRevision int64          `json:"compact_revision,string"`
	CancelReason    string         `json:"cancel_reason"`
	Events          []*Event       `json:"events"`
}

// CanceledError is a watch etcd ended: CompactRevision is set when the
// start revision was compacted away.
type CanceledError struct {
	Endpoint        string
	CompactRevision int64
	Reason          string
}

func (e *CanceledError) Error() string {
	if e.CompactRevision > 0 {
		return fmt.Sprintf("etcd at %s: watch canceled: revision compacted (now %d)", e.Endpoint, e.CompactRevision)
	}
	if e.Reason == "" {
		return fmt.Sprintf("etcd at %s: watch canceled", e.Endpoint)
	}
	return fmt.Sprintf("etcd at %s: watch canceled: %s", e.Endpoint, e.Reason)
}

// Watcher is an open watch; Next returns its messages in order.
type Watcher struct {
	ep     string
	resp   *http.Response
	dec    *json.Decoder
	cancel context.CancelFunc
}

// Watch opens a watch, which lasts until ctx ends, Close is called or
// etcd ends it. It returns once etcd has confirmed the watch (within the
// client's RequestTimeout). The watch needs the answering member to have
// a leader and is cut off when it loses it.
func (c *Client) Watch(ctx context.Context, r WatchRequest) (*Watcher, error) {
	body, err := json.Marshal(struct {
		Create WatchRequest `json:"create_request"`
	}{r})
	if err != nil {
		return nil, err
	}
	if err := c.ensureToken(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		tok, _ := c.getToken()
		w, err := c.watchOnce(ctx, body)
		// etcd 3.4 cancels a watch whose token it cannot read as "permission
		// denied": with credentials, a renewed token is tried once.
		if err != nil && attempt == 0 && c.canAuth() && (tokenError(err) || permissionDenied(err)) {
			if aerr := c.reauth(ctx, tok); aerr != nil {
				return nil, aerr
			}
			continue
		}
		return w, err
	}
}

func permissionDenied(err error) bool { return hasMessage(err, msgPermissionDenied) }

func (c *Client) watchOnce(ctx context.Context, body []byte) (*Watcher, error) {
	wctx, cancel := context.WithCancel(ctx)
	limit := c.cfg.RequestTimeout
	if limit <= 0 {
		limit = c.cfg.DialTimeout
	}
	timer := time.AfterFunc(c.cfg.DialTimeout+limit, cancel)
	resp, i, err := c.openStream(wctx, "/v3/watch", body, true)
	if err != nil {
		timer.Stop()
		cancel()
		return nil, err
	}
	w := &Watcher{ep: c.eps[i], resp: resp, dec: json.NewDecoder(resp.Body), cancel: cancel}
	first, err := w.Next()
	if !timer.Stop() && err == nil {
		err = fmt.Errorf("etcd at %s: watch not confirmed within %s", w.ep, c.cfg.DialTimeout+limit)
	}
	if err == nil && !first.Created {
		err = fmt.Errorf("etcd at %s: watch: first message is not its creation", w.ep)
	}
	if err != nil {
		w.Close()
		if !IsAuth(err) && !errors.Is(ctx.Err(), context.Canceled) {
			c.next(i)
		}
		return nil, err
	}
	return w, nil
}

// Next returns the watch's next message. It returns an error when the
// watch ends: a *CanceledError when etcd canceled it (a compacted start
// revision among the reasons), an *Error when etcd failed the stream (no
// leader), or the transport's error.
func (w *Watcher) Next() (*WatchResponse, error) {
	var r WatchResponse
	if err := decodeMsg(w.dec, w.ep, &r); err != nil {
		return nil, err
	}
	if r.Canceled {
		return &r, &CanceledError{Endpoint: w.ep, CompactRevision: r.CompactRevision, Reason: r.CancelReason}
	}
	return &r, nil
}

// Close ends the watch.
func (w *Watcher) Close() {
	w.cancel()
	w.resp.Body.Close()
}
