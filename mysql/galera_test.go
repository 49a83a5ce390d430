package mysql

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// galeraRecorded answers an inspection of a Galera node from one directory
// of testdata/galera-10.11 (see testdata/README.md): the status read is
// status.txt and the wsrep status together, the wsrep variables read is
// wsrep_variables.txt (SHOW GLOBAL VARIABLES LIKE 'wsrep%', of which the
// inspection uses some), the rest as recorded answers it.
type galeraRecorded struct{ recorded }

func (r *galeraRecorded) Query(ctx context.Context, q string, args ...any) (*Rows, error) {
	switch {
	case strings.HasPrefix(q, "SHOW GLOBAL STATUS WHERE"):
		r.queries = append(r.queries, q)
		var rows []verticalRow
		for _, f := range []string{"status.txt", "wsrep_status.txt"} {
			b, err := os.ReadFile(filepath.Join("testdata", r.dir, f))
			if err != nil {
				return nil, err
			}
			rows = append(rows, parseVertical(string(b))...)
		}
		return toRows(rows), nil
	case q == galeraVariablesSQL:
		r.queries = append(r.queries, q)
		b, err := os.ReadFile(filepath.Join("testdata", r.dir, "wsrep_variables.txt"))
		if err != nil {
			return nil, err
		}
		return toRows(parseVertical(string(b))), nil
	}
	return r.recorded.Query(ctx, q, args...)
}

// inspectGalera inspects one recorded server, stamped with the time it was
// recorded.
func inspectGalera(t *testing.T, dir string) *dbpilot.Instance {
	t.Helper()
	port, err := strconv.Atoi(filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	s := session{q: &galeraRecorded{recorded{dir: dir}}, key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: port}, user: "root"}
	inst, _, err := s.inspect(context.Background(), nil)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(readTestdata(t, dir+"/observed_at.txt")))
	if err != nil {
		t.Fatal(err)
	}
	inst.ReadStartedAt, inst.ObservedAt = time.Time{}, at // the recording's time, not the test's
	return inst
}

func TestInspectGaleraRecorded(t *testing.T) {
	inst := inspectGalera(t, "galera-10.11/synced/27301")
	g := inst.Galera
	if g == nil {
		t.Fatal("no Galera state")
	}
	want := &dbpilot.GaleraState{
		LocalState: dbpilot.GaleraSynced, LocalStateComment: "Synced",
		ClusterStatus: "Primary", ClusterSize: 3, ClusterStateUUID: "8c8b273a-e94d-11f1-beca-832d82f54293",
		ClusterConfID: g.ClusterConfID, LocalIndex: g.LocalIndex, Ready: true, Connected: true,
		IncomingAddresses: []dbpilot.InstanceKey{key("127.0.0.1:27301"), key("127.0.0.1:27302"), key("127.0.0.1:27303")},
		LastCommitted:     g.LastCommitted, ProviderName: "Galera", ProviderVersion: g.ProviderVersion,
		GaleraCounters:    dbpilot.GaleraCounters{LocalRecvQueue: 3},
		LocalRecvQueueAvg: g.LocalRecvQueueAvg, LocalSendQueueAvg: g.LocalSendQueueAvg,
		CertDepsDistance: 65.1176,
		ClusterName:      "gal12", ClusterAddress: "gcomm://127.0.0.1:27311,127.0.0.1:27321,127.0.0.1:27331",
		NodeName: "node1", NodeAddress: "127.0.0.1:27311", NodeIncomingAddress: "127.0.0.1:27301",
		SSTMethod: "rsync", FCLimit: 16,
	}
	diff(t, "synced", g, want)
	if g.ProviderVersion == "" || g.LastCommitted == 0 || g.ClusterConfID == 0 {
		t.Errorf("provider version %q, last committed %d, conf id %d", g.ProviderVersion, g.LastCommitted, g.ClusterConfID)
	}
	if got := g.ConfiguredMembers(); !reflect.DeepEqual(got, []string{"127.0.0.1:27311", "127.0.0.1:27321", "127.0.0.1:27331"}) {
		t.Errorf("configured members %q", got)
	}

	// The other states, as the recordings caught them.
	for _, tt := range []struct {
		dir     string
		state   dbpilot.GaleraNodeState
		status  string
		size    int
		desync  bool
		count   int
		ready   bool
		members int
	}{
		{"desynced/27303", dbpilot.GaleraDonor, "Primary", 3, true, 1, true, 3},
		{"desynced-locked/27303", dbpilot.GaleraDonor, "Primary", 3, true, 2, true, 3},
		{"catchup-5/27303", dbpilot.GaleraDonor, "Primary", 3, false, 0, true, 3},
		{"joined/27303", dbpilot.GaleraJoined, "Primary", 3, false, 0, true, 3},
		{"sst-donor/27301", dbpilot.GaleraDonor, "Primary", 3, false, 1, true, 3},
		{"node-missing/27301", dbpilot.GaleraSynced, "Primary", 2, false, 0, true, 2},
		{"non-primary/27301", dbpilot.GaleraInitialized, "non-Primary", 1, false, 0, false, 1},
	} {
		g := inspectGalera(t, "galera-10.11/"+tt.dir).Galera
		if g == nil {
			t.Errorf("%s: no Galera state", tt.dir)
			continue
		}
		if g.LocalState != tt.state || g.ClusterStatus != tt.status || g.ClusterSize != tt.size || g.Desync != tt.desync ||
			g.DesyncCount != tt.count || g.Ready != tt.ready || len(g.IncomingAddresses) != tt.members {
			t.Errorf("%s: state %s, status %s, size %d, desync %t (count %d), ready %t, members %v",
				tt.dir, g.LocalState, g.ClusterStatus, g.ClusterSize, g.Desync, g.DesyncCount, g.Ready, g.IncomingAddresses)
		}
	}

	// A server without Galera (the async replica: MariaDB's placeholders).
	if g := inspectGalera(t, "galera-10.11/synced/27304").Galera; g != nil {
		t.Errorf("async replica has Galera state %+v", g)
	}
	if g := inspectGalera(t, "galera-10.11/synced/27304"); len(g.Channels) != 1 || g.Channels[0].Source != key("127.0.0.1:27301") {
		t.Errorf("async replica channels %+v", g.Channels)
	}
}

