package alert

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
)

func TestLoadRulesGood(t *testing.T) {
	rules, err := LoadRules("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Name, Group, Expr string
		For               time.Duration
		Severity, Summary string
		Labels            map[string]string
		Line              int
	}
	var got []short
	for _, r := range rules {
		got = append(got, short{r.Name, r.Group, r.Expr, r.For, r.Severity, r.Summary, r.Labels, r.Line})
		if r.File != "testdata/good.yaml" {
			t.Errorf("%s: File %q", r.Name, r.File)
		}
	}
	want := []short{
		{"ReplicationIOStopped", "mysql", "mysql_slave_status_slave_io_running == 0", 10 * time.Second, "critical",
			"replication IO thread stopped on {{ $labels.instance }} (channel {{ $labels.channel_name }})", nil, 6},
		{"LagHigh", "mysql", "dbpilot_heartbeat_lag_seconds\n  > 30\n", 90 * time.Second, "warning",
			"{{ $labels.instance }} lags {{ $value | humanizeDuration }}", nil, 12},
		{"PromStyle", "", "up == 0", 24 * time.Hour, "info", "{{ .Labels.instance }} is {{ .Value }}", map[string]string{"team": "dba"}, 23},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules:\n got %+v\nwant %+v", got, want)
	}

	s, err := rules[0].render(map[string]string{"instance": "db1:3306", "channel_name": "a"}, 0)
	if err != nil || s != "replication IO thread stopped on db1:3306 (channel a)" {
		t.Errorf("render: %q, %v", s, err)
	}
	s, err = rules[1].render(map[string]string{"instance": "db2:3306"}, 3725)
	if err != nil || s != "db2:3306 lags 1h 2m 5s" {
		t.Errorf("render: %q, %v", s, err)
	}
	// A missing label renders empty, not "<no value>".
	s, err = rules[2].render(nil, 0)
	if err != nil || s != "is 0" {
		t.Errorf("render: %q, %v", s, err)
	}
}

func TestParseRulesErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each must appear in the message
	}{
		{"promql", `
groups:
  - name: g
    rules:
      - alert: LagHigh
        expr: dbpilot_heartbeat_lag_seconds >> 30
`, []string{`alerts.yaml:6: rule "LagHigh": expr: parse error at char 32: unexpected <op:>>`}},
		{"promql multiline", `
rules:
  - alert: Multi
    expr: |
      sum by (instance) (
        rate(x[1m]
      )
`, []string{`alerts.yaml:7: rule "Multi": expr: parse error at char `}},
		{"range vector", `
rules:
  - alert: Range
    expr: x[5m]
`, []string{`alerts.yaml:4: rule "Range": expr: the expression is a range vector; an alert needs an instant vector`}},
		{"unknown key", `
rules:
  - alert: A
    expr: up == 0
    severty: critical
`, []string{`alerts.yaml:5: rule "A": unknown key "severty"`}},
		{"unknown top key", `
rule:
  - alert: A
`, []string{`alerts.yaml:2: unknown key "rule" (known: groups, rules)`}},
		{"bad duration", `
rules:
  - alert: A
    expr: up == 0
    for: 10 minutes
`, []string{`alerts.yaml:5: rule "A": for: invalid duration "10 minutes"`}},
		{"duration without unit", `
rules:
  - alert: A
    expr: up == 0
    for: 10
`, []string{`alerts.yaml:5: rule "A": for: "10" has no unit`}},
		{"negative duration", `
rules:
  - alert: A
    expr: up == 0
    for: -5s
`, []string{`alerts.yaml:5: rule "A": for: negative duration`}},
		{"bad severity", `
rules:
  - alert: A
    expr: up == 0
    severity: urgent
`, []string{`alerts.yaml:5: rule "A": severity: "urgent" is not critical, warning or info`}},
		{"bad label severity", `
rules:
  - alert: A
    expr: up == 0
    labels:
      severity: page
`, []string{`alerts.yaml:6: rule "A": severity: "page" is not critical`}},
		{"duplicate", `
groups:
  - name: a
    rules:
      - alert: Dup
        expr: up == 0
  - name: b
    rules:
      - alert: Dup
        expr: up == 1
`, []string{`alerts.yaml:9: rule "Dup": duplicate alert name (first defined at line 5)`}},
		{"template", `
rules:
  - alert: Tmpl
    expr: up == 0
    summary: "{{ $labels.instance "
`, []string{`alerts.yaml:5: rule "Tmpl": summary: template: `}},
		{"template undefined variable", `
rules:
  - alert: Tmpl
    expr: up == 0
    summary: "{{ $lables.instance }}"
`, []string{`alerts.yaml:5: rule "Tmpl": summary: template: undefined variable "$lables"`}},
		{"template unknown function", `
rules:
  - alert: Tmpl
    expr: up == 0
    summary: |
      first line
      {{ $value | humanise }}
`, []string{`alerts.yaml:7: rule "Tmpl": summary: template: function "humanise" not defined`}},
		{"annotation template", `
rules:
  - alert: Tmpl
    expr: up == 0
    annotations:
      runbook: "{{ .Nope }}"
`, []string{`alerts.yaml:6: rule "Tmpl": annotations: runbook: template: `}},
		{"missing expr", `
rules:
  - alert: NoExpr
    for: 1m
`, []string{`alerts.yaml:3: rule "NoExpr": missing expr:`}},
		{"missing name", `
rules:
  - alert: A
    expr: up == 0
  - expr: up == 0
`, []string{`alerts.yaml:5: rule #2: missing alert:`}},
		{"bad name", `
rules:
  - alert: Lag High
    expr: up == 0
`, []string{`alerts.yaml:3: rule "Lag High": alert: invalid name`}},
		{"recording rule", `
rules:
  - record: job:up:sum
    expr: sum(up)
`, []string{`alerts.yaml:3: rule #1: recording rules are not supported`}},
		{"yaml syntax", `
rules:
  - alert: A
    expr: "up == 0
`, []string{`alerts.yaml:4: `}},
		{"not a mapping", `- a
- b
`, []string{`alerts.yaml:1: want a mapping with groups: or rules:`}},
		{"group without name", `
groups:
  - rules:
      - alert: A
        expr: up == 0
`, []string{`alerts.yaml:3: group without a name`}},
		{"several", `
rules:
  - alert: A
    expr: up ==
  - alert: B
    expr: up == 0
    for: forever
`, []string{`alerts.yaml:4: rule "A": expr: parse error`, "\nalerts.yaml:7: rule \"B\": for: invalid duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := ParseRules("alerts.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error; rules %+v", rules)
			}
			if dbpilot.ErrorCode(err) != dbpilot.EINVALID {
				t.Errorf("code %q", dbpilot.ErrorCode(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%s\nwant it to contain:\n%s", err, w)
				}
			}
		})
	}
}

