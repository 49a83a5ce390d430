package topology

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot"
)

func render(t *testing.T, in []*dbpilot.Instance) string {
	t.Helper()
	var b bytes.Buffer
	if err := RenderText(&b, Clusters(in), Analyze(in, AnalyzeOptions{})); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRenderShapes(t *testing.T) {
	// A ring with a replica hanging off 21002.
	ring := loadCase(t, "ring")
	hang := loadCase(t, "chain")[2] // replicates from 21002
	hang.Key.Port, hang.ServerID = 21004, 4
	hang.GTID = find(ring, 21002).GTID
	find(ring, 21002).Replicas = append(find(ring, 21002).Replicas, hang.Key)
	ring = append(ring, hang)

	// A multi-source sink with a replica of its own, next to a second
	// cluster whose replica 21103 is unreachable and known only from its
	// primary.
	multi := loadCase(t, "multi-source")
	leaf := loadCase(t, "chain")[2]
	leaf.Key.Port, leaf.ServerID = 21005, 5
	leaf.GTID = find(multi, 21003).GTID
	leaf.Channels[0].Source.Port = 21003
	find(multi, 21003).Replicas = []dbpilot.InstanceKey{leaf.Key}
	multi = append(multi, leaf)
	other := loadCase(t, "healthy")
	for _, i := range other {
		i.Key.Port += 100
		for c := range i.Channels {
			i.Channels[c].Source.Port += 100
		}
		for r := range i.Replicas {
			i.Replicas[r].Port += 100
		}
	}
	*other[2] = dbpilot.Instance{Key: other[2].Key, LastError: "mysql: connect on 127.0.0.1:21103: timed out"}
	multi = append(multi, other...)

	tests := []struct {
		name string
		in   []*dbpilot.Instance
		want string
	}{
		{"ring with a replica", ring, `
127.0.0.1:21001     [0s,ok,10.11.19,rw,ROW,GTID,nosemi]
+ 127.0.0.1:21002   [0s,ok,10.11.19,ro,ROW,GTID,nosemi]
  + 127.0.0.1:21003 [0s,ok,10.11.19,ro,ROW,GTID,nosemi]
    + (ring → 127.0.0.1:21001)
  + 127.0.0.1:21004 [0s,ok,10.11.19,ro,ROW,GTID,nosemi]
`},
		{"multi-source with a replica, and a second cluster", multi, `
127.0.0.1:21001     [-,ok,10.11.19,rw,ROW,GTID,nosemi]
+ 127.0.0.1:21003   [0s,ok,10.11.19,ro,ROW,GTID,nosemi] [channel m1]
  + 127.0.0.1:21005 [0s,ok,10.11.19,ro,ROW,GTID,nosemi]
127.0.0.1:21002     [-,ok,10.11.19,rw,ROW,GTID,nosemi]
+ 127.0.0.1:21003   [0s,ok,10.11.19,ro,ROW,GTID,nosemi] [channel m2] (replicas shown above)

127.0.0.1:21101   [-,ok,10.11.19,rw,ROW,GTID,semi:primary]
+ 127.0.0.1:21102 [0s,ok,10.11.19,ro,ROW,GTID,semi:replica]
+ 127.0.0.1:21103 [unreachable: mysql: connect on 127.0.0.1:21103: timed out]
`},
	}
	for _, tt := range tests {
		got := render(t, tt.in)
		if want := strings.TrimPrefix(tt.want, "\n"); got != want {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", tt.name, got, want)
		}
	}
}

func TestRenderJSONShape(t *testing.T) {
	in := loadCase(t, "unreachable-primary")
	var b bytes.Buffer
	if err := RenderJSON(&b, Clusters(in), Analyze(in, AnalyzeOptions{})); err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Clusters) != 1 || doc.Clusters[0].Healthy || len(doc.Clusters[0].Instances) != 3 ||
		len(doc.Clusters[0].Edges) != 2 || len(doc.Clusters[0].Problems) != 4 || len(doc.OtherProblems) != 0 {
		t.Errorf("document: %s", b.String())
	}

	// Problems of instances outside the clusters are kept apart.
	b.Reset()
	stray := dbpilot.Problem{Code: dbpilot.ProblemUnreachable, Instance: dbpilot.InstanceKey{Host: "db9", Port: 3306}}
	if err := RenderJSON(&b, nil, []dbpilot.Problem{stray}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"clusters": []`) || !strings.Contains(b.String(), `"other_problems"`) {
		t.Errorf("stray problem: %s", b.String())
	}
}
