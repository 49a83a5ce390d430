package topology

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

// afterFailover is the "healthy" case after a failover to 21002: 21003
// replicates from it, and the old primary 21001 answers again, alone,
// read_only, with oldState as its gtid_binlog_state.
func afterFailover(t *testing.T, oldState string) []*dbpilot.Instance {
	t.Helper()
	in := loadCase(t, "healthy")
	old, p, r := find(in, 21001), find(in, 21002), find(in, 21003)
	old.ReadOnly, old.Replicas = true, nil
	old.GTID.BinlogState, old.GTID.BinlogPos, old.GTID.CurrentPos = oldState, oldState, oldState
	p.Channels, p.ReadOnly, p.Replicas = nil, false, []dbpilot.InstanceKey{r.Key}
	p.GTID.BinlogState, p.GTID.BinlogPos = "0-1-12,0-2-14", "0-2-14"
	r.Channels[0].Source = p.Key
	r.GTID.BinlogState = "0-1-12,0-2-14"
	for _, i := range in {
		i.SemiSync = dbpilot.SemiSyncState{}
	}
	return in
}

func TestDetachFormerPrimary(t *testing.T) {
	tests := []struct {
		name, oldState string
		writable       bool
		errant         string
		codes          []string
		text           string
	}{
		{"no errant transactions", "0-1-12", false, "", []string{"21001:FencedOldPrimary:warning"}, "former primary, fenced, errant: none"},
		{"an errant transaction", "0-1-13", false, "0-1-13", []string{"21001:FencedOldPrimary:critical"}, "former primary, fenced, errant: 0-1-13"},
		{"writable", "0-1-12", true, "", []string{"21001:MultipleWritable:critical"}, "former primary, NOT fenced: writable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := afterFailover(t, tt.oldState)
			find(in, 21001).ReadOnly = !tt.writable
			clusters, problems := Detach(Clusters(in))
			if len(clusters) != 1 {
				t.Fatalf("%d clusters, want the old primary detached into the one of 21002: %+v", len(clusters), clusters)
			}
			c := clusters[0]
			if len(c.Detached) != 1 || c.Detached[0].Key.Port != 21001 || len(c.Fenced) != 1 {
				t.Fatalf("detached %v, fenced %+v", c.Detached, c.Fenced)
			}
			f := c.Fenced[0]
			if !f.Compared || f.Errant != tt.errant || f.Primary.Port != 21002 || f.ReadOnly == tt.writable {
				t.Errorf("fenced %+v, want errant %q against 21002", f, tt.errant)
			}
			if got := codes(problems, true); !slices.Equal(got, tt.codes) {
				t.Errorf("problems %v, want %v", got, tt.codes)
			}
			if tt.errant != "" && problems[0].Detail["errant"] != tt.errant {
				t.Errorf("detail %v", problems[0].Detail)
			}
			if tt.errant != "" && !strings.Contains(problems[0].Message, "dbpilot rejoin 127.0.0.1:21001 --reclone") {
				t.Errorf("message %q does not say what to do", problems[0].Message)
			}
			all := append(Analyze(in, AnalyzeOptions{}), problems...)
			var b bytes.Buffer
			if err := RenderText(&b, clusters, all); err != nil {
				t.Fatal(err)
			}
			code := strings.Split(tt.codes[0], ":")[1]
			want := "127.0.0.1:21002   [-,ok,10.11.19,rw,ROW,GTID,nosemi]\n" +
				"+ 127.0.0.1:21003 [0s,ok,10.11.19,ro,ROW,GTID,nosemi]\n" +
				"- 127.0.0.1:21001 [-,ok,10.11.19," + map[bool]string{true: "rw", false: "ro"}[tt.writable] + ",ROW,GTID,nosemi]  " + code + " " + tt.text + "\n"
			if b.String() != want {
				t.Errorf("tree:\n%s\nwant:\n%s", b.String(), want)
			}
			h := Summarize(c, all)
			if h.Healthy || len(h.Problems) != 1 || h.Problems[0].Code != dbpilot.ProblemCode(code) {
				t.Errorf("summary %+v: the detached server's problem belongs to the cluster", h)
			}
			b.Reset()
			if err := RenderJSON(&b, clusters, all); err != nil {
				t.Fatal(err)
			}
			var doc Document
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Clusters) != 1 || len(doc.Clusters[0].Fenced) != 1 || doc.Clusters[0].Fenced[0].Errant != tt.errant || len(doc.OtherProblems) != 0 {
				t.Errorf("JSON document: %s", b.String())
			}
		})
	}
}

