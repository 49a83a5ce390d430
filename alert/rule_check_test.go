package alert

import "testing"

// TestParseRulesFieldErrors covers each check of one rule's fields with the
// whole message, including those TestParseRulesErrors does not reach.
func TestParseRulesFieldErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"not a mapping", "rules:\n  - 3\n",
			`a.yaml:2: rule #1: want a mapping (alert:, expr:, ...), got a number 3`},
		{"key given twice", "rules:\n  - alert: A\n    expr: up == 0\n    expr: up == 1\n",
			`a.yaml:4: rule #1: expr given twice`},
		{"name not a string", "rules:\n  - alert: [x]\n    expr: up == 0\n",
			`a.yaml:2: rule #1: alert: want a name`},
		{"empty name", "rules:\n  - alert: \"\"\n    expr: up == 0\n",
			`a.yaml:2: rule #1: alert: want a name`},
		{"empty expr", "rules:\n  - alert: A\n    expr: \"\"\n",
			`a.yaml:3: rule "A": expr: want a PromQL expression`},
		{"labels not a mapping", "rules:\n  - alert: A\n    expr: up == 0\n    labels: [a]\n",
			`a.yaml:4: rule "A": labels: want a mapping of label names to values, got a list`},
		{"bad labels", "rules:\n  - alert: A\n    expr: up == 0\n    labels:\n      __x: a\n      1a: b\n      team: [a]\n      owner: \"{{ $labels.instance }}\"\n",
			"a.yaml:5: rule \"A\": labels: invalid label name \"__x\"\n" +
				"a.yaml:6: rule \"A\": labels: invalid label name \"1a\"\n" +
				"a.yaml:7: rule \"A\": labels: team: want a string\n" +
				"a.yaml:8: rule \"A\": labels: owner: templates in labels are not supported"},
		{"severity not a string", "rules:\n  - alert: A\n    expr: up == 0\n    severity: [critical]\n",
			`a.yaml:4: rule "A": severity: want critical, warning or info, got a list`},
		{"severity differs from its label", "rules:\n  - alert: A\n    expr: up == 0\n    labels:\n      severity: info\n    severity: critical\n",
			`a.yaml:6: rule "A": severity: "critical" differs from labels.severity "info"`},
		{"annotations not a mapping", "rules:\n  - alert: A\n    expr: up == 0\n    annotations: [a]\n",
			`a.yaml:4: rule "A": annotations: want a mapping, got a list`},
		{"bad annotations", "rules:\n  - alert: A\n    expr: up == 0\n    summary: s\n    annotations:\n      summary: t\n      description: \"{{ .Nope }}\"\n      runbook: [x]\n",
			"a.yaml:6: rule \"A\": annotations: summary: the summary is given twice (summary: and annotations.summary)\n" +
				"a.yaml:7: rule \"A\": annotations: description: template: executing \"A\" at <.Nope>: can't evaluate field Nope in type alert.templateData\n" +
				"a.yaml:8: rule \"A\": annotations: runbook: want a string"},
		{"summary not a string", "rules:\n  - alert: A\n    expr: up == 0\n    summary: [s]\n",
			`a.yaml:4: rule "A": summary: want a string, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRules("a.yaml", []byte(tt.yaml))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}

// TestParseRulesFieldDefaults covers the fields that fall back: an empty
// labels mapping, and a description standing for the summary.
func TestParseRulesFieldDefaults(t *testing.T) {
	rules, err := ParseRules("a.yaml", []byte("rules:\n  - alert: A\n    expr: up == 0\n    labels: {}\n    annotations:\n      description: \"{{ $labels.instance }} d\"\n"))
	if err != nil || len(rules) != 1 {
		t.Fatalf("rules %+v, %v", rules, err)
	}
	r := rules[0]
	if r.Labels != nil || r.Severity != SeverityWarning || r.Summary != "{{ $labels.instance }} d" {
		t.Errorf("rule %+v", r)
	}
	s, err := r.render(map[string]string{"instance": "db1:3306"}, 0)
	if err != nil || s != "db1:3306 d" {
		t.Errorf("render: %q, %v", s, err)
	}
}
