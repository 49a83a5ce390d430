// Package mock has function-field mocks of dbpilot's root interfaces, in
// the manner of Ben Johnson's wtf: a test sets the functions it expects to
// be called; calling one that is not set panics, which shows an unexpected
// call. Mocks are safe for concurrent use when their functions are.
package mock

import (
	"context"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Inspector mocks dbpilot.Inspector. Forget (the daemon's probe also drops
// an instance that left its cluster) does nothing unless ForgetFn is set.
type Inspector struct {
	InspectFn func(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error)
	ForgetFn  func(key dbpilot.InstanceKey) error
}

var _ dbpilot.Inspector = (*Inspector)(nil)

func (m *Inspector) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	return m.InspectFn(ctx, key)
}

func (m *Inspector) Forget(key dbpilot.InstanceKey) error {
	if m.ForgetFn == nil {
		return nil
	}
	return m.ForgetFn(key)
}

// ReplicationController mocks dbpilot.ReplicationController and
// dbpilot.ReplicaPositioner.
type ReplicationController struct {
	InspectFn               func(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error)
	StopReplicaFn           func(ctx context.Context, key dbpilot.InstanceKey) error
	StartReplicaFn          func(ctx context.Context, key dbpilot.InstanceKey) error
	ResetReplicaAllFn       func(ctx context.Context, key dbpilot.InstanceKey) error
	ChangeSourceFn          func(ctx context.Context, key, source dbpilot.InstanceKey, opt dbpilot.ChangeSourceOptions) error
	SetReadOnlyFn           func(ctx context.Context, key dbpilot.InstanceKey, readOnly bool) error
	WaitForGTIDFn           func(ctx context.Context, key dbpilot.InstanceKey, pos string, timeout time.Duration) error
	KillClientConnectionsFn func(ctx context.Context, key dbpilot.InstanceKey) (int, error)
	SetSemiSyncFn           func(ctx context.Context, key dbpilot.InstanceKey, primary, replica bool) error
	SetReplicaPositionFn    func(ctx context.Context, key dbpilot.InstanceKey, pos string) error
}

var (
	_ dbpilot.ReplicationController = (*ReplicationController)(nil)
	_ dbpilot.ReplicaPositioner     = (*ReplicationController)(nil)
)

func (m *ReplicationController) Inspect(ctx context.Context, key dbpilot.InstanceKey) (*dbpilot.Instance, error) {
	return m.InspectFn(ctx, key)
}

func (m *ReplicationController) StopReplica(ctx context.Context, key dbpilot.InstanceKey) error {
	return m.StopReplicaFn(ctx, key)
}

func (m *ReplicationController) StartReplica(ctx context.Context, key dbpilot.InstanceKey) error {
	return m.StartReplicaFn(ctx, key)
}

func (m *ReplicationController) ResetReplicaAll(ctx context.Context, key dbpilot.InstanceKey) error {
	return m.ResetReplicaAllFn(ctx, key)
}

func (m *ReplicationController) ChangeSource(ctx context.Context, key, source dbpilot.InstanceKey, opt dbpilot.ChangeSourceOptions) error {
	return m.ChangeSourceFn(ctx, key, source, opt)
}

func (m *ReplicationController) SetReadOnly(ctx context.Context, key dbpilot.InstanceKey, readOnly bool) error {
	return m.SetReadOnlyFn(ctx, key, readOnly)
}

func (m *ReplicationController) WaitForGTID(ctx context.Context, key dbpilot.InstanceKey, pos string, timeout time.Duration) error {
	return m.WaitForGTIDFn(ctx, key, pos, timeout)
}

func (m *ReplicationController) KillClientConnections(ctx context.Context, key dbpilot.InstanceKey) (int, error) {
	return m.KillClientConnectionsFn(ctx, key)
}

func (m *ReplicationController) SetSemiSync(ctx context.Context, key dbpilot.InstanceKey, primary, replica bool) error {
	return m.SetSemiSyncFn(ctx, key, primary, replica)
}

func (m *ReplicationController) SetReplicaPosition(ctx context.Context, key dbpilot.InstanceKey, pos string) error {
	return m.SetReplicaPositionFn(ctx, key, pos)
}

// Liveness mocks the daemon's liveness sessions (daemon.Liveness).
type Liveness struct {
	HoldFn func(ctx context.Context, key dbpilot.InstanceKey, connected func()) error
}

func (m *Liveness) Hold(ctx context.Context, key dbpilot.InstanceKey, connected func()) error {
	return m.HoldFn(ctx, key, connected)
}

// Auditor mocks dbpilot.Auditor.
type Auditor struct {
	AuditFn func(ctx context.Context, e dbpilot.AuditEvent) error
}

var _ dbpilot.Auditor = (*Auditor)(nil)

func (m *Auditor) Audit(ctx context.Context, e dbpilot.AuditEvent) error { return m.AuditFn(ctx, e) }

// StateStore mocks dbpilot.StateStore.
type StateStore struct {
	AuditFn          func(ctx context.Context, e dbpilot.AuditEvent) error
	SaveInstancesFn  func(ctx context.Context, cluster string, instances []*dbpilot.Instance) error
	KnownInstancesFn func(ctx context.Context, cluster string, since time.Time) ([]*dbpilot.Instance, error)
	ForgetInstanceFn func(ctx context.Context, cluster string, key dbpilot.InstanceKey) error
	CreateRecoveryFn func(ctx context.Context, r *dbpilot.Recovery) error
	UpdateRecoveryFn func(ctx context.Context, r *dbpilot.Recovery) error
	RecoveriesFn     func(ctx context.Context, f dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error)
	AckRecoveriesFn  func(ctx context.Context, cluster, by, comment string) (int, error)
	AuditEventsFn    func(ctx context.Context, f dbpilot.AuditFilter) ([]dbpilot.AuditEvent, error)
	CloseFn          func() error
}

var _ dbpilot.StateStore = (*StateStore)(nil)

func (m *StateStore) Audit(ctx context.Context, e dbpilot.AuditEvent) error { return m.AuditFn(ctx, e) }

func (m *StateStore) SaveInstances(ctx context.Context, cluster string, instances []*dbpilot.Instance) error {
	return m.SaveInstancesFn(ctx, cluster, instances)
}

func (m *StateStore) KnownInstances(ctx context.Context, cluster string, since time.Time) ([]*dbpilot.Instance, error) {
	return m.KnownInstancesFn(ctx, cluster, since)
}

func (m *StateStore) ForgetInstance(ctx context.Context, cluster string, key dbpilot.InstanceKey) error {
	return m.ForgetInstanceFn(ctx, cluster, key)
}

func (m *StateStore) CreateRecovery(ctx context.Context, r *dbpilot.Recovery) error {
	return m.CreateRecoveryFn(ctx, r)
}

func (m *StateStore) UpdateRecovery(ctx context.Context, r *dbpilot.Recovery) error {
	return m.UpdateRecoveryFn(ctx, r)
}

func (m *StateStore) Recoveries(ctx context.Context, f dbpilot.RecoveryFilter) ([]*dbpilot.Recovery, error) {
	return m.RecoveriesFn(ctx, f)
}

func (m *StateStore) AckRecoveries(ctx context.Context, cluster, by, comment string) (int, error) {
	return m.AckRecoveriesFn(ctx, cluster, by, comment)
}

func (m *StateStore) AuditEvents(ctx context.Context, f dbpilot.AuditFilter) ([]dbpilot.AuditEvent, error) {
	return m.AuditEventsFn(ctx, f)
}

func (m *StateStore) Close() error { return m.CloseFn() }

// MetricSink mocks dbpilot.MetricSink.
type MetricSink struct {
	WriteFn func(ctx context.Context, b dbpilot.Batch) error
}

var _ dbpilot.MetricSink = (*MetricSink)(nil)

func (m *MetricSink) Write(ctx context.Context, b dbpilot.Batch) error { return m.WriteFn(ctx, b) }

// MetricsQuerier mocks dbpilot.MetricsQuerier.
type MetricsQuerier struct {
	QueryInstantFn func(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error)
	QueryRangeFn   func(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error)
}

var _ dbpilot.MetricsQuerier = (*MetricsQuerier)(nil)

func (m *MetricsQuerier) QueryInstant(ctx context.Context, expr string, t time.Time) ([]dbpilot.Series, error) {
	return m.QueryInstantFn(ctx, expr, t)
}

func (m *MetricsQuerier) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]dbpilot.Series, error) {
	return m.QueryRangeFn(ctx, expr, start, end, step)
}