func TestDetachLeavesOthersAlone(t *testing.T) {
	// A lone server that never wrote anything the primary has (a new,
	// unrelated server) stays a cluster of its own.
	in := afterFailover(t, "0-1-12")
	stranger := find(in, 21001)
	stranger.ServerID = 9
	stranger.GTID.BinlogState = "0-9-3"
	clusters, problems := Detach(Clusters(in))
	if len(clusters) != 2 || len(problems) != 0 {
		t.Errorf("stranger detached: %d clusters, problems %v", len(clusters), problems)
	}
	// A read_only primary is not taken as the cluster's primary.
	in = afterFailover(t, "0-1-12")
	find(in, 21002).ReadOnly = true
	if clusters, _ := Detach(Clusters(in)); len(clusters) != 2 {
		t.Errorf("detached below a read_only primary: %d clusters", len(clusters))
	}
	// Two lone writable servers that both wrote what the other has
	// (ambiguous): neither is detached.
	in = afterFailover(t, "0-1-12,0-2-10")
	p := find(in, 21002)
	p.Replicas = nil
	in = []*dbpilot.Instance{find(in, 21001), p}
	find(in, 21001).ReadOnly = false
	if clusters, _ := Detach(Clusters(in)); len(clusters) != 2 {
		t.Errorf("ambiguous pair detached: %d clusters", len(clusters))
	}
}

func TestFencedProblems(t *testing.T) {
	k := func(port int) dbpilot.InstanceKey { return dbpilot.InstanceKey{Host: "127.0.0.1", Port: port} }
	got := FencedProblems([]dbpilot.FencedInstance{
		{Key: k(1), Reachable: false, ReadOnly: false},                              // down: none
		{Key: k(2), Reachable: true, ReadOnly: false, Compared: true},               // writable: MultipleWritable's
		{Key: k(3), Reachable: true, ReadOnly: true, Primary: k(9)},                 // not compared
		{Key: k(4), Reachable: true, ReadOnly: true, Primary: k(9), Compared: true}, // can rejoin
		{Key: k(5), Reachable: true, ReadOnly: true, Primary: k(9), Compared: true, Errant: "0-5-1"},
	})
	if c := codes(got, true); !slices.Equal(c, []string{"3:FencedOldPrimary:warning", "4:FencedOldPrimary:warning", "5:FencedOldPrimary:critical"}) {
		t.Fatalf("problems %v", c)
	}
	if _, ok := got[0].Detail["errant"]; ok || !strings.Contains(got[0].Message, "unknown") {
		t.Errorf("not compared: %+v", got[0])
	}
	if e, ok := got[1].Detail["errant"]; !ok || e != "" || !strings.Contains(got[1].Message, "'dbpilot rejoin 127.0.0.1:4'") {
		t.Errorf("can rejoin: %+v", got[1])
	}
	if got[2].Detail["errant"] != "0-5-1" || !strings.Contains(got[2].Message, "0-5-1") {
		t.Errorf("errant: %+v", got[2])
	}
}

func TestErrantMySQL(t *testing.T) {
	u1, u2 := "3e11fa47-71ca-11e1-9e33-c80aa9429562", "4e11fa47-71ca-11e1-9e33-c80aa9429562"
	old := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "a", Port: 1}, Flavor: dbpilot.FlavorMySQL, ServerUUID: u1, Reachable: true, GTID: dbpilot.GTIDState{Executed: u1 + ":1-6"}}
	p := &dbpilot.Instance{Key: dbpilot.InstanceKey{Host: "b", Port: 1}, Flavor: dbpilot.FlavorMySQL, ServerUUID: u2, Reachable: true, GTID: dbpilot.GTIDState{Executed: u1 + ":1-5," + u2 + ":1-3"}}
	if e, err := Errant(old, p); err != nil || e != u1+":6" {
		t.Errorf("errant %q, %v", e, err)
	}
	if !formerPrimaryOf(old, p) || formerPrimaryOf(p, old) {
		t.Errorf("former primary by server_uuid: %t %t", formerPrimaryOf(old, p), formerPrimaryOf(p, old))
	}
}
