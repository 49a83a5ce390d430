package alert

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/dbpilot/dbpilot"
)

// Severities.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Rule is one alerting rule.
type Rule struct {
	// Name is the alert's name ("alert:" in the file), unique in a rule set.
	Name string
	// Group is the name of the rule's group ("" for a top-level rule).
	Group string
	// Expr is the PromQL condition: every series it returns is an alert.
	Expr string
	// For is how long the condition must hold before the alert fires; until
	// then the alert is pending.
	For time.Duration
	// Severity is critical, warning or info.
	Severity string
	// Summary is a text/template rendered with $labels (the alert's labels)
	// and $value (the series' value), as in Prometheus.
	Summary string
	// Labels are added to the labels of every alert of the rule.
	Labels map[string]string
	// File and Line say where the rule is defined (empty for rules built in
	// code).
	File string
	Line int

	tmpl *template.Template // Summary, parsed by check
}

//go:embed rules.yaml
var defaultRules []byte

// DefaultRules returns dbpilot's built-in rules (rules.yaml in this package),
// written for the metric names of dbpilot's collectors (mysqld_exporter's
// where a counterpart exists).
func DefaultRules() []Rule {
	rules, err := ParseRules("built-in rules.yaml", defaultRules)
	if err != nil {
		panic(err) // tested
	}
	return rules
}

// LoadRules reads and checks a rule file.
func LoadRules(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, dbpilot.WrapError(dbpilot.EINVALID, err, "alert rules")
	}
	return ParseRules(path, data)
}

// FileError is one problem of a rule file.
type FileError struct {
	File string
	Line int    // 0 when unknown
	Rule string // "" outside a rule
	Msg  string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, ": rule %q", e.Rule)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// FileErrors are every problem found in a rule file, in file order.
type FileErrors []*FileError

// Error lists the problems, one a line.
func (es FileErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// ParseRules parses and checks a Prometheus-style rule file; name is the
// file's name in errors. The file has a list of groups, each with a name and
// rules, or a top-level list of rules, or both:
//
//	groups:
//	  - name: mysql
//	    rules:
//	      - alert: ReplicationIOStopped
//	        expr: mysql_slave_status_slave_io_running == 0
//	        for: 10s
//	        severity: critical
//	        summary: "replication IO thread stopped on {{ $labels.instance }}"
//
// A rule has alert, expr, and optionally for (default 0: fire at once),
// severity (critical, warning or info; default warning), summary, and, as in
// Prometheus files, labels (static; labels.severity may stand for severity)
// and annotations (annotations.summary or .description may stand for
// summary; other annotations are checked and ignored).
//
// Every problem is reported, each as FILE:LINE: rule "NAME": what; the error
// is EINVALID with FileErrors as its cause.
func ParseRules(name string, data []byte) ([]Rule, error) {
	p := &ruleParser{file: name, seen: map[string]int{}, groups: map[string]int{}}
	p.parse(data)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b *FileError) int { return a.Line - b.Line })
		return nil, &dbpilot.Error{Code: dbpilot.EINVALID, Err: p.errs}
	}
	return p.rules, nil
}

type ruleParser struct {
	file   string
	rules  []Rule
	errs   FileErrors
	seen   map[string]int // rule name → line
	groups map[string]int // group name → line
}

func (p *ruleParser) errorf(line int, rule, format string, args ...any) {
	p.errs = append(p.errs, &FileError{File: p.file, Line: line, Rule: rule, Msg: fmt.Sprintf(format, args...)})
}

func (p *ruleParser) parse(data []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlErrorLine(err)
		p.errorf(line, "", "%s", msg)
		return
	}
	if len(doc.Content) == 0 {
		return // empty file
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root.Line, "", "want a mapping with groups: or rules:, got %s", kindName(root))
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "groups":
			if isNull(v) {
				continue
			}
			if v.Kind != yaml.SequenceNode {
				p.errorf(v.Line, "", "groups: want a list of groups, got %s", kindName(v))
				continue
			}
			for _, g := range v.Content {
				p.group(g)
			}
		case "rules":
			p.ruleList("", v)
		default:
			p.errorf(k.Line, "", "unknown key %q (known: groups, rules)", k.Value)
		}
	}
}

