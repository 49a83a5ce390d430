package drill

import (
	"testing"
	"time"
)

// survivorView from a recorded sequence of writes: node2 stalls 3 s after
// the kill, node3 loses one write and resumes at once; node1 (killed) is
// not a survivor.
func TestSurvivorView(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	kill, restart := at(1000), at(10000)
	w := func(node string, sent, done int, failed bool) galeraWrite {
		return galeraWrite{node: node, sent: at(sent), done: at(done), failed: failed}
	}
	writes := []galeraWrite{
		w("node1", 900, 905, false), w("node1", 1100, 1200, true), w("node1", 1300, 1400, true),
		w("node2", 600, 605, false), w("node2", 900, 3900, false), // sent before the kill, held by the stall
		w("node2", 3900, 3905, false), w("node2", 4200, 4205, false), w("node2", 9000, 9005, false),
		w("node3", 950, 955, false), w("node3", 1250, 1300, true), w("node3", 1550, 1560, false),
		w("node3", 4000, 4005, false), w("node3", 6000, 6005, false), w("node3", 8000, 8005, false), w("node3", 9800, 9805, false),
		w("node2", 10100, 10105, false), // after the restart: not counted
	}
	stall, first, failed, nodes := survivorView(writes, map[string]bool{"node2": true, "node3": true}, kill, restart)
	if nodes != 2 || failed != 1 {
		t.Errorf("nodes %d, failed %d; want 2, 1", nodes, failed)
	}
	// node2: kill → 3.9 s (2.9 s), then 4.205 → 9.005 (4.8 s): the longest.
	if stall != 4.8 {
		t.Errorf("stall %.3f, want 4.8", stall)
	}
	// First write sent after the kill and acknowledged: node2's at 3.905
	// (2.905 s), node3's at 1.56 (0.56 s): the slowest survivor's.
	if first != 2.905 {
		t.Errorf("first ack %.3f, want 2.905", first)
	}
	// A survivor with no acknowledged write after the kill stalls until
	// the restart.
	stall, first, _, _ = survivorView([]galeraWrite{w("node2", 500, 505, false), w("node2", 1500, 9999, true)}, map[string]bool{"node2": true}, kill, restart)
	if stall != 9 || first != 9 {
		t.Errorf("silent survivor: stall %.3f first %.3f, want 9, 9", stall, first)
	}
}

func TestClassifyRejoin(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{[]string{"2026-11-26 12:00:01 0 [Note] WSREP: Receiving IST: 42 writesets, seqnos 101-142", "WSREP: IST received: 3c0...:142"}, "IST"},
		// An IST through the SST script, as MariaDB 10.11 logs it after a
		// crash and --wsrep-start-position.
		{[]string{"WSREP: Running: 'wsrep_sst_rsync --role 'joiner' ...'", "WSREP_SST: [INFO] rsync IST completed on joiner (20261126 04:22:44.735)",
			"WSREP: SST received", "WSREP: SST succeeded for position fc37...:145", "WSREP: Receiving IST: 72 writesets, seqnos 146-217"}, "IST"},
		{[]string{"WSREP: Running: 'wsrep_sst_rsync --role 'joiner' ...'", "WSREP_SST: [INFO] rsync SST completed on joiner (20261126 04:22:44.735)",
			"WSREP: SST received: 3c0...:142", "WSREP: Receiving IST: 3 writesets, seqnos 143-145"}, "SST"},
		{[]string{"WSREP: Shifting JOINED -> SYNCED (TO: 142)"}, "unknown"},
	} {
		if got := classifyRejoin(tc.lines); got != tc.want {
			t.Errorf("classifyRejoin(%q) = %s, want %s", tc.lines, got, tc.want)
		}
	}
}
