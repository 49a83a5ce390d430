package alert

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

// templateData is what a summary template sees: .Labels and .Value, also
// as $labels and $value.
type templateData struct {
	Labels map[string]string
	Value  float64
}

// templateDefs makes $labels and $value available, as in Prometheus; it has
// no newline so that template line numbers stay those of the text.
const templateDefs = `{{$labels := .Labels}}{{$value := .Value}}`

var templateFuncs = template.FuncMap{
	"humanize":           humanize,
	"humanizeDuration":   humanizeDuration,
	"humanizePercentage": humanizePercentage,
	"toUpper":            strings.ToUpper,
	"toLower":            strings.ToLower,
}

// newTemplate parses a summary template.
func newTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Option("missingkey=zero").Funcs(templateFuncs).Parse(templateDefs + text)
}

// parseTemplate parses the template of a YAML node and tries it on sample
// data; on failure it returns the file line of the problem and the problem.
func parseTemplate(name string, n *yaml.Node) (*template.Template, int, string) {
	t, err := newTemplate(name, n.Value)
	if err == nil {
		var b strings.Builder
		err = t.Execute(&b, templateData{Labels: map[string]string{"instance": "db1:3306"}, Value: 1})
	}
	if err == nil {
		return t, 0, ""
	}
	// "template: NAME:LINE: msg" or "template: NAME:LINE:COL: executing ..."
	msg := err.Error()
	line := 1
	if rest, ok := strings.CutPrefix(msg, "template: "+name+":"); ok {
		num, tail, _ := strings.Cut(rest, ":")
		if v, err := strconv.Atoi(num); err == nil {
			line = v
			if col, tail2, ok := strings.Cut(tail, ":"); ok {
				if _, err := strconv.Atoi(col); err == nil {
					tail = tail2
				}
			}
			msg = strings.TrimSpace(tail)
		}
	}
	fileLine := n.Line
	if n.Style&yaml.LiteralStyle != 0 {
		fileLine = n.Line + line
	}
	return nil, fileLine, "template: " + msg
}

// render expands a rule's summary; a failing template yields its text and
// the error.
func (r *Rule) render(labels map[string]string, value float64) (string, error) {
	if r.tmpl == nil {
		text := r.Summary
		if text == "" {
			text = defaultSummary
		}
		t, err := newTemplate(r.Name, text)
		if err != nil {
			return r.Summary, err
		}
		r.tmpl = t
	}
	var b strings.Builder
	if err := r.tmpl.Execute(&b, templateData{Labels: labels, Value: value}); err != nil {
		return r.Summary, err
	}
	return strings.TrimSpace(b.String()), nil
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case string:
		return strconv.ParseFloat(strings.TrimSpace(x), 64)
	case time.Duration:
		return x.Seconds(), nil
	}
	return 0, fmt.Errorf("cannot convert %T to a number", v)
}

// humanize formats a number with an SI prefix: 1234567 → 1.235M.
func humanize(v any) (string, error) {
	f, err := toFloat(v)
	if err != nil {
		return "", err
	}
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprintf("%.4g", f), nil
	}
	if math.Abs(f) >= 1 {
		prefix := ""
		for _, p := range []string{"k", "M", "G", "T", "P", "E", "Z", "Y"} {
			if math.Abs(f) < 1000 {
				break
			}
			prefix = p
			f /= 1000
		}
		return fmt.Sprintf("%.4g%s", f, prefix), nil
	}
	prefix := ""
	for _, p := range []string{"m", "u", "n", "p", "f", "a", "z", "y"} {
		if math.Abs(f) >= 1 {
			break
		}
		prefix = p
		f *= 1000
	}
	return fmt.Sprintf("%.4g%s", f, prefix), nil
}

// humanizeDuration formats seconds: 90061 → 1d 1h 1m 1s.
func humanizeDuration(v any) (string, error) {
	f, err := toFloat(v)
	if err != nil {
		return "", err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprintf("%.4g", f), nil
	}
	if math.Abs(f) < 1 {
		if f == 0 {
			return "0s", nil
		}
		return fmt.Sprintf("%.4gms", f*1000), nil
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	secs := int64(f)
	days, hours, mins := secs/86400, secs/3600%24, secs/60%60
	s := float64(secs%60) + (f - math.Floor(f))
	var parts []string
	if days > 0 {
		parts = append(parts, fmt.Sprintf("%dd", days))
	}
	if hours > 0 {
		parts = append(parts, fmt.Sprintf("%dh", hours))
	}
	if mins > 0 {
		parts = append(parts, fmt.Sprintf("%dm", mins))
	}
	if s > 0 || len(parts) == 0 {
		parts = append(parts, strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64)+"s")
	}
	return sign + strings.Join(parts, " "), nil
}

// humanizePercentage formats a ratio: 0.1234 → 12.34%.
func humanizePercentage(v any) (string, error) {
	f, err := toFloat(v)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%.4g%%", f*100), nil
}
