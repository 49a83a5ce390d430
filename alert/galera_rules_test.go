package alert

import (
	"context"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/metrics"
)

// galeraNode is what the galera collector writes for one node each second,
// as a function of the second.
type galeraNode struct {
	port    int
	cluster string
	// status at second s: wsrep name (without wsrep_) → value.
	status func(s int) map[string]float64
}

// TestGaleraRules evaluates the built-in Galera rules with the real PromQL
// engine over series shaped as the collector writes them, the values taken
// from recorded nodes (mysql/testdata/galera-10.11): a synced cluster, a
// desynced node, one throttling its cluster by flow control while catching
// up, a missing member, a joiner, and a node alone in a non-Primary
// component in another cluster.
func TestGaleraRules(t *testing.T) {
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	const seconds = 2*3600 - 60
	st, err := metrics.Open(metrics.Options{Dir: t.TempDir(), MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	synced := func(size float64) func(int) map[string]float64 {
		return func(s int) map[string]float64 {
			return map[string]float64{"local_state": 4, "cluster_status": 1, "cluster_size": size, "local_recv_queue": 0,
				"flow_control_paused_ns": float64(s) * 0.12e9, "flow_control_sent": 0, "desync_count": 0}
		}
	}
	nodes := []galeraNode{
		// Cluster a: 21001 and 21002 synced, paused 12% of the time by
		// 21003, which catches up after its desync was lifted and sends
		// flow control (as catchup-3..5: 14 messages in 2.8 s).
		{21001, "a", synced(3)},
		{21002, "a", synced(3)},
		{21003, "a", func(s int) map[string]float64 {
			return map[string]float64{"local_state": 2, "cluster_status": 1, "cluster_size": 3, "local_recv_queue": 16302,
				"flow_control_paused_ns": float64(s) * 0.12e9, "flow_control_sent": float64(s) * 5, "desync_count": 0}
		}},
		// Cluster b: 22001 lost 22003 10 minutes ago (node-missing); 22002
		// is desynced on purpose with a growing queue (desynced-locked:
		// wsrep_desync=ON, count 1).
		{22001, "b", func(s int) map[string]float64 {
			m := synced(3)(s)
			m["flow_control_paused_ns"] = 0
			if s >= seconds-600 {
				m["cluster_size"] = 2
			}
			return m
		}},
		{22002, "b", func(s int) map[string]float64 {
			return map[string]float64{"local_state": 2, "cluster_status": 1, "cluster_size": 3, "local_recv_queue": float64(100 * s),
				"flow_control_paused_ns": 0, "flow_control_sent": 0, "desync_count": 1}
		}},
		// Cluster c: 23001 alone in a non-Primary component; 23002 joining;
		// 23003 synced with a growing receive queue.
		{23001, "c", func(s int) map[string]float64 {
			return map[string]float64{"local_state": 0, "cluster_status": 0, "cluster_size": 1, "local_recv_queue": 0, "desync_count": 0}
		}},
		{23002, "c", func(s int) map[string]float64 {
			return map[string]float64{"local_state": 1, "cluster_status": 1, "cluster_size": 2, "local_recv_queue": 0, "desync_count": 0}
		}},
		{23003, "c", func(s int) map[string]float64 {
			m := synced(2)(s)
			m["flow_control_paused_ns"] = 0
			m["local_recv_queue"] = float64(10 * s)
			return m
		}},
	}
	ctx := context.Background()
	for s := 0; s <= seconds; s += 5 { // a sample every 5 s
		for _, n := range nodes {
			var samples []dbpilot.Sample
			for name, v := range n.status(s) {
				typ := dbpilot.Gauge
				if name == "flow_control_paused_ns" || name == "flow_control_sent" {
					typ = dbpilot.Counter
				}
				samples = append(samples, dbpilot.Sample{Name: "mysql_global_status_wsrep_" + name, Value: v, Type: typ})
			}
			b := dbpilot.Batch{Instance: dbpilot.InstanceKey{Host: "127.0.0.1", Port: n.port}, Cluster: n.cluster,
				Role: "primary", Collector: "galera", Time: t0.Add(time.Duration(s) * time.Second), Samples: samples}
			if err := st.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := t0.Add(seconds * time.Second)

	want := map[string][]int{
		"GaleraNonPrimary":          {23001},
		"GaleraClusterSizeMismatch": {22001},
		"GaleraNotSynced":           {23002},
		"GaleraSSTInProgress":       {23002},
		"GaleraNodeDesynced":        {21003, 22002},
		"GaleraDesyncLeftOn":        {22002},
		"GaleraFlowControlPaused":   {21001, 21002, 21003},
		"GaleraFlowControlSent":     {21003},
		"GaleraRecvQueueGrowing":    {23003},
	}
	checkRulesFire(t, st, at, want, func(r Rule, labels map[string]string) {
		if labels["cluster"] == "" {
			t.Errorf("%s: %s has no cluster label", r.Name, labels["instance"])
		}
	})
}
