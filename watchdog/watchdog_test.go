package watchdog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot"
	"go.yaml.in/yaml/v3"
)

// loadSnapshot reads a recorded processlist + INNODB_TRX from testdata.
func loadSnapshot(t *testing.T, name string) Snapshot {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Role      Role   `yaml:"role"`
		Self      uint64 `yaml:"self"`
		Processes []struct {
			ID                                   uint64
			User, Host, DB, Command, State, Info string
			Time                                 string
		} `yaml:"processes"`
		Trx []struct {
			Thread     uint64 `yaml:"thread"`
			Age        string `yaml:"age"`
			RowsLocked int64  `yaml:"rows_locked"`
			State      string `yaml:"state"`
		} `yaml:"trx"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s := Snapshot{Role: rec.Role, Self: rec.Self}
	for _, p := range rec.Processes {
		d, err := time.ParseDuration(p.Time)
		if err != nil {
			t.Fatalf("%s: id %d: %v", name, p.ID, err)
		}
		s.Processes = append(s.Processes, Process{ID: p.ID, User: p.User, Host: p.Host, DB: p.DB,
			Command: p.Command, State: p.State, Info: p.Info, Time: d})
	}
	for _, x := range rec.Trx {
		d, err := time.ParseDuration(x.Age)
		if err != nil {
			t.Fatal(err)
		}
		s.Trx = append(s.Trx, Trx{ThreadID: x.Thread, Age: d, RowsLocked: x.RowsLocked, State: x.State})
	}
	return s
}

func mustParse(t *testing.T, src string) []*Rule {
	t.Helper()
	rules, err := Parse("rules.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// summary renders matches as "rule decision id" strings.
func summary(ms []Match) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s %s %d", m.Rule, m.Decision, m.Session.ID))
	}
	return out
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		name, snapshot, rules string
		own                   Own
		want, excluded        []string // "id" or "id reason-substring"
	}{
		{
			name: "busy over 2s, replication/system/own/killed/liveness never", snapshot: "primary.yaml",
			rules: "rules: [{name: r, busy: 2s}]",
			want:  []string{"23", "22", "27", "20"},
			excluded: []string{"1 Daemon", "2 Daemon", "5 Daemon", "8 Binlog Dump",
				"26 already being killed", "24 marker", "28 not logged in"},
		},
		{
			name: "except users and hosts", snapshot: "primary.yaml",
			rules:    "rules: [{name: r, busy: 2s, except: {users: [backup], hosts: [10.0.0.7], ids: [20]}}]",
			want:     []string{"22"},
			excluded: []string{"23 except user backup", "27 except host 10.0.0.7", "20 except id 20"},
		},
		{
			name: "info regex on selects", snapshot: "primary.yaml",
			rules: "rules: [{name: r, busy: 2s, info: '(?i)^select', user: app|report}]",
			want:  []string{"27", "20"},
		},
		{
			name: "idle in transaction", snapshot: "primary.yaml",
			rules: "rules: [{name: r, idle_in_trx: 60s}]",
			want:  []string{"21"},
		},
		{
			name: "idle in transaction below threshold", snapshot: "primary.yaml",
			rules: "rules: [{name: r, idle_in_trx: 90s}]",
		},
		{
			name: "transaction age and rows locked", snapshot: "primary.yaml",
			rules: "rules: [{name: r, trx_age: 20s, rows_locked: 1}]",
			want:  []string{"21", "22"},
		},
		{
			name: "command and state, case-insensitive", snapshot: "primary.yaml",
			rules:    "rules: [{name: r, command: query, state: 'user sleep'}]",
			want:     []string{"20"},
			excluded: []string{"24 marker"},
		},
		{
			name: "host without port, db", snapshot: "primary.yaml",
			rules: "rules: [{name: r, host: 10\\.0\\.0\\..*, db: shop}]",
			want:  []string{"23", "27"},
		},
		{
			name: "monitoring user is own", snapshot: "primary.yaml", own: Own{Users: []string{"report"}, IDs: []uint64{22}},
			rules:    "rules: [{name: r, busy: 10s, user: app|report}]",
			excluded: []string{"22 own session", "27 own session (user report)"},
		},
		{
			name: "replica: replication threads never", snapshot: "replica.yaml",
			rules:    "rules: [{name: r, busy: 10s, role: replica}]",
			want:     []string{"30"},
			excluded: []string{"1 Daemon", "6 Slave_IO", "7 Slave_SQL", "8 Slave_worker"},
		},
		{
			name: "role primary on a replica", snapshot: "replica.yaml",
			rules: "rules: [{name: r, busy: 10s, role: primary}]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadSnapshot(t, tc.snapshot)
			r := mustParse(t, tc.rules)[0]
			got, excl := r.Matches(s, tc.own)
			var ids []string
			for _, m := range got {
				ids = append(ids, fmt.Sprint(m.Session.ID))
				if len(m.Reasons) == 0 {
					t.Errorf("match %d without a reason", m.Session.ID)
				}
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("matches %v, want %v", ids, tc.want)
			}
			for _, w := range tc.excluded {
				id, why, _ := strings.Cut(w, " ")
				found := false
				for _, m := range excl {
					if fmt.Sprint(m.Session.ID) == id && strings.Contains(strings.Join(m.Reasons, ";"), why) {
						found = true
					}
				}
				if !found {
					t.Errorf("want %s excluded (%s); excluded: %+v", id, why, excl)
				}
			}
		})
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func without(s Snapshot, ids ...uint64) Snapshot {
	out := s
	out.Processes = nil
	for _, p := range s.Processes {
		if !slices.Contains(ids, p.ID) {
			out.Processes = append(out.Processes, p)
		}
	}
	return out
}

func TestEvaluatorRateGuard(t *testing.T) {
	s := loadSnapshot(t, "sleepers.yaml")
	rules := mustParse(t, `rules:
  - {name: sleepers, info: SLEEP, busy: 2s, action: kill_query, dry_run: false, victims: all, max_kills_per_minute: 2}
`)
	c := &clock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := NewEvaluator(rules, Own{}, c.now)
	steps := []struct {
		advance time.Duration
		gone    []uint64
		want    []string
	}{
		{0, nil, []string{"sleepers kill 41", "sleepers kill 42", "sleepers rate_limited 43", "sleepers rate_limited 44", "sleepers rate_limited 45"}},
		{time.Second, []uint64{41, 42}, []string{}},
		{30 * time.Second, []uint64{41, 42}, []string{}},
		{30 * time.Second, []uint64{41, 42}, []string{"sleepers kill 43", "sleepers kill 44"}},
		{10 * time.Second, []uint64{41, 42, 43, 44}, []string{}},
		{51 * time.Second, []uint64{41, 42, 43, 44}, []string{"sleepers kill 45"}},
	}
	for i, st := range steps {
		c.t = c.t.Add(st.advance)
		got := summary(e.Evaluate(without(s, st.gone...)))
		if !slices.Equal(got, st.want) {
			t.Fatalf("step %d: %v, want %v", i, got, st.want)
		}
	}
}

func TestEvaluatorDryRunAndVictims(t *testing.T) {
	s := loadSnapshot(t, "sleepers.yaml")
	c := &clock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	t.Run("dry-run reports once", func(t *testing.T) {
		e := NewEvaluator(mustParse(t, "rules: [{name: d, busy: 2s, action: kill_connection, victims: all}]"), Own{}, c.now)
		got := summary(e.Evaluate(s))
		want := []string{"d dry_run 41", "d dry_run 42", "d dry_run 43", "d dry_run 44", "d dry_run 45"}
		if !slices.Equal(got, want) {
			t.Fatalf("%v, want %v", got, want)
		}
		c.t = c.t.Add(time.Second)
		if got := e.Evaluate(s); len(got) != 0 {
			t.Fatalf("reported again: %v", summary(got))
		}
		// A session that stops matching and matches again (a new
		// statement) is reported again.
		e.Evaluate(without(s, 43))
		if got := summary(e.Evaluate(s)); !slices.Equal(got, []string{"d dry_run 43"}) {
			t.Fatalf("after a new statement: %v", got)
		}
	})
	t.Run("oldest, one per evaluation", func(t *testing.T) {
		e := NewEvaluator(mustParse(t, "rules: [{name: o, busy: 2s, action: kill_query, dry_run: false}]"), Own{}, c.now)
		for i, want := range []string{"o kill 41", "o kill 42", "o kill 43"} {
			got := summary(e.Evaluate(s)) // the kill "fails": the session stays
			if !slices.Equal(got, []string{want}) {
				t.Fatalf("evaluation %d: %v, want %s", i, got, want)
			}
		}
	})
	t.Run("log action", func(t *testing.T) {
		e := NewEvaluator(mustParse(t, "rules: [{name: l, busy: 9s, action: log, dry_run: false, victims: all}]"), Own{}, c.now)
		if got := summary(e.Evaluate(s)); !slices.Equal(got, []string{"l log 41"}) {
			t.Fatalf("%v", got)
		}
	})
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown field", "rules:\n  - name: a\n    busy: 2s\n    kill: yes\n", `rules.yaml:4: rule "a": field "kill": unknown field`},
		{"invalid regex", "rules:\n  - name: a\n    info: 'SELECT ('\n", `rules.yaml:3: rule "a": field "info": invalid regular expression "SELECT ("`},
		{"bad duration", "rules:\n  - name: a\n    busy: soon\n", `rules.yaml:3: rule "a": field "busy": want a positive duration`},
		{"bad action", "rules:\n  - name: a\n    busy: 1s\n    action: nuke\n", `rules.yaml:4: rule "a": field "action"`},
		{"no condition", "rules:\n  - name: a\n    action: kill_query\n", `rules.yaml:2: rule "a": no condition`},
		{"no name", "rules:\n  - busy: 1s\n", `rules.yaml:2: rule without a name`},
		{"duplicate", "rules:\n  - {name: a, busy: 1s}\n  - {name: a, busy: 2s}\n", `rules.yaml:3: rule "a": name already used at line 2`},
		{"zero guard", "rules:\n  - {name: a, busy: 1s, max_kills_per_minute: 0}\n", `field "max_kills_per_minute"`},
		{"except field", "rules:\n  - name: a\n    busy: 1s\n    except: {groups: [x]}\n", `rules.yaml:4: rule "a": field "except.groups": unknown field`},
		{"unknown builtin", "rules:\n  - builtin: applier\n", `rules.yaml:2: rule "applier": field "builtin": unknown built-in rule "applier" (known: replica_applier_blocked)`},
		{"builtin field", "rules:\n  - builtin: replica_applier_blocked\n    busy: 1s\n", `rules.yaml:3: rule "replica_applier_blocked": field "busy": not a field of built-in rule`},
		{"builtin wait", "rules:\n  - {builtin: replica_applier_blocked, wait: 0s}\n", `field "wait": want a positive duration`},
		{"wait without builtin", "rules:\n  - {name: a, busy: 1s, wait: 5s}\n", `rule "a": field "wait": only for a built-in rule`},
		{"top level", "rule: []\n", `rules.yaml:1: unknown field "rule"`},
		{"yaml syntax", "rules: [\n", `watchdog: rules.yaml: yaml:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("rules.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if dbpilot.ErrorCode(err) != dbpilot.EINVALID {
				t.Errorf("code %s", dbpilot.ErrorCode(err))
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	r := mustParse(t, "rules:\n  - {name: a, busy: 30s}\n")[0]
	if r.Action != ActionLog || !r.DryRun || r.MaxKillsPerMinute != DefaultMaxKillsPerMinute || r.Victims != VictimsOldest || r.Role != RoleAny {
		t.Fatalf("defaults: %+v", r)
	}
	if r.Source != "rules.yaml:2" {
		t.Errorf("source %q", r.Source)
	}
}

func TestHostName(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5000": "127.0.0.1", "localhost": "localhost", "db1.example:3306": "db1.example",
		"[::1]:5000": "::1", "::1": "::1", "": "", "host:": "host:",
	} {
		if got := HostName(in); got != want {
			t.Errorf("HostName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("rules:\n  - {name: a, busy: 30s, info: '^SELECT', except: {users: [x]}}\n"))
	f.Add([]byte("rules: [{name: a, idle_in_trx: 1m, action: kill_connection, dry_run: false}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := Parse("f.yaml", data)
		if err == nil {
			for _, r := range rules {
				if r.Name == "" || r.MaxKillsPerMinute < 1 {
					t.Fatalf("accepted an invalid rule: %+v", r)
				}
			}
		}
	})
}

func TestApplierBlocked(t *testing.T) {
	base := loadSnapshot(t, "replica_applier_blocked.yaml")
	withMDL := func(ws ...MDLWait) Snapshot {
		s := base
		s.MDLKnown, s.MDL = true, ws
		return s
	}
	asPrimary := base
	asPrimary.Role = RolePrimary
	for _, tc := range []struct {
		name, rules    string
		snap           Snapshot
		want, excluded []string // "id" or "id reason-substring"
	}{
		{name: "heuristic: sessions on the table, older than the wait", rules: "rules: [{builtin: replica_applier_blocked, wait: 5s}]",
			snap: base, want: []string{"19 processlist heuristic", "15 running 20s on wd.t", "13 blocks replication applier 10 (Slave_worker) waiting 12s ≥ 5s"}},
		{name: "except", rules: "rules: [{builtin: replica_applier_blocked, wait: 5s, except: {users: [backup]}}]",
			snap: base, want: []string{"15", "13"}, excluded: []string{"19 except user backup"}},
		{name: "applier has not waited long enough", rules: "rules: [{builtin: replica_applier_blocked, wait: 15s}]", snap: base},
		{name: "primaries: never", rules: "rules: [{builtin: replica_applier_blocked, wait: 1s}]", snap: asPrimary},
		{name: "performance_schema names the blockers", rules: "rules: [{builtin: replica_applier_blocked, wait: 5s}]",
			snap: withMDL(MDLWait{10, 20, "wd", "t"}, MDLWait{10, 8, "wd", "t"}, MDLWait{18, 13, "wd", "t"}),
			want: []string{"20 holds a metadata lock on wd.t (performance_schema"}, excluded: []string{"8 replication thread"}},
		{name: "performance_schema without a blocker: heuristic", rules: "rules: [{builtin: replica_applier_blocked, wait: 5s}]",
			snap: withMDL(), want: []string{"19", "15", "13"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustParse(t, tc.rules)[0]
			ms, ex := r.Matches(tc.snap, Own{})
			check := func(what string, got []Match, want []string) {
				if len(got) != len(want) {
					t.Fatalf("%s: %v, want %v", what, describe(got), want)
				}
				for i, w := range want {
					id, reason, _ := strings.Cut(w, " ")
					g := got[i]
					if fmt.Sprint(g.Session.ID) != id || !strings.Contains(strings.Join(g.Reasons, "; "), reason) {
						t.Errorf("%s[%d]: %s, want %q", what, i, describe(got[i:i+1]), w)
					}
				}
			}
			check("matches", ms, tc.want)
			check("excluded", ex, tc.excluded)
		})
	}
	if !NeedsMDL(mustParse(t, "rules: [{name: a, busy: 1s}, {builtin: replica_applier_blocked}]"), base) ||
		NeedsMDL(mustParse(t, "rules: [{name: a, busy: 1s}]"), base) ||
		NeedsMDL(mustParse(t, "rules: [{builtin: replica_applier_blocked}]"), asPrimary) ||
		NeedsMDL(mustParse(t, "rules: [{builtin: replica_applier_blocked}]"), loadSnapshot(t, "replica.yaml")) {
		t.Error("NeedsMDL")
	}
}

func describe(ms []Match) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "[%d %s: %s] ", m.Session.ID, m.Decision, strings.Join(m.Reasons, "; "))
	}
	return b.String()
}