func (p *ruleParser) group(g *yaml.Node) {
	if g.Kind != yaml.MappingNode {
		p.errorf(g.Line, "", "groups: want a group (name:, rules:), got %s", kindName(g))
		return
	}
	var name string
	var rules *yaml.Node
	for i := 0; i+1 < len(g.Content); i += 2 {
		k, v := g.Content[i], g.Content[i+1]
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				p.errorf(v.Line, "", "group name: want a non-empty string")
				continue
			}
			name = v.Value
		case "rules":
			rules = v
		default:
			p.errorf(k.Line, "", "group: unknown key %q (known: name, rules)", k.Value)
		}
	}
	if name == "" {
		p.errorf(g.Line, "", "group without a name")
	} else if first, dup := p.groups[name]; dup {
		p.errorf(g.Line, "", "duplicate group %q (first at line %d)", name, first)
	} else {
		p.groups[name] = g.Line
	}
	if rules != nil {
		p.ruleList(name, rules)
	}
}

func (p *ruleParser) ruleList(group string, v *yaml.Node) {
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(v.Line, "", "rules: want a list of rules, got %s", kindName(v))
		return
	}
	for i, n := range v.Content {
		p.rule(group, i+1, n)
	}
}

var ruleKeys = []string{"alert", "expr", "for", "severity", "summary", "labels", "annotations"}

// nameRE is what an alert name may be (it is also a label value and a CLI
// word).
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// labelNameRE is a Prometheus label name.
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// rule reads one rule of a list, phase by phase, reporting every problem:
// its fields, its name (first, so that later errors can name the rule), its
// keys and the name's uniqueness, expr:, for:, labels and severity, and the
// summary. The rule is added even with problems (ParseRules then returns
// none); a recording rule is not.
func (p *ruleParser) rule(group string, index int, n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "", "rule #%d: want a mapping (alert:, expr:, ...), got %s", index, kindName(n))
		return
	}
	c := &ruleCheck{p: p, index: index, node: n, r: Rule{Group: group, File: p.file, Line: n.Line}}
	c.collectFields()
	if !c.name() {
		return
	}
	c.unknownKeys()
	c.uniqueName()
	c.expr()
	c.forDuration()
	c.severity(c.labels())
	c.summary(c.annotations(c.fields["summary"]))
	p.rules = append(p.rules, c.r)
}

// ruleCheck is one rule being read.
type ruleCheck struct {
	p      *ruleParser
	index  int        // the rule's 1-based place in its list, naming it in errors until its name is known
	node   *yaml.Node // the rule's mapping
	fields map[string]*yaml.Node
	label  string // the name as written ("" when none), naming the rule in errors
	r      Rule
}

// errorf reports a problem of the rule, named by its name, else by its
// place in the list.
func (c *ruleCheck) errorf(line int, format string, args ...any) {
	if c.label == "" {
		c.p.errorf(line, "", "rule #%d: "+format, append([]any{c.index}, args...)...)
		return
	}
	c.p.errorf(line, c.label, format, args...)
}

// collectFields maps the rule's keys to their values; a key given twice is
// reported and its last value kept.
func (c *ruleCheck) collectFields() {
	n := c.node
	c.fields = map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := c.fields[k.Value]; dup {
			c.p.errorf(k.Line, "", "rule #%d: %s given twice", c.index, k.Value)
		}
		c.fields[k.Value] = v
	}
}

// name reads alert:, the rule's name, and keeps it as written to name the
// rule in later errors, even when it is invalid. It returns false for a
// recording rule (reported), which is skipped.
func (c *ruleCheck) name() bool {
	p, n, index := c.p, c.node, c.index
	if v, ok := c.fields["alert"]; ok {
		switch {
		case v.Kind != yaml.ScalarNode || v.Value == "":
			p.errorf(v.Line, "", "rule #%d: alert: want a name", index)
		case !nameRE.MatchString(v.Value):
			p.errorf(v.Line, v.Value, "alert: invalid name (letters, digits and _, not starting with a digit)")
		default:
			c.r.Name = v.Value
		}
		c.label = v.Value
	} else if _, rec := c.fields["record"]; rec {
		p.errorf(n.Line, "", "rule #%d: recording rules are not supported (want alert:)", index)
		return false
	} else {
		p.errorf(n.Line, "", "rule #%d: missing alert: (the alert's name)", index)
	}
	return true
}

// unknownKeys reports the keys a rule does not have, in file order.
func (c *ruleCheck) unknownKeys() {
	n := c.node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(ruleKeys, k.Value) {
			c.errorf(k.Line, "unknown key %q (known: %s)", k.Value, strings.Join(ruleKeys, ", "))
		}
	}
}