// AlertStore mocks dbpilot.AlertStore.
type AlertStore struct {
	SaveAlertFn func(ctx context.Context, a *dbpilot.Alert) error
	AlertsFn    func(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error)
}

var _ dbpilot.AlertStore = (*AlertStore)(nil)

func (m *AlertStore) SaveAlert(ctx context.Context, a *dbpilot.Alert) error {
	return m.SaveAlertFn(ctx, a)
}

func (m *AlertStore) Alerts(ctx context.Context, f dbpilot.AlertFilter) ([]*dbpilot.Alert, error) {
	return m.AlertsFn(ctx, f)
}

// Coordinator is a dbpilot.Coordinator of function fields; a nil field
// answers: Member "self", no recovery, nil errors, an empty status.
type Coordinator struct {
	MemberFn         func() string
	LeadFn           func(cluster string) (dbpilot.Fence, error)
	CheckFn          func(ctx context.Context, f dbpilot.Fence) error
	LeaderOfFn       func(cluster string) (member, api string)
	OwnerFn          func(cluster string) (member, api string)
	PeersFn          func() []dbpilot.CoordMember
	BeginRecoveryFn  func(ctx context.Context, f dbpilot.Fence, rec *dbpilot.SharedRecovery) error
	UpdateRecoveryFn func(ctx context.Context, f dbpilot.Fence, rec *dbpilot.SharedRecovery) error
	RecoveryFn       func(ctx context.Context, cluster string) (*dbpilot.SharedRecovery, error)
	AckFn            func(ctx context.Context, cluster, by, comment string) error
	StatusFn         func(ctx context.Context) *dbpilot.CoordinationStatus
}

