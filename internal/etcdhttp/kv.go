package etcdhttp

import (
	"context"
	"encoding/json"
	"strconv"
)

// The messages below are etcd's etcdserverpb/mvccpb messages as the
// gateway writes them: field names as in the .proto files, int64 as
// strings (the ",string" option), bytes as base64 ([]byte).

// ResponseHeader heads every answer.
type ResponseHeader struct {
	ClusterID uint64 `json:"cluster_id,string"`
	MemberID  uint64 `json:"member_id,string"`
	Revision  int64  `json:"revision,string"`
	RaftTerm  uint64 `json:"raft_term,string"`
}

// KeyValue is a key with its revisions.
type KeyValue struct {
	Key            []byte `json:"key"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
	Version        int64  `json:"version,string"`
	Value          []byte `json:"value"`
	Lease          int64  `json:"lease,string"`
}

// Sort orders and targets of a range.
const (
	SortAscend  = "ASCEND"
	SortDescend = "DESCEND"

	SortByKey    = "KEY"
	SortByCreate = "CREATE"
	SortByMod    = "MOD"
)

// RangeRequest reads a key or a range [Key, RangeEnd).
type RangeRequest struct {
	Key               []byte `json:"key"`
	RangeEnd          []byte `json:"range_end,omitempty"`
	Limit             int64  `json:"limit,omitempty,string"`
	Revision          int64  `json:"revision,omitempty,string"`
	SortOrder         string `json:"sort_order,omitempty"`
	SortTarget        string `json:"sort_target,omitempty"`
	Serializable      bool   `json:"serializable,omitempty"`
	KeysOnly          bool   `json:"keys_only,omitempty"`
	CountOnly         bool   `json:"count_only,omitempty"`
	MaxCreateRevision int64  `json:"max_create_revision,omitempty,string"`
}

// RangeResponse is a range's answer.
type RangeResponse struct {
	Header ResponseHeader `json:"header"`
	Kvs    []*KeyValue    `json:"kvs"`
	More   bool           `json:"more"`
	Count  int64          `json:"count,string"`
}

// PutRequest writes a key, on a lease when Lease is set.
type PutRequest struct {
	Key    []byte `json:"key"`
	Value  []byte `json:"value"`
	Lease  int64  `json:"lease,omitempty,string"`
	PrevKV bool   `json:"prev_kv,omitempty"`
}

// PutResponse is a put's answer.
type PutResponse struct {
	Header ResponseHeader `json:"header"`
	PrevKV *KeyValue      `json:"prev_kv"`
}

// DeleteRangeRequest deletes a key or a range.
type DeleteRangeRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
	PrevKV   bool   `json:"prev_kv,omitempty"`
}

// DeleteRangeResponse is a delete's answer.
type DeleteRangeResponse struct {
	Header  ResponseHeader `json:"header"`
	Deleted int64          `json:"deleted,string"`
	PrevKVs []*KeyValue    `json:"prev_kvs"`
}

// Compare results and targets.
const (
	Equal    = "EQUAL"
	Greater  = "GREATER"
	Less     = "LESS"
	NotEqual = "NOT_EQUAL"

	TargetVersion = "VERSION"
	TargetCreate  = "CREATE"
	TargetMod     = "MOD"
	TargetValue   = "VALUE"
)

// Compare is one condition of a transaction: Target of Key compared
// (Result) with the field of the same target.
type Compare struct {
	Result         string
	Target         string
	Key            []byte
	Version        int64
	CreateRevision int64
	ModRevision    int64
	Value          []byte
}

// MarshalJSON writes the one field of the compare's target (the proto's
// target_union oneof), even when it is zero.
func (c Compare) MarshalJSON() ([]byte, error) {
	m := map[string]any{"result": c.Result, "target": c.Target, "key": c.Key}
	switch c.Target {
	case TargetVersion:
		m["version"] = itoa(c.Version)
	case TargetCreate:
		m["create_revision"] = itoa(c.CreateRevision)
	case TargetMod:
		m["mod_revision"] = itoa(c.ModRevision)
	case TargetValue:
		m["value"] = c.Value
		if c.Value == nil {
			m["value"] = []byte{}
		}
	}
	return json.Marshal(m)
}

// CompareCreate compares key's create revision (0: the key does not exist).
func CompareCreate(key, result string, rev int64) Compare {
	return Compare{Result: result, Target: TargetCreate, Key: []byte(key), CreateRevision: rev}
}

// CompareMod compares key's last modification revision.
func CompareMod(key, result string, rev int64) Compare {
	return Compare{Result: result, Target: TargetMod, Key: []byte(key), ModRevision: rev}
}

// CompareValue compares key's value.
func CompareValue(key, result, value string) Compare {
	return Compare{Result: result, Target: TargetValue, Key: []byte(key), Value: []byte(value)}
}

// RequestOp is one operation of a transaction: exactly one field is set.
type RequestOp struct {
	Range       *RangeRequest       `json:"request_range,omitempty"`
	Put         *PutRequest         `json:"request_put,omitempty"`
	DeleteRange *DeleteRangeRequest `json:"request_delete_range,omitempty"`
	Txn         *TxnRequest         `json:"request_txn,omitempty"`
}

// OpGet reads key.
func OpGet(key string) RequestOp { return RequestOp{Range: &RangeRequest{Key: []byte(key)}} }

// OpPut writes key=value, on lease when it is not 0.
func OpPut(key, value string, lease int64) RequestOp {
	return RequestOp{Put: &PutRequest{Key: []byte(key), Value: []byte(value), Lease: lease}}
}

// OpDelete deletes key.
func OpDelete(key string) RequestOp {
	return RequestOp{DeleteRange: &DeleteRangeRequest{Key: []byte(key)}}
}

// OpTxn nests a transaction.
func OpTxn(cmp []Compare, success, failure []RequestOp) RequestOp {
	return RequestOp{Txn: &TxnRequest{Compare: cmp, Success: success, Failure: failure}}
}

// ResponseOp is the answer to one RequestOp.
type ResponseOp struct {
	Range       *RangeResponse       `json:"response_range"`
	Put         *PutResponse         `json:"response_put"`
	DeleteRange *DeleteRangeResponse `json:"response_delete_range"`
	Txn         *TxnResponse         `json:"response_txn"`
}

// TxnRequest is "if every compare holds then success else failure".
type TxnRequest struct {
	Compare []Compare   `json:"compare,omitempty"`
	Success []RequestOp `json:"success,omitempty"`
	Failure []RequestOp `json:"failure,omitempty"`
}

// TxnResponse is a transaction's answer.
type TxnResponse struct {
	Header    ResponseHeader `json:"header"`
	Succeeded bool           `json:"succeeded"`
	Responses []ResponseOp   `json:"responses"`
}

// PrefixEnd is the end of the range of keys starting with prefix.
func PrefixEnd(prefix string) []byte {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key from prefix on
}

// Range reads keys.
func (c *Client) Range(ctx context.Context, r RangeRequest) (*RangeResponse, error) {
	var out RangeResponse
	if err := c.Do(ctx, "/v3/kv/range", r, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get reads one key (nil when it does not exist).
func (c *Client) Get(ctx context.Context, key string) (*KeyValue, *ResponseHeader, error) {
	r, err := c.Range(ctx, RangeRequest{Key: []byte(key)})
	if err != nil {
		return nil, nil, err
	}
	if len(r.Kvs) == 0 {
		return nil, &r.Header, nil
	}
	return r.Kvs[0], &r.Header, nil
}

// Put writes a key.
func (c *Client) Put(ctx context.Context, r PutRequest) (*PutResponse, error) {
	var out PutResponse
	if err := c.Do(ctx, "/v3/kv/put", r, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteRange deletes keys.
func (c *Client) DeleteRange(ctx context.Context, r DeleteRangeRequest) (*DeleteRangeResponse, error) {
	var out DeleteRangeResponse
	if err := c.Do(ctx, "/v3/kv/deleterange", r, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}

// Txn runs a transaction.
func (c *Client) Txn(ctx context.Context, r TxnRequest) (*TxnResponse, error) {
	var out TxnResponse
	if err := c.Do(ctx, "/v3/kv/txn", r, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}

// LeaseGrant grants a lease of ttl seconds; it returns its ID and TTL.
func (c *Client) LeaseGrant(ctx context.Context, ttl int64) (id, granted int64, err error) {
	in := struct {
		TTL int64 `json:"TTL,string"`
	}{ttl}
	var out struct {
		Header ResponseHeader `json:"header"`
		ID     int64          `json:"ID,string"`
		TTL    int64          `json:"TTL,string"`
		Error  string         `json:"error"`
	}
	if err := c.Do(ctx, "/v3/lease/grant", in, &out, false); err != nil {
		return 0, 0, err
	}
	if out.Error != "" {
		return 0, 0, &Error{Endpoint: c.endpoint(), Code: 2, Message: out.Error}
	}
	return out.ID, out.TTL, nil
}

// LeaseRevoke revokes a lease: its keys are deleted at once.
func (c *Client) LeaseRevoke(ctx context.Context, id int64) error {
	in := struct {
		ID int64 `json:"ID,string"`
	}{id}
	return c.Do(ctx, "/v3/lease/revoke", in, nil, false)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