// TestApplierBlockedEvaluator: the wait counts from when the evaluator first
// saw the applier waiting (its processlist Time is the event's age), then
// the blockers are killed once each.
func TestApplierBlockedEvaluator(t *testing.T) {
	s := loadSnapshot(t, "replica_applier_blocked.yaml")
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := NewEvaluator(mustParse(t, "rules: [{builtin: replica_applier_blocked, wait: 5s, dry_run: false}]"), Own{}, func() time.Time { return now })
	if got := ev.Evaluate(s); len(got) != 0 {
		t.Fatalf("first sight of the waiting applier: %v, want nothing yet", summary(got))
	}
	now = now.Add(3 * time.Second)
	if got := ev.Evaluate(s); len(got) != 0 {
		t.Fatalf("seen waiting 3s: %v", summary(got))
	}
	now = now.Add(3 * time.Second)
	want := []string{"replica_applier_blocked kill 19", "replica_applier_blocked kill 15", "replica_applier_blocked kill 13"}
	if got := summary(ev.Evaluate(s)); !slices.Equal(got, want) {
		t.Fatalf("seen waiting 6s: %v, want %v", got, want)
	}
	if got := ev.Evaluate(s); len(got) != 0 {
		t.Fatalf("again: %v, want nothing (killed once)", summary(got))
	}
	if r := ev.Rules()[0]; r.Action != ActionKillConnection || r.Victims != VictimsAll || r.Role != RoleReplica || r.Name != BuiltinReplicaApplierBlocked {
		t.Errorf("built-in defaults: %+v", r)
	}
	if r := mustParse(t, "rules: [{builtin: replica_applier_blocked, name: mdl}]")[0]; r.Wait != DefaultApplierWait || !r.DryRun || r.Name != "mdl" {
		t.Errorf("built-in defaults: %+v", r)
	}
}

