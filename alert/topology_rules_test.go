package alert

import (
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

// TestTopologyProblemRules evaluates MySQLDown, RefusesDbpilot,
// MultipleWritable and ClusterOverlap with the real PromQL engine over
// series shaped as serve writes them: 31001 is a primary whose account is
// locked (mysql_up 0, and the analysis says RefusesDbpilot); 31002 a
// crashed replica (mysql_up 0, nothing else); 31003 a healthy primary with
// a writable old primary 31009 beside it.
func TestTopologyProblemRules(t *testing.T) {
	st, t0, write := ruleSeries(t, "primary")
	up := func(v float64) dbpilot.Sample { return dbpilot.Sample{Name: "mysql_up", Type: dbpilot.Gauge, Value: v} }
	problem := func(code string, server int, errno string) dbpilot.Sample {
		return dbpilot.Sample{Name: "dbpilot_topology_problem", Type: dbpilot.Gauge, Value: 1, Labels: []dbpilot.Label{
			{Name: "code", Value: code}, {Name: "server", Value: dbpilot.InstanceKey{Host: "127.0.0.1", Port: server}.String()}, {Name: "errno", Value: errno}}}
	}
	for s := 0; s <= 60; s++ {
		write(31001, s, "global_status", up(0))
		write(31002, s, "global_status", up(0))
		write(31003, s, "global_status", up(1))
		write(31001, s, "analysis", problem("RefusesDbpilot", 31001, "4151"))
		write(31003, s, "analysis", problem("MultipleWritable", 31009, ""))
	}
	at := t0.Add(60 * time.Second)
	want := map[string][]int{"MySQLDown": {31002}, "RefusesDbpilot": {31001}, "MultipleWritable": {31003}, "ClusterOverlap": nil}
	checkRulesFire(t, st, at, want, func(r Rule, labels map[string]string) {
		s, err := r.render(labels, 1)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Name {
		case "RefusesDbpilot":
			if !strings.Contains(s, "4151") || !strings.Contains(s, "127.0.0.1:31001") {
				t.Errorf("RefusesDbpilot summary %q: want the error number and the server", s)
			}
		case "MultipleWritable":
			if !strings.Contains(s, "127.0.0.1:31009") {
				t.Errorf("MultipleWritable summary %q: want the second writer", s)
			}
		}
	})
}
