package dbpilot

import "context"

// AlertService lists alerts: those pending and firing now and the resolved
// ones kept as history. serve implements it, and so does httpapi.Client; a
// ClusterService that also implements it exposes GET /api/alerts.
type AlertService interface {
	// Alerts returns the alerts f selects, newest (latest ActiveAt) first.
	Alerts(ctx context.Context, f AlertFilter) ([]*Alert, error)
}
