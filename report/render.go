package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"time"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"when":   when,
	"clock":  clock,
	"iso":    iso,
	"offset": offset,
	"dur":    dur,
	"ms":     fmtMS,
	"rate":   func(v float64) string { return formatValue(v, "") },
	"zero":   func(t time.Time) bool { return t.IsZero() },
	"css":    func() template.CSS { return template.CSS(pageCSS) },
	"exact":  exactMS,
	"msOf":   func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) },
}).Parse(pageHTML))

// Render writes r as one HTML document.
func Render(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, r); err != nil {
		return fmt.Errorf("report: render recovery %d: %w", r.Recovery.ID, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// HTML builds and renders the report of in.
func HTML(in *Input) ([]byte, error) {
	var buf bytes.Buffer
	if err := Render(&buf, Build(in)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// when formats a time in UTC with milliseconds ("—" for none).
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000") + " UTC"
}

// clock is a time of day in UTC with milliseconds.
func clock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("15:04:05.000")
}

// iso is a time for a datetime attribute (RFC 3339, nanoseconds).
func iso(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// offset formats a time relative to the first symptom, to the
// millisecond: "+1.234 s", "−0.250 s", "+2 min 5.120 s".
func offset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	return sign + dur(d)
}

// dur formats a duration to the millisecond: "0.052 s", "12.345 s",
// "2 min 5.120 s", "1 h 2 min".
func dur(d time.Duration) string {
	if d < 0 {
		return "−" + dur(-d)
	}
	d = d.Round(time.Millisecond)
	switch {
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + " s"
	case d < time.Hour:
		m := d / time.Minute
		return fmt.Sprintf("%d min %s s", m, strconv.FormatFloat((d-m*time.Minute).Seconds(), 'f', 3, 64))
	}
	h := d / time.Hour
	return fmt.Sprintf("%d h %d min", h, int64(math.Round(float64(d-h*time.Hour)/float64(time.Minute))))
}

// exactMS is milliseconds to the microsecond, for data attributes.
func exactMS(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
