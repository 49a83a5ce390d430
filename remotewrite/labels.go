package remotewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/dbpilot/dbpilot"
)

// series is one series a source has written: its labels, sorted by name
// as the protocol requires, and the time of its last queued sample.
type series struct {
	labels []label
	lastT  int64
	gen    uint32
}

// sourceKey names the producer of a batch.
type sourceKey struct {
	instance  dbpilot.InstanceKey
	collector string
}

// source holds the series of one (instance, collector), so that labels are
// built once per series and series that end get a staleness marker, as in
// the embedded store.
type source struct {
	cluster, role string
	gen           uint32
	lastT         int64              // time of the last batch
	series        map[string]*series // by seriesKey of name and sample labels
}

// reservedLabels are set by the pipeline; a sample label of the same name
// is kept as exported_<name>.
var reservedLabels = [...]string{"instance", "cluster", "role"}

// buildLabels returns a sample's series labels, sorted: __name__,
// instance, cluster, role and the sample's labels, with the embedded
// store's rules (classic names, empty values dropped, reserved names
// prefixed with exported_).
func buildLabels(name string, ls []dbpilot.Label, instance, cluster, role string) ([]label, error) {
	if !model.LegacyValidation.IsValidMetricName(name) {
		return nil, fmt.Errorf("invalid metric name %q", name)
	}
	out := make([]label, 0, len(ls)+4)
	out = append(out, label{Name: model.MetricNameLabel, Value: name}, label{Name: "instance", Value: instance})
	if cluster != "" {
		out = append(out, label{Name: "cluster", Value: cluster})
	}
	if role != "" {
		out = append(out, label{Name: "role", Value: role})
	}
	seen := make(map[string]bool, len(ls))
	for _, l := range ls {
		n := l.Name
		if !model.LegacyValidation.IsValidLabelName(n) || strings.HasPrefix(n, "__") {
			return nil, fmt.Errorf("%s: invalid label name %q", name, n)
		}
		if slices.Contains(reservedLabels[:], n) {
			n = "exported_" + n
		}
		if seen[n] {
			return nil, fmt.Errorf("%s: label %q given twice", name, l.Name)
		}
		seen[n] = true
		if l.Value == "" { // an empty label is no label
			continue
		}
		out = append(out, label{Name: n, Value: strings.ToValidUTF8(l.Value, "\uFFFD")})
	}
	slices.SortFunc(out, func(a, b label) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// sortedLabels returns ls sorted by name: in dst if ls is not sorted
// already, else ls itself.
func sortedLabels(dst, ls []dbpilot.Label) []dbpilot.Label {
	cmp := func(a, b dbpilot.Label) int { return strings.Compare(a.Name, b.Name) }
	if slices.IsSortedFunc(ls, cmp) {
		return ls
	}
	dst = append(dst, ls...)
	slices.SortStableFunc(dst, cmp)
	return dst
}
