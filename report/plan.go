package report

import (
	"regexp"
	"strings"

	"github.com/dbpilot/dbpilot"
)

// Decision is the recovery's plan: the candidate chosen and why, every
// candidate considered, and the steps planned.
type Decision struct {
	// Headline is the plan's first line ("failover of dead primary …").
	Headline string
	// Chosen is the candidate promoted ("" when none was); Reason why it
	// won (or why none was promoted).
	Chosen, Reason string
	Candidates     []Candidate
	// Steps are the plan's other lines (catch-up, repoint, lost).
	Steps []string
	// Text is the plan as recorded, shown whole when it could not be read
	// into the fields above (Parsed false).
	Text   string
	Parsed bool
	// Replans counts the plans made again after a candidate failed
	// (candidate-failed events) and Plans their texts, in order.
	Replans int
	Plans   []string
}

// Candidate is one replica considered for promotion.
type Candidate struct {
	Key      string
	Eligible bool
	Rule     string
	Received string
	Notes    []string
	Chosen   bool
}

// candidateLine is a candidate's line of recovery.Plan.String():
// "  KEY  eligible|not eligible  RULE  received POS".
var candidateLine = regexp.MustCompile(`^  (\S+)\s+(not eligible|eligible)\s+(?:(\S+)\s+)?received (.*)$`)

// decision reads the recovery's plan back (recovery.Plan.String()'s text,
// in Recovery.Plan and in each plan event).
func decision(rec dbpilot.Recovery, events []dbpilot.AuditEvent) Decision {
	d := Decision{Text: strings.TrimRight(rec.Plan, "\n")}
	for _, e := range events {
		switch e.Event {
		case dbpilot.AuditPlan:
			if p := e.Detail["plan"]; p != "" {
				d.Plans = append(d.Plans, strings.TrimRight(p, "\n"))
			}
		case dbpilot.AuditCandidateFailed:
			d.Replans++
		}
	}
	text := d.Text
	if n := len(d.Plans); n > 0 && text == "" {
		text = d.Plans[n-1]
		d.Text = text
	}
	if text == "" {
		return d
	}
	lines := strings.Split(text, "\n")
	d.Headline = lines[0]
	if len(lines) < 2 {
		return d
	}
	switch head := lines[1]; {
	case strings.HasPrefix(head, "promote "):
		key, reason, ok := strings.Cut(strings.TrimPrefix(head, "promote "), ": ")
		if !ok {
			return d
		}
		d.Chosen, d.Reason = key, reason
	case strings.HasPrefix(head, "no replica promoted: "):
		d.Reason = strings.TrimPrefix(head, "no replica promoted: ")
	default:
		return d
	}
	inCandidates := false
	for _, l := range lines[2:] {
		switch {
		case l == "":
			inCandidates = false
		case l == "candidates, best first:":
			inCandidates = true
		case inCandidates && strings.HasPrefix(l, "      - ") && len(d.Candidates) > 0:
			c := &d.Candidates[len(d.Candidates)-1]
			c.Notes = append(c.Notes, strings.TrimPrefix(l, "      - "))
		case inCandidates:
			m := candidateLine.FindStringSubmatch(l)
			if m == nil {
				return d
			}
			d.Candidates = append(d.Candidates, Candidate{Key: m[1], Eligible: m[2] == "eligible", Rule: m[3],
				Received: m[4], Chosen: m[1] == d.Chosen})
		default:
			d.Steps = append(d.Steps, l)
		}
	}
	d.Parsed = true
	return d
}