// uniqueName reports a name defined earlier in the file, else records it.
func (c *ruleCheck) uniqueName() {
	if c.r.Name == "" {
		return
	}
	if first, dup := c.p.seen[c.r.Name]; dup {
		c.errorf(c.node.Line, "duplicate alert name (first defined at line %d)", first)
	} else {
		c.p.seen[c.r.Name] = c.node.Line
	}
}

// expr reads expr:, which must be a PromQL instant vector or scalar.
func (c *ruleCheck) expr() {
	v, ok := c.fields["expr"]
	if !ok {
		c.errorf(c.node.Line, "missing expr:")
		return
	}
	if v.Kind != yaml.ScalarNode || strings.TrimSpace(v.Value) == "" {
		c.errorf(v.Line, "expr: want a PromQL expression")
		return
	}
	c.r.Expr = v.Value
	if line, msg := checkExpr(v, v.Value); msg != "" {
		c.errorf(line, "expr: %s", msg)
	}
}

// forDuration reads for: (0 when absent).
func (c *ruleCheck) forDuration() {
	v, ok := c.fields["for"]
	if !ok {
		return
	}
	d, err := parseDuration(v)
	if err != nil {
		c.errorf(v.Line, "for: %v", err)
	}
	c.r.For = d
}

// labels reads labels:, static label values; labels.severity stands for
// severity:. It returns the line of the severity found there, else the
// rule's line, for severity to report a bad one.
func (c *ruleCheck) labels() (sevLine int) {
	sevLine = c.node.Line
	v, ok := c.fields["labels"]
	if !ok {
		return sevLine
	}
	switch {
	case isNull(v):
	case v.Kind != yaml.MappingNode:
		c.errorf(v.Line, "labels: want a mapping of label names to values, got %s", kindName(v))
	default:
		c.r.Labels = map[string]string{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			lk, lv := v.Content[i], v.Content[i+1]
			switch {
			case !labelNameRE.MatchString(lk.Value) || strings.HasPrefix(lk.Value, "__"):
				c.errorf(lk.Line, "labels: invalid label name %q", lk.Value)
			case lv.Kind != yaml.ScalarNode:
				c.errorf(lv.Line, "labels: %s: want a string", lk.Value)
			case strings.Contains(lv.Value, "{{"):
				c.errorf(lv.Line, "labels: %s: templates in labels are not supported", lk.Value)
			case lk.Value == "severity":
				c.r.Severity, sevLine = lv.Value, lv.Line
			default:
				c.r.Labels[lk.Value] = lv.Value
			}
		}
		if len(c.r.Labels) == 0 {
			c.r.Labels = nil
		}
	}
	return sevLine
}

// severity reads severity:, which must agree with labels.severity, and
// checks the rule's severity (warning when neither gives one); sevLine is
// where labels gave it.
func (c *ruleCheck) severity(sevLine int) {
	if v, ok := c.fields["severity"]; ok {
		sevLine = v.Line
		if v.Kind != yaml.ScalarNode {
			c.errorf(v.Line, "severity: want critical, warning or info, got %s", kindName(v))
		} else if c.r.Severity != "" && v.Value != c.r.Severity {
			c.errorf(v.Line, "severity: %q differs from labels.severity %q", v.Value, c.r.Severity)
		}
		c.r.Severity = v.Value
	}
	switch c.r.Severity {
	case "":
		c.r.Severity = SeverityWarning
	case SeverityCritical, SeverityWarning, SeverityInfo:
	default:
		c.errorf(sevLine, "severity: %q is not critical, warning or info", c.r.Severity)
	}
}

// annotations checks annotations: and returns the summary's node: summary
// (summary:, nil when absent), else annotations.summary, else
// annotations.description. Other annotations must be valid templates and
// are otherwise ignored.
func (c *ruleCheck) annotations(summary *yaml.Node) *yaml.Node {
	v, ok := c.fields["annotations"]
	if !ok {
		return summary
	}
	switch {
	case isNull(v):
	case v.Kind != yaml.MappingNode:
		c.errorf(v.Line, "annotations: want a mapping, got %s", kindName(v))
	default:
		var desc *yaml.Node
		for i := 0; i+1 < len(v.Content); i += 2 {
			ak, av := v.Content[i], v.Content[i+1]
			if av.Kind != yaml.ScalarNode {
				c.errorf(av.Line, "annotations: %s: want a string", ak.Value)
				continue
			}
			switch ak.Value {
			case "summary":
				if summary != nil {
					c.errorf(ak.Line, "annotations: summary: the summary is given twice (summary: and annotations.summary)")
					continue
				}
				summary = av
			case "description":
				desc = av
			default:
				if _, line, msg := parseTemplate(c.label, av); msg != "" {
					c.errorf(line, "annotations: %s: %s", ak.Value, msg)
				}
			}
		}
		if summary == nil {
			summary = desc
		} else if desc != nil {
			if _, line, msg := parseTemplate(c.label, desc); msg != "" {
				c.errorf(line, "annotations: description: %s", msg)
			}
		}
	}
	return summary
}