var _ dbpilot.Coordinator = (*Coordinator)(nil)

func (m *Coordinator) Member() string {
	if m.MemberFn == nil {
		return "self"
	}
	return m.MemberFn()
}

func (m *Coordinator) Lead(cluster string) (dbpilot.Fence, error) { return m.LeadFn(cluster) }

func (m *Coordinator) Check(ctx context.Context, f dbpilot.Fence) error {
	if m.CheckFn == nil {
		return nil
	}
	return m.CheckFn(ctx, f)
}

func (m *Coordinator) LeaderOf(cluster string) (string, string) {
	if m.LeaderOfFn == nil {
		return "", ""
	}
	return m.LeaderOfFn(cluster)
}

// Owner answers this serve (Member) when OwnerFn is nil: it observes
// every cluster, as before collection was shared.
func (m *Coordinator) Owner(cluster string) (string, string) {
	if m.OwnerFn == nil {
		return m.Member(), ""
	}
	return m.OwnerFn(cluster)
}

func (m *Coordinator) Peers() []dbpilot.CoordMember {
	if m.PeersFn == nil {
		return nil
	}
	return m.PeersFn()
}

func (m *Coordinator) BeginRecovery(ctx context.Context, f dbpilot.Fence, rec *dbpilot.SharedRecovery) error {
	if m.BeginRecoveryFn == nil {
		return nil
	}
	return m.BeginRecoveryFn(ctx, f, rec)
}

func (m *Coordinator) UpdateRecovery(ctx context.Context, f dbpilot.Fence, rec *dbpilot.SharedRecovery) error {
	if m.UpdateRecoveryFn == nil {
		return nil
	}
	return m.UpdateRecoveryFn(ctx, f, rec)
}

func (m *Coordinator) Recovery(ctx context.Context, cluster string) (*dbpilot.SharedRecovery, error) {
	if m.RecoveryFn == nil {
		return nil, nil
	}
	return m.RecoveryFn(ctx, cluster)
}

func (m *Coordinator) Ack(ctx context.Context, cluster, by, comment string) error {
	if m.AckFn == nil {
		return nil
	}
	return m.AckFn(ctx, cluster, by, comment)
}

func (m *Coordinator) Status(ctx context.Context) *dbpilot.CoordinationStatus {
	if m.StatusFn == nil {
		return &dbpilot.CoordinationStatus{}
	}
	return m.StatusFn(ctx)
}