func TestApplierTables(t *testing.T) {
	for info, want := range map[string]string{
		"ALTER TABLE wd.t ADD COLUMN c INT":                      "wd.t",
		"alter online table `my db`.`t``x` engine=InnoDB":        "my db.t`x",
		"ALTER TABLE t ADD INDEX (v)":                            "app.t",
		"DROP TABLE IF EXISTS a, wd.b /* generated by server */": "app.a wd.b",
		"RENAME TABLE a TO a_old, b TO a":                        "app.a app.b",
		"TRUNCATE TABLE wd.t":                                    "wd.t",
		"CREATE INDEX i ON wd.t (v)":                             "wd.t",
		"OPTIMIZE TABLE t1, t2":                                  "app.t1 app.t2",
		"INSERT INTO wd.t VALUES (1)":                            "wd.t",
		"UPDATE t SET v = 1":                                     "app.t",
		"DELETE FROM `wd`.t WHERE id = 1":                        "wd.t",
		"CREATE DATABASE x":                                      "",
		"":                                                       "",
	} {
		var got []string
		for _, tb := range applierTables(info, "app") {
			got = append(got, tb.String())
		}
		if strings.Join(got, " ") != want {
			t.Errorf("applierTables(%q) = %v, want %s", info, got, want)
		}
	}
}