// summary parses the summary template of node (nil: none, the default
// summary).
func (c *ruleCheck) summary(node *yaml.Node) {
	if node != nil {
		if node.Kind != yaml.ScalarNode {
			c.errorf(node.Line, "summary: want a string, got %s", kindName(node))
		} else {
			c.r.Summary = node.Value
			t, line, msg := parseTemplate(c.label, node)
			if msg != "" {
				c.errorf(line, "summary: %s", msg)
			}
			c.r.tmpl = t
		}
	}
	if c.r.Summary == "" {
		c.r.Summary = defaultSummary
		c.r.tmpl, _ = newTemplate(c.label, c.r.Summary)
	}
}

// defaultSummary is the summary of a rule without one.
const defaultSummary = `{{ $labels.instance }}: value {{ $value }}`

// checkExpr parses a PromQL expression and returns the file line of a
// problem and the problem ("" when none).
func checkExpr(n *yaml.Node, expr string) (int, string) {
	// Without the block scalar's final newline an error at the end points
	// into the last line.
	expr = strings.TrimRight(expr, " \t\r\n")
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		var pe parser.ParseErrors
		var one *parser.ParseErr
		switch {
		case errors.As(err, &pe) && len(pe) > 0:
			one = &pe[0]
		case errors.As(err, &one):
		default:
			return n.Line, "parse error: " + err.Error()
		}
		line, col := position(expr, int(one.PositionRange.Start))
		fileLine := n.Line
		if n.Style&yaml.LiteralStyle != 0 {
			// A block scalar's text starts on the line after its indicator.
			fileLine = n.Line + line
		} else if line > 1 {
			col = int(one.PositionRange.Start) + 1 // folded: count in the expression
		}
		return fileLine, fmt.Sprintf("parse error at char %d: %v", col, one.Err)
	}
	switch e.Type() {
	case parser.ValueTypeVector, parser.ValueTypeScalar:
	default:
		return n.Line, fmt.Sprintf("the expression is a %s; an alert needs an instant vector", parser.DocumentedType(e.Type()))
	}
	return 0, ""
}

var promqlParser = parser.NewParser(parser.Options{})

// position returns the 1-based line and column of byte offset pos in s.
func position(s string, pos int) (line, col int) {
	pos = max(0, min(pos, len(s)))
	line = 1 + strings.Count(s[:pos], "\n")
	col = pos - strings.LastIndexByte(s[:pos], '\n')
	return line, col
}

// parseDuration reads a `for:` value: a Go duration (1m30s, 500ms) or a
// Prometheus one (1d, 1w, 2h30m).
func parseDuration(n *yaml.Node) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.Tag != "!!int" {
		return 0, fmt.Errorf("want a duration such as 30s, got %s", kindName(n))
	}
	s := strings.TrimSpace(n.Value)
	if s == "0" {
		return 0, nil
	}
	if n.Tag == "!!int" {
		return 0, fmt.Errorf("%q has no unit: want a duration such as %ss", s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		d, err = promDuration(s)
	}
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a duration such as 30s, 5m or 1h", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}

var promDurationRE = regexp.MustCompile(`^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$`)

// promDuration parses Prometheus' duration format, which has d, w and y.
func promDuration(s string) (time.Duration, error) {
	m := promDurationRE.FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, errors.New("invalid duration")
	}
	units := []time.Duration{365 * 24 * time.Hour, 7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond}
	var d time.Duration
	for i, u := range units {
		if m[i+1] == "" {
			continue
		}
		v, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || v > int64((1<<63-1)/u) || d > (1<<63-1)-time.Duration(v)*u {
			return 0, errors.New("duration out of range")
		}
		d += time.Duration(v) * u
	}
	return d, nil
}

// yamlErrorLine pulls the line out of a yaml.v3 error ("yaml: line 3: ...").
func yamlErrorLine(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = strings.TrimPrefix(te.Errors[0], "yaml: ")
	}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, tail, ok := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); ok && err == nil {
			return n, tail
		}
	}
	return 0, msg
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!int", "!!float":
			return "a number " + n.Value
		case "!!bool":
			return "a boolean " + n.Value
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "a document"
}