func TestParseRulesEmpty(t *testing.T) {
	for _, s := range []string{"", "# nothing\n", "groups:\n", "rules: []\n"} {
		rules, err := ParseRules("x.yaml", []byte(s))
		if err != nil || len(rules) != 0 {
			t.Errorf("%q: %v, %v", s, rules, err)
		}
	}
}

func TestLoadRulesMissingFile(t *testing.T) {
	_, err := LoadRules(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("error %v", err)
	}
}

func TestDefaultRules(t *testing.T) {
	rules := DefaultRules()
	want := []string{
		"MySQLDown", "CollectionLagging", "RefusesDbpilot", "MultipleWritable", "ClusterOverlap", "MySQLRestarted", "ReplicationIOStopped", "ReplicationSQLStopped", "ReplicationLagHigh", "ReplicaWillNotCatchUp",
		"SemiSyncFellBack", "InnoDBCheckpointAgeHigh", "InnoDBDirtyPagesHigh", "InnoDBDeadlocks",
		"InnoDBHistoryListGrowing", "ThreadsRunningHigh", "ConnectionsHigh", "GaleraNonPrimary", "GaleraClusterSizeMismatch", "GaleraNotSynced",
		"GaleraSSTInProgress", "GaleraNodeDesynced", "GaleraDesyncLeftOn", "GaleraFlowControlPaused", "GaleraFlowControlSent",
		"GaleraRecvQueueGrowing", "DigestTableFull", "QueryStatisticsUnavailable", "BinlogBackupGap", "BinlogBackupDown", "BinlogBackupLagging", "BinlogBackupSetAside",
	}
	var names []string
	for _, r := range rules {
		names = append(names, r.Name)
		if r.Summary == "" || r.Severity == "" {
			t.Errorf("%s: no summary or severity", r.Name)
		}
		s, err := r.render(map[string]string{"instance": "db1:3306", "cluster": "main", "channel_name": ""}, 42.5)
		if err != nil || strings.Contains(s, "<no value>") || !strings.Contains(s, "db1:3306") {
			t.Errorf("%s: summary %q, %v", r.Name, s, err)
		}
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("default rules %v, want %v", names, want)
	}
	// The embedded file is what docs/monitoring.md tells people to copy.
	b, err := os.ReadFile("rules.yaml")
	if err != nil || string(b) != string(defaultRules) {
		t.Errorf("rules.yaml differs from the embedded rules (%v)", err)
	}
}

func TestHumanize(t *testing.T) {
	tests := []struct {
		f    func(any) (string, error)
		in   any
		want string
	}{
		{humanize, 1234567.0, "1.235M"},
		{humanize, 0.0012, "1.2m"},
		{humanize, 12.0, "12"},
		{humanize, "2048", "2.048k"},
		{humanizeDuration, 0.25, "250ms"},
		{humanizeDuration, 90061.0, "1d 1h 1m 1s"},
		{humanizeDuration, 59.5, "59.5s"},
		{humanizeDuration, 3600.0, "1h"},
		{humanizePercentage, 0.1234, "12.34%"},
	}
	for _, tt := range tests {
		got, err := tt.f(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%v: %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := humanize(struct{}{}); err == nil {
		t.Error("humanize(struct{}) did not fail")
	}
}

func FuzzParseRules(f *testing.F) {
	for _, name := range []string{"testdata/good.yaml", "rules.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("rules:\n  - alert: A\n    expr: up ==\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRules("fuzz.yaml", data)
		if err != nil {
			if len(rules) != 0 {
				t.Fatal("rules and an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range rules {
			if r.Name == "" || r.Expr == "" || seen[r.Name] || r.For < 0 {
				t.Fatalf("bad rule accepted: %+v", r)
			}
			seen[r.Name] = true
		}
	})
}

func TestParseRulesUnnamed(t *testing.T) {
	_, err := ParseRules("a.yaml", []byte("rules:\n  - expr: up ==\n    for: x\n"))
	want := "a.yaml:2: rule #1: missing alert: (the alert's name)\na.yaml:2: rule #1: expr: parse error at char 6: unexpected end of input\na.yaml:3: rule #1: for: invalid duration \"x\": want a duration such as 30s, 5m or 1h"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
