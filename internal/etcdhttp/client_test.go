package etcdhttp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests replay answers of a real etcd 3.4.23's gateway recorded with
// curl by testdata/record.sh (NAME.json, NAME.status), and check what the
// client makes of them and what it sends.

// recorded is one recorded answer.
type recorded struct {
	status int
	body   []byte
}

func load(t *testing.T, name string) recorded {
	t.Helper()
	body, err := os.ReadFile("testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile("testdata/" + name + ".status")
	if err != nil {
		t.Fatal(err)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(st)))
	if err != nil {
		t.Fatal(err)
	}
	return recorded{code, body}
}

// request is what the fake gateway received.
type request struct {
	path, auth, hasLeader string
	body                  any
}

// fake answers each path with its recordings in turn (the last repeats).
type fake struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	ans  map[string][]recorded
	reqs []request
}

func newFake(t *testing.T, answers map[string][]string) *fake {
	t.Helper()
	f := &fake{t: t, ans: map[string][]recorded{}}
	for path, names := range answers {
		for _, n := range names {
			f.ans[path] = append(f.ans[path], load(t, n))
		}
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body any
	if err := json.Unmarshal(b, &body); err != nil {
		f.t.Errorf("%s: request body %q is not JSON: %v", r.URL.Path, b, err)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, request{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Grpc-Metadata-Hasleader"), body})
	list := f.ans[r.URL.Path]
	if len(list) == 0 {
		f.mu.Unlock()
		http.Error(w, "no recording for "+r.URL.Path, http.StatusNotImplemented)
		return
	}
	a := list[0]
	if len(list) > 1 {
		f.ans[r.URL.Path] = list[1:]
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	w.Write(a.body)
}

func (f *fake) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

func (f *fake) client(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.Endpoints = append(cfg.Endpoints, f.srv.URL)
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sameJSON compares a request body with the JSON it should be.
func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s sent %s\nwant %s", what, g, want)
	}
}

const lease = int64(5007618115420171014)

func TestRange(t *testing.T) {
	f := newFake(t, map[string][]string{"/v3/kv/range": {"range_prefix", "range_count_only", "range_missing", "range_max_create"}})
	c := f.client(t, Config{})
	ctx := context.Background()
	r, err := c.Range(ctx, RangeRequest{Key: []byte("/dbpilot/"), RangeEnd: PrefixEnd("/dbpilot/")})
	if err != nil {
		t.Fatal(err)
	}
	want := []KeyValue{
		{Key: []byte("/dbpilot/members/a"), CreateRevision: 2, ModRevision: 3, Version: 2, Value: []byte("v2"), Lease: lease},
		{Key: []byte("/dbpilot/members/b"), CreateRevision: 4, ModRevision: 4, Version: 1, Value: []byte("vb")},
	}
	if len(r.Kvs) != 2 || !reflect.DeepEqual(*r.Kvs[0], want[0]) || !reflect.DeepEqual(*r.Kvs[1], want[1]) {
		t.Errorf("kvs = %+v", r.Kvs)
	}
	if r.Count != 2 || r.Header.Revision != 4 || r.Header.RaftTerm != 2 || r.Header.ClusterID != 7801232528081817440 {
		t.Errorf("count %d, header %+v", r.Count, r.Header)
	}
	r, err = c.Range(ctx, RangeRequest{Key: []byte("/dbpilot/"), RangeEnd: PrefixEnd("/dbpilot/"), CountOnly: true})
	if err != nil || r.Count != 2 || len(r.Kvs) != 0 {
		t.Errorf("count only: %+v, %v", r, err)
	}
	kv, hdr, err := c.Get(ctx, "/nothing")
	if err != nil || kv != nil || hdr.Revision != 4 {
		t.Errorf("missing key: %+v %+v %v", kv, hdr, err)
	}
	r, err = c.Range(ctx, RangeRequest{Key: []byte("/dbpilot/members/"), RangeEnd: PrefixEnd("/dbpilot/members/"),
		MaxCreateRevision: 2, SortOrder: SortDescend, SortTarget: SortByCreate, Limit: 1})
	if err != nil || len(r.Kvs) != 1 || r.Kvs[0].CreateRevision != 2 {
		t.Errorf("max create: %+v, %v", r, err)
	}
	reqs := f.requests()
	// Keys base64, int64 as strings, enums by name: what record.sh sent.
	sameJSON(t, "range", reqs[0].body, `{"key":"L2RicGlsb3Qv","range_end":"L2RicGlsb3Qw"}`)
	sameJSON(t, "count only", reqs[1].body, `{"key":"L2RicGlsb3Qv","range_end":"L2RicGlsb3Qw","count_only":true}`)
	sameJSON(t, "max create", reqs[3].body, `{"key":"L2RicGlsb3QvbWVtYmVycy8=","range_end":"L2RicGlsb3QvbWVtYmVyczA=",
		"max_create_revision":"2","sort_order":"DESCEND","sort_target":"CREATE","limit":"1"}`)
	if reqs[0].hasLeader != "" || reqs[0].auth != "" {
		t.Errorf("range headers: %+v", reqs[0])
	}
}

func TestPutDelete(t *testing.T) {
	f := newFake(t, map[string][]string{"/v3/kv/put": {"put_prev_kv"}, "/v3/kv/deleterange": {"deleterange_prev_kv"}})
	c := f.client(t, Config{})
	ctx := context.Background()
	p, err := c.Put(ctx, PutRequest{Key: []byte("/dbpilot/members/a"), Value: []byte("v2"), Lease: lease, PrevKV: true})
	if err != nil || p.PrevKV == nil || string(p.PrevKV.Value) != "v1" || p.PrevKV.ModRevision != 2 || p.Header.Revision != 3 {
		t.Errorf("put: %+v, %v", p, err)
	}
	d, err := c.DeleteRange(ctx, DeleteRangeRequest{Key: []byte("/dbpilot/members/b"), PrevKV: true})
	if err != nil || d.Deleted != 1 || len(d.PrevKVs) != 1 || string(d.PrevKVs[0].Key) != "/dbpilot/members/b" {
		t.Errorf("delete: %+v, %v", d, err)
	}
	reqs := f.requests()
	sameJSON(t, "put", reqs[0].body, `{"key":"L2RicGlsb3QvbWVtYmVycy9h","value":"djI=","lease":"5007618115420171014","prev_kv":true}`)
	sameJSON(t, "delete", reqs[1].body, `{"key":"L2RicGlsb3QvbWVtYmVycy9i","prev_kv":true}`)
}

func TestTxn(t *testing.T) {
	f := newFake(t, map[string][]string{"/v3/kv/txn": {"txn_put", "txn_else_get", "txn_nested", "txn_compare_only"}})
	c := f.client(t, Config{})
	ctx := context.Background()
	key := "/dbpilot/clusters/c/leader/1"
	campaign := TxnRequest{
		Compare: []Compare{CompareCreate(key, Equal, 0)},
		Success: []RequestOp{OpPut(key, "a", lease)},
		Failure: []RequestOp{OpGet(key)},
	}
	r, err := c.Txn(ctx, campaign)
	if err != nil || !r.Succeeded || len(r.Responses) != 1 || r.Responses[0].Put == nil || r.Header.Revision != 5 {
		t.Errorf("txn put: %+v, %v", r, err)
	}
	r, err = c.Txn(ctx, campaign)
	if err != nil || r.Succeeded || len(r.Responses) != 1 || r.Responses[0].Range == nil ||
		len(r.Responses[0].Range.Kvs) != 1 || r.Responses[0].Range.Kvs[0].CreateRevision != 5 || string(r.Responses[0].Range.Kvs[0].Value) != "a" {
		t.Errorf("txn else get: %+v, %v", r, err)
	}
	k := "/dbpilot/members/a"
	r, err = c.Txn(ctx, TxnRequest{
		Compare: []Compare{CompareCreate(k, Equal, 0)},
		Success: []RequestOp{OpPut(k, "v2", 0)},
		Failure: []RequestOp{OpTxn([]Compare{CompareValue(k, Equal, "v2")}, []RequestOp{OpPut(k, "v2", lease)}, nil)},
	})
	if err != nil || r.Succeeded || len(r.Responses) != 1 || r.Responses[0].Txn == nil || !r.Responses[0].Txn.Succeeded {
		t.Errorf("nested txn: %+v, %v", r, err)
	}
	r, err = c.Txn(ctx, TxnRequest{Compare: []Compare{CompareCreate(key, Equal, 999)}})
	if err != nil || r.Succeeded || len(r.Responses) != 0 {
		t.Errorf("compare only: %+v, %v", r, err)
	}
	reqs := f.requests()
	e := "L2RicGlsb3QvY2x1c3RlcnMvYy9sZWFkZXIvMQ=="
	// A compare on create revision 0 says so: the oneof is sent even at 0.
	sameJSON(t, "campaign", reqs[0].body, `{"compare":[{"key":"`+e+`","target":"CREATE","result":"EQUAL","create_revision":"0"}],
		"success":[{"request_put":{"key":"`+e+`","value":"YQ==","lease":"5007618115420171014"}}],"failure":[{"request_range":{"key":"`+e+`"}}]}`)
	sameJSON(t, "nested", reqs[2].body, `{"compare":[{"key":"L2RicGlsb3QvbWVtYmVycy9h","target":"CREATE","result":"EQUAL","create_revision":"0"}],
		"success":[{"request_put":{"key":"L2RicGlsb3QvbWVtYmVycy9h","value":"djI="}}],
		"failure":[{"request_txn":{"compare":[{"key":"L2RicGlsb3QvbWVtYmVycy9h","target":"VALUE","result":"EQUAL","value":"djI="}],
		"success":[{"request_put":{"key":"L2RicGlsb3QvbWVtYmVycy9h","value":"djI=","lease":"5007618115420171014"}}]}}]}`)
	b, _ := json.Marshal(CompareMod("k", Equal, 7))
	var mod any
	json.Unmarshal(b, &mod)
	sameJSON(t, "compare mod", mod, `{"key":"aw==","target":"MOD","result":"EQUAL","mod_revision":"7"}`)
}

func TestLease(t *testing.T) {
	f := newFake(t, map[string][]string{
		"/v3/lease/grant":     {"lease_grant"},
		"/v3/lease/keepalive": {"lease_keepalive", "lease_keepalive_gone", "lease_keepalive_no_leader"},
		"/v3/lease/revoke":    {"lease_revoke", "lease_revoke_not_found"},
	})
	c := f.client(t, Config{})
	ctx := context.Background()
	id, ttl, err := c.LeaseGrant(ctx, 5)
	if err != nil || id != lease || ttl != 5 {
		t.Errorf("grant: %d %d %v", id, ttl, err)
	}
	if ttl, err := c.LeaseKeepAlive(ctx, id); err != nil || ttl != 5 {
		t.Errorf("keepalive: %d %v", ttl, err)
	}
	// A revoked lease's keepalive is answered without a TTL.
	if ttl, err := c.LeaseKeepAlive(ctx, id); err != nil || ttl != 0 {
		t.Errorf("keepalive of a revoked lease: %d %v", ttl, err)
	}
	if _, err := c.LeaseKeepAlive(ctx, id); !IsNoLeader(err) || IsAuth(err) {
		t.Errorf("keepalive without a leader: %v", err)
	} else if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 14 || e.Message != "etcdserver: no leader" {
		t.Errorf("keepalive without a leader: %#v", err)
	}
	if err := c.LeaseRevoke(ctx, id); err != nil {
		t.Errorf("revoke: %v", err)
	}
	err = c.LeaseRevoke(ctx, id)
	if e := (*Error)(nil); !IsLeaseNotFound(err) || !errors.As(err, &e) || e.Code != 5 {
		t.Errorf("revoke of a revoked lease: %#v", err)
	}
	reqs := f.requests()
	sameJSON(t, "grant", reqs[0].body, `{"TTL":"5"}`)
	sameJSON(t, "keepalive", reqs[1].body, `{"ID":"5007618115420171014"}`)
	if reqs[1].hasLeader != "true" {
		t.Errorf("keepalive without Grpc-Metadata-Hasleader: %+v", reqs[1])
	}
}

func TestWatch(t *testing.T) {
	f := newFake(t, map[string][]string{"/v3/watch": {"watch_prefix", "watch_compacted", "watch_no_leader"}})
	c := f.client(t, Config{})
	ctx := context.Background()
	w, err := c.Watch(ctx, WatchRequest{Key: []byte("/dbpilot/"), RangeEnd: PrefixEnd("/dbpilot/"), StartRevision: 2, PrevKV: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range r.Events {
		s := "PUT "
		if ev.IsDelete() {
			s = "DELETE "
		}
		s += string(ev.Kv.Key) + " " + string(ev.Kv.Value)
		if ev.PrevKv != nil {
			s += " prev " + string(ev.PrevKv.Value)
		}
		got = append(got, s)
	}
	want := []string{
		"PUT /dbpilot/members/a v1",
		"PUT /dbpilot/members/a v2 prev v1",
		"PUT /dbpilot/members/b vb",
		"PUT /dbpilot/clusters/c/leader/1 a",
		"PUT /dbpilot/members/a v2 prev v2",
		"DELETE /dbpilot/members/b  prev vb",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := r.Events[5]; d.Kv.ModRevision != 7 || d.PrevKv.CreateRevision != 4 {
		t.Errorf("delete event revisions: %+v %+v", d.Kv, d.PrevKv)
	}
	// The recording ends where curl cut the stream.
	if _, err := w.Next(); err == nil {
		t.Error("no error at the end of the stream")
	}
	w.Close()

	w, err = c.Watch(ctx, WatchRequest{Key: []byte("/dbpilot/"), RangeEnd: PrefixEnd("/dbpilot/"), StartRevision: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Next()
	var ce *CanceledError
	if !errors.As(err, &ce) || ce.CompactRevision != 8 {
		t.Errorf("watch from a compacted revision: %v", err)
	}
	w.Close()

	if _, err := c.Watch(ctx, WatchRequest{Key: []byte("k")}); !IsNoLeader(err) {
		t.Errorf("watch without a leader: %v", err)
	}
	reqs := f.requests()
	sameJSON(t, "watch", reqs[0].body, `{"create_request":{"key":"L2RicGlsb3Qv","range_end":"L2RicGlsb3Qw","start_revision":"2","prev_kv":true}}`)
	for _, r := range reqs {
		if r.hasLeader != "true" {
			t.Errorf("watch without Grpc-Metadata-Hasleader: %+v", r)
		}
	}
}

func TestAuth(t *testing.T) {
	ctx := context.Background()
	t.Run("token", func(t *testing.T) {
		f := newFake(t, map[string][]string{"/v3/auth/authenticate": {"auth_token"}, "/v3/kv/range": {"range_missing"}})
		c := f.client(t, Config{Username: "root", Password: "rootpw"})
		if _, _, err := c.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		reqs := f.requests()
		if len(reqs) != 2 || reqs[0].path != "/v3/auth/authenticate" || reqs[1].auth != "rOPqCxnbLwmRMUCw.21" {
			t.Fatalf("requests: %+v", reqs)
		}
		sameJSON(t, "authenticate", reqs[0].body, `{"name":"root","password":"rootpw"}`)
	})
	t.Run("wrong password", func(t *testing.T) {
		f := newFake(t, map[string][]string{"/v3/auth/authenticate": {"auth_failed"}})
		c := f.client(t, Config{Username: "root", Password: "wrong"})
		err := c.Authenticate(ctx)
		var e *Error
		if !IsAuth(err) || !errors.As(err, &e) || e.Desc() != "authentication failed, invalid user ID or password" || e.Endpoint != f.srv.URL {
			t.Fatalf("wrong password: %#v", err)
		}
		if strings.Contains(err.Error(), "wrong") {
			t.Errorf("the password is in the error: %v", err)
		}
	})
	t.Run("not enabled", func(t *testing.T) {
		f := newFake(t, map[string][]string{"/v3/auth/authenticate": {"auth_not_enabled"}, "/v3/kv/range": {"range_missing"}})
		c := f.client(t, Config{Username: "root", Password: "rootpw"})
		if err := c.Authenticate(ctx); err != nil {
			t.Fatalf("authentication not enabled: %v", err)
		}
		if _, _, err := c.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		reqs := f.requests()
		if len(reqs) != 2 || reqs[1].auth != "" {
			t.Errorf("requests: %+v", reqs)
		}
	})
	t.Run("expired token renewed once", func(t *testing.T) {
		f := newFake(t, map[string][]string{
			"/v3/auth/authenticate": {"auth_token"},
			"/v3/kv/range":          {"range_missing", "auth_invalid_token", "range_missing"},
		})
		c := f.client(t, Config{Username: "root", Password: "rootpw"})
		for range 2 {
			if _, _, err := c.Get(ctx, "k"); err != nil {
				t.Fatal(err)
			}
		}
		var paths []string
		for _, r := range f.requests() {
			paths = append(paths, r.path)
		}
		want := []string{"/v3/auth/authenticate", "/v3/kv/range", "/v3/kv/range", "/v3/auth/authenticate", "/v3/kv/range"}
		if !reflect.DeepEqual(paths, want) {
			t.Errorf("requests %v, want %v", paths, want)
		}
	})
	t.Run("refused twice", func(t *testing.T) {
		f := newFake(t, map[string][]string{"/v3/auth/authenticate": {"auth_token"}, "/v3/kv/range": {"auth_invalid_token"}})
		c := f.client(t, Config{Username: "root", Password: "rootpw"})
		if _, _, err := c.Get(ctx, "k"); !IsAuth(err) {
			t.Fatalf("token refused after renewal: %v", err)
		}
		if n := len(f.requests()); n != 4 { // authenticate, range, authenticate, range
			t.Errorf("%d requests, want 4 (one renewal)", n)
		}
	})
	for _, name := range []string{"auth_user_empty", "auth_permission_denied", "auth_invalid_token"} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, map[string][]string{"/v3/kv/range": {name}})
			c := f.client(t, Config{})
			if _, _, err := c.Get(ctx, "k"); !IsAuth(err) || IsNoLeader(err) {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	t.Run("watch permission denied", func(t *testing.T) {
		f := newFake(t, map[string][]string{"/v3/watch": {"watch_permission_denied"}})
		c := f.client(t, Config{})
		if _, err := c.Watch(ctx, WatchRequest{Key: []byte("k")}); !IsAuth(err) {
			t.Errorf("watch refused: %v", err)
		}
	})
}

// TestEndpoints: an endpoint that refuses connections is passed over, and
// the one that answered is kept.
func TestEndpoints(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	f := newFake(t, map[string][]string{"/v3/kv/range": {"range_missing"}})
	c := f.client(t, Config{Endpoints: []string{dead}, DialTimeout: time.Second})
	for range 2 {
		if _, _, err := c.Get(context.Background(), "k"); err != nil {
			t.Fatalf("with a dead first endpoint: %v", err)
		}
	}
	if got := c.endpoint(); got != f.srv.URL {
		t.Errorf("endpoint in use %s, want %s", got, f.srv.URL)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests reached the live endpoint, want 2", n)
	}

	only, err := New(Config{Endpoints: []string{strings.TrimPrefix(dead, "http://")}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = only.Get(context.Background(), "k")
	if !dialError(err) || !strings.Contains(err.Error(), l.Addr().String()) || IsAuth(err) {
		t.Errorf("unreachable: %v", err)
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"/dbpilot/": "/dbpilot0", "a\xff": "b", "\xff\xff": "\x00"} {
		if got := string(PrefixEnd(in)); got != want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}
