#!/usr/bin/env bash
# Records etcd's v3 HTTP/JSON gateway answers into this directory, with
# curl against a real etcd (Debian's etcd-server 3.4.23 for the files
# checked in): NAME.json is the body, NAME.status the HTTP status. The
# unit tests of package etcdhttp replay them.
#
#   bash internal/etcdhttp/testdata/record.sh [BASE_PORT]   # default 23790
set -euo pipefail
cd "$(dirname "$0")"
base=${1:-23790}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

# start NAME CLIENT_PORT PEER_PORT CLUSTER
start() {
	etcd --name "$1" --data-dir "$tmp/$1" --listen-client-urls "http://127.0.0.1:$2" \
		--advertise-client-urls "http://127.0.0.1:$2" --listen-peer-urls "http://127.0.0.1:$3" \
		--initial-advertise-peer-urls "http://127.0.0.1:$3" --initial-cluster "$4" \
		--heartbeat-interval 50 --election-timeout 500 >"$tmp/$1.log" 2>&1 &
	pids+=($!)
}
b() { printf %s "$1" | base64 -w0; }
E=http://127.0.0.1:$((base + 1))
# rec NAME PATH BODY [curl args...]: one unary call
rec() {
	local name=$1 path=$2 body=$3
	shift 3
	curl -s -o "$name.json" -w '%{http_code}' "$@" "$E$path" -d "$body" >"$name.status"
	echo "$name: $(cat "$name.status") $(head -c 160 "$name.json")"
}
# recstream NAME PATH BODY SECONDS [curl args...]: a stream, cut after SECONDS
recstream() {
	local name=$1 path=$2 body=$3 secs=$4
	shift 4
	curl -sN -o "$name.json" -w '%{http_code}' --max-time "$secs" "$@" "$E$path" -d "$body" >"$name.status" || true
	echo "$name: $(cat "$name.status") $(head -c 160 "$name.json")"
}

start r0 $((base + 1)) $((base + 2)) "r0=http://127.0.0.1:$((base + 2))"
for _ in $(seq 50); do curl -s "$E/health" | grep -q true && break; sleep 0.2; done

k=$(b /dbpilot/members/a)
rec lease_grant /v3/lease/grant '{"TTL":"5"}'
lease=$(sed 's/.*"ID":"\([0-9]*\)".*/\1/' lease_grant.json)
rec put /v3/kv/put "{\"key\":\"$k\",\"value\":\"$(b v1)\",\"lease\":\"$lease\"}"
rec put_prev_kv /v3/kv/put "{\"key\":\"$k\",\"value\":\"$(b v2)\",\"lease\":\"$lease\",\"prev_kv\":true}"
rec put_b /v3/kv/put "{\"key\":\"$(b /dbpilot/members/b)\",\"value\":\"$(b vb)\"}"
rec range_prefix /v3/kv/range "{\"key\":\"$(b /dbpilot/)\",\"range_end\":\"$(b /dbpilot0)\"}"
rec range_count_only /v3/kv/range "{\"key\":\"$(b /dbpilot/)\",\"range_end\":\"$(b /dbpilot0)\",\"count_only\":true}"
rec range_missing /v3/kv/range "{\"key\":\"$(b /nothing)\"}"
rec range_first_create /v3/kv/range "{\"key\":\"$(b /dbpilot/members/)\",\"range_end\":\"$(b /dbpilot/members0)\",\"sort_order\":\"ASCEND\",\"sort_target\":\"CREATE\",\"limit\":\"1\"}"
rec range_max_create /v3/kv/range "{\"key\":\"$(b /dbpilot/members/)\",\"range_end\":\"$(b /dbpilot/members0)\",\"max_create_revision\":\"2\",\"sort_order\":\"DESCEND\",\"sort_target\":\"CREATE\",\"limit\":\"1\"}"
e=$(b /dbpilot/clusters/c/leader/1)
txn='{"compare":[{"key":"'$e'","target":"CREATE","result":"EQUAL","create_revision":"0"}],"success":[{"request_put":{"key":"'$e'","value":"'$(b a)'","lease":"'$lease'"}}],"failure":[{"request_range":{"key":"'$e'"}}]}'
rec txn_put "/v3/kv/txn" "$txn"
rec txn_else_get "/v3/kv/txn" "$txn"
rec txn_nested /v3/kv/txn '{"compare":[{"key":"'$k'","target":"CREATE","result":"EQUAL","create_revision":"0"}],"success":[{"request_put":{"key":"'$k'","value":"'$(b v2)'"}}],"failure":[{"request_txn":{"compare":[{"key":"'$k'","target":"VALUE","result":"EQUAL","value":"'$(b v2)'"}],"success":[{"request_put":{"key":"'$k'","value":"'$(b v2)'","lease":"'$lease'"}}]}}]}'
rec txn_compare_only /v3/kv/txn '{"compare":[{"key":"'$e'","target":"CREATE","result":"EQUAL","create_revision":"999"}]}'
rec deleterange_prev_kv /v3/kv/deleterange "{\"key\":\"$(b /dbpilot/members/b)\",\"prev_kv\":true}"
recstream lease_keepalive /v3/lease/keepalive "{\"ID\":\"$lease\"}" 2 -H 'Grpc-Metadata-Hasleader: true'
# A watch of the prefix from revision 2 (every write so far, with the
# delete of members/b), cut after 2 s.
recstream watch_prefix /v3/watch "{\"create_request\":{\"key\":\"$(b /dbpilot/)\",\"range_end\":\"$(b /dbpilot0)\",\"start_revision\":\"2\",\"prev_kv\":true}}" 2 -H 'Grpc-Metadata-Hasleader: true'
rec lease_revoke /v3/lease/revoke "{\"ID\":\"$lease\"}"
rec lease_revoke_not_found /v3/lease/revoke "{\"ID\":\"$lease\"}"
recstream lease_keepalive_gone /v3/lease/keepalive "{\"ID\":\"$lease\"}" 2
rev=$(sed 's/.*"revision":"\([0-9]*\)".*/\1/' lease_revoke.json)
rec compaction /v3/kv/compaction "{\"revision\":\"$rev\"}"
recstream watch_compacted /v3/watch "{\"create_request\":{\"key\":\"$(b /dbpilot/)\",\"range_end\":\"$(b /dbpilot0)\",\"start_revision\":\"2\"}}" 2
rec auth_not_enabled /v3/auth/authenticate '{"name":"root","password":"rootpw"}'