func TestParseGaleraLenient(t *testing.T) {
	g := parseGalera(map[string]string{
		"wsrep_provider_name": "Galera", "wsrep_local_state": "x", "wsrep_cluster_size": "",
		"wsrep_incoming_addresses":  "AUTO,10.0.0.1:3306,,0.0.0.0:3306,[::1]:3307,bad host:1,10.0.0.2",
		"wsrep_flow_control_paused": "0.25", "wsrep_flow_control_sent": "-1", "wsrep_cert_deps_distance": "NaN",
	}, map[string]string{"wsrep_desync": "ON", "wsrep_provider_options": "gcs.fc_factor = 1.0; gcs.fc_limit = 64; gcs.fc_master_slave = no"})
	want := []dbpilot.InstanceKey{key("10.0.0.1:3306"), key("[::1]:3307"), key("10.0.0.2:3306")}
	if !reflect.DeepEqual(g.IncomingAddresses, want) {
		t.Errorf("incoming addresses %v, want %v", g.IncomingAddresses, want)
	}
	if g.LocalState != 0 || g.ClusterSize != 0 || g.FlowControlPaused != 0.25 || g.FlowControlSent != 0 || g.CertDepsDistance != 0 || !g.Desync || g.FCLimit != 64 {
		t.Errorf("parsed %+v", g)
	}
	if galeraLoaded(map[string]string{"wsrep_provider_name": "", "wsrep_local_state_uuid": ""}) ||
		galeraLoaded(map[string]string{"wsrep_local_state_uuid": zeroUUID}) || galeraLoaded(nil) {
		t.Error("placeholders taken for a Galera provider")
	}
	if !galeraLoaded(map[string]string{"wsrep_local_state_uuid": "8c8b273a-e94d-11f1-beca-832d82f54293"}) {
		t.Error("a state uuid without a provider name is Galera")
	}
}

