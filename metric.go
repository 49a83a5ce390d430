package dbpilot

import (
	"context"
	"time"
)

// MetricType says how a sample's value behaves over time.
type MetricType uint8

// Metric types, as in Prometheus.
const (
	Gauge   MetricType = iota // a value that goes up and down
	Counter                   // a monotonically increasing total; rates are derived at query time
)

// Label is one metric label.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Sample is one value a collector read. Names follow Prometheus'
// mysqld_exporter wherever a counterpart exists (mysql_global_status_*,
// mysql_global_variables_*, mysql_slave_status_*), so that existing
// dashboards and alert rules work; dbpilot's own use the mysql_ prefix and
// are documented in docs/monitoring.md.
type Sample struct {
	Name string `json:"name"`
	// Labels are the metric's own labels (channel, command, state, ...);
	// instance, cluster and role are added by the pipeline.
	Labels []Label    `json:"labels,omitempty"`
	Value  float64    `json:"value"`
	Type   MetricType `json:"type"`
	Help   string     `json:"help,omitempty"`
	// FromZero marks the first sample of a counter the collector left out
	// while it read 0 (an idle counter): a sink writes a 0 at the source's
	// previous write before it, so that rates count the first events.
	FromZero bool `json:"from_zero,omitempty"`
}

// MonitorTarget is one instance metrics are collected from, with what
// collectors need to know of its place in the topology.
type MonitorTarget struct {
	Key     InstanceKey
	Flavor  Flavor
	Version Version
	// Role is primary, replica, intermediate or standalone, as serve's
	// topology decided; collectors such as the heartbeat writer depend on it.
	Role string
	// ServerID is the instance's server_id; PrimaryServerID the server_id of
	// the primary of its cluster (0 when unknown), for heartbeat lag.
	ServerID        uint32
	PrimaryServerID uint32
	// PrimaryKey is the address of the cluster's primary (zero when
	// unknown): the heartbeat collector compares a replica's newest
	// heartbeat with the newest one it saw on that server.
	PrimaryKey InstanceKey
}

// Batch is the output of one run of one collector on one instance.
type Batch struct {
	Instance  InstanceKey `json:"instance"`
	Cluster   string      `json:"cluster"`
	Role      string      `json:"role"` // primary, replica, intermediate, standalone
	Collector string      `json:"collector"`
	Time      time.Time   `json:"time"`
	// Took is how long the collection took; Slow is set when it took longer
	// than 10% of the collector's interval (the sample is still stored).
	Took time.Duration `json:"took_ns"`
	Slow bool          `json:"slow,omitempty"`
	// Partial marks a batch with only some of the collector's series (the
	// every-second run of global_status): sinks keep the series missing
	// from it, where a complete batch ends them (staleness).
	Partial bool     `json:"partial,omitempty"`
	Samples []Sample `json:"samples"`
}

// MetricSink receives collected batches (the embedded time-series store,
// a remote-write adapter later).
type MetricSink interface {
	Write(ctx context.Context, b Batch) error
}

// Point is one value of a series at one time.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Series is a labelled list of points (one point for an instant query).
type Series struct {
	Labels map[string]string `json:"labels"`
	Points []Point           `json:"points"`
}

// MetricsQuerier answers PromQL queries over stored metrics.
type MetricsQuerier interface {
	QueryInstant(ctx context.Context, expr string, t time.Time) ([]Series, error)
	QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error)
}

// Alert states.
const (
	AlertPending  = "pending"
	AlertFiring   = "firing"
	AlertResolved = "resolved"
)

// Alert is one alert instance: a rule and the labels of the series that
// matched it.
type Alert struct {
	ID         int64             `json:"id"`
	Rule       string            `json:"rule"`
	Severity   string            `json:"severity"`
	State      string            `json:"state"`
	Labels     map[string]string `json:"labels"` // instance, cluster, role, and the series' labels
	Summary    string            `json:"summary"`
	Value      float64           `json:"value"`
	ActiveAt   time.Time         `json:"active_at"`            // when the condition first held
	FiredAt    time.Time         `json:"fired_at,omitzero"`    // when it held for the rule's `for`
	ResolvedAt time.Time         `json:"resolved_at,omitzero"` // when it stopped holding
	// Suppressed says why a replica alert is held back (its primary is down,
	// a recovery runs); suppressed alerts are not notified.
	Suppressed string `json:"suppressed,omitempty"`
}

// AlertFilter selects alerts; zero fields match everything.
type AlertFilter struct {
	Cluster string
	State   string // pending, firing, resolved
	Since   time.Time
	// FiringAt selects the alerts firing at that instant: fired at or
	// before it, and not resolved by then (zero: any).
	FiringAt time.Time
	Limit    int // 0: 500
}

// AlertStore keeps alert states across restarts (the sqlite package).
type AlertStore interface {
	SaveAlert(ctx context.Context, a *Alert) error // inserts (sets ID) or updates by ID
	Alerts(ctx context.Context, f AlertFilter) ([]*Alert, error)
}

// AppendSeriesKey appends to dst a key that identifies the series name{ls}
// (ls sorted by name) among those of one source: the metrics store and the
// remote-write sink keep their series by it.
func AppendSeriesKey(dst []byte, name string, ls []Label) []byte {
	dst = append(dst, name...)
	for _, l := range ls {
		dst = append(dst, 0xff)
		dst = append(dst, l.Name...)
		dst = append(dst, 0xfe)
		dst = append(dst, l.Value...)
	}
	return dst
}