# Authentication: root, and user "nobody" without a role.
rec auth_user_add /v3/auth/user/add '{"name":"root","password":"rootpw"}'
rec auth_user_grant /v3/auth/user/grant '{"user":"root","role":"root"}'
rec auth_user_add_nobody /v3/auth/user/add '{"name":"nobody","password":"pw"}'
rec auth_enable /v3/auth/enable '{}'
rec auth_failed /v3/auth/authenticate '{"name":"root","password":"wrong"}'
rec auth_token /v3/auth/authenticate '{"name":"root","password":"rootpw"}'
rec auth_user_empty /v3/kv/range "{\"key\":\"$k\"}"
rec auth_invalid_token /v3/kv/range "{\"key\":\"$k\"}" -H 'Authorization: notatoken.1'
curl -s "$E/v3/auth/authenticate" -d '{"name":"nobody","password":"pw"}' >"$tmp/nobody.json"
tok=$(sed 's/.*"token":"\([^"]*\)".*/\1/' "$tmp/nobody.json")
rec auth_permission_denied /v3/kv/range "{\"key\":\"$k\"}" -H "Authorization: $tok"
recstream watch_permission_denied /v3/watch "{\"create_request\":{\"key\":\"$k\"}}" 2 -H "Authorization: $tok"

# No leader: a 2-member cluster with one member killed.
E=http://127.0.0.1:$((base + 3))
cl="n0=http://127.0.0.1:$((base + 4)),n1=http://127.0.0.1:$((base + 6))"
start n0 $((base + 3)) $((base + 4)) "$cl"
start n1 $((base + 5)) $((base + 6)) "$cl"
for _ in $(seq 50); do curl -s "$E/health" | grep -q true && break; sleep 0.2; done
kill -9 "${pids[-1]}"
sleep 2
recstream watch_no_leader /v3/watch "{\"create_request\":{\"key\":\"$k\"}}" 3 -H 'Grpc-Metadata-Hasleader: true'
recstream lease_keepalive_no_leader /v3/lease/keepalive '{"ID":"1"}' 3 -H 'Grpc-Metadata-Hasleader: true'
etcd --version | head -1 >etcd-version.txt