func TestGaleraHistory(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	obs := func(at time.Duration, state dbpilot.GaleraNodeState, uptime time.Duration, paused uint64, members ...string) *dbpilot.Instance {
		g := &dbpilot.GaleraState{LocalState: state, ClusterStateUUID: "u", GaleraCounters: dbpilot.GaleraCounters{FlowControlPausedNS: paused}}
		for _, m := range members {
			g.IncomingAddresses = append(g.IncomingAddresses, key(m))
		}
		return &dbpilot.Instance{ObservedAt: t0.Add(at), Uptime: uptime, Galera: g}
	}
	var h *galeraHistory
	i1 := obs(0, dbpilot.GaleraSynced, time.Minute, 100, "a:1", "b:1", "c:1")
	h = h.apply(i1)
	if g := i1.Galera; g.Previous != nil || !g.StateSince.Equal(t0) || g.StateChangeSeen || g.FormerMembers != nil {
		t.Errorf("first: %+v", g)
	}
	i2 := obs(time.Second, dbpilot.GaleraDonor, time.Minute+time.Second, 200, "a:1", "b:1", "c:1")
	h = h.apply(i2)
	if g := i2.Galera; g.Previous == nil || !g.Previous.At.Equal(t0) || g.Previous.FlowControlPausedNS != 100 ||
		!g.StateSince.Equal(t0.Add(time.Second)) || !g.StateChangeSeen {
		t.Errorf("second: %+v", g)
	}
	i3 := obs(3*time.Second, dbpilot.GaleraDonor, time.Minute+3*time.Second, 300, "a:1", "b:1")
	h = h.apply(i3)
	if g := i3.Galera; !g.StateSince.Equal(t0.Add(time.Second)) || !g.StateChangeSeen || !reflect.DeepEqual(g.FormerMembers, []dbpilot.InstanceKey{key("c:1")}) {
		t.Errorf("third: %+v", g)
	}
	// A restart (uptime went back): no previous sample, state since now.
	i4 := obs(4*time.Second, dbpilot.GaleraDonor, time.Second, 0, "a:1", "b:1")
	h = h.apply(i4)
	if g := i4.Galera; g.Previous != nil || !g.StateSince.Equal(t0.Add(4*time.Second)) || g.StateChangeSeen {
		t.Errorf("after a restart: %+v", g)
	}
	// Another cluster (new state uuid): former members forgotten.
	i5 := obs(5*time.Second, dbpilot.GaleraDonor, 2*time.Second, 0, "a:1")
	i5.Galera.ClusterStateUUID = "v"
	h.apply(i5)
	if g := i5.Galera; g.FormerMembers != nil {
		t.Errorf("new cluster: former members %v", g.FormerMembers)
	}
}

// galeraCases are the topology analysis cases built from the recordings
// (../topology/testdata/analyze/<name>/instances.json): each step inspects
// every server recorded at that step in order, keeping each server's Galera
// history between steps as an Inspector does; a case holds every server's
// last observation and, unreachable, the servers in down.
var galeraCases = []struct {
	name  string
	steps []string
	down  []int
}{
	{"galera-synced", []string{"synced", "synced-next"}, nil},
	{"galera-desynced", []string{"synced", "desynced", "desynced-next"}, nil},
	{"galera-desynced-queue", []string{"synced", "desynced", "desynced-locked", "desynced-locked-next"}, nil},
	{"galera-flow-control", []string{"synced", "desynced", "desynced-locked", "catchup-3", "catchup-5"}, nil},
	{"galera-joined", []string{"joined"}, nil},
	{"galera-sst-donor", []string{"sst-donor"}, []int{27303}},
	{"galera-node-missing", []string{"synced", "node-missing"}, []int{27303}},
	{"galera-node-missing-oneshot", []string{"node-missing"}, nil},
	{"galera-non-primary", []string{"synced", "node-missing", "non-primary"}, []int{27302, 27303}},
}

// TestGaleraCases checks (and with -update writes) the topology golden
// inputs recorded from real Galera nodes.
func TestGaleraCases(t *testing.T) {
	for _, c := range galeraCases {
		t.Run(c.name, func(t *testing.T) {
			hist := map[int]*galeraHistory{}
			last := map[int]*dbpilot.Instance{}
			var at time.Time
			for _, step := range c.steps {
				dirs, err := filepath.Glob(filepath.Join("testdata", "galera-10.11", step, "*"))
				if err != nil || len(dirs) == 0 {
					t.Fatalf("%s: no recordings (%v)", step, err)
				}
				for _, d := range dirs {
					inst := inspectGalera(t, strings.TrimPrefix(d, "testdata/"))
					if inst.Galera != nil {
						hist[inst.Key.Port] = hist[inst.Key.Port].apply(inst)
					}
					last[inst.Key.Port] = inst
					at = inst.ObservedAt
				}
			}
			for _, p := range c.down {
				last[p] = &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "127.0.0.1", Port: p}, ObservedAt: at,
					LastError: "mysql: connect to 127.0.0.1:" + strconv.Itoa(p) + ": dial tcp 127.0.0.1:" + strconv.Itoa(p) + ": connect: connection refused"}
			}
			var out []*dbpilot.Instance
			for p := 27301; p <= 27304; p++ {
				if i := last[p]; i != nil {
					out = append(out, i)
				}
			}
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("..", "topology", "testdata", "analyze", c.name, "instances.json"), append(b, '\n'))
		})
	}
}

// golden compares got with the file at path, or writes it under -update
// (internal/testutil's flag: this package's external tests import it, and
// it cannot be imported here).
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the recordings give (run go test -update and review the diff)", path)
	}
}
