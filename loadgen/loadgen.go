// Package loadgen is `dbpilot bench`: an open-loop load generator for MySQL
// and MariaDB whose latency is measured from each transaction's intended
// start (no coordinated omission), with sysbench's OLTP workloads and
// LinkBench's social-graph workload, HDR histograms per operation and per
// interval, and reports.
//
// The pieces, one file each:
//
//	schedule.go   arrival times: constant or Poisson, rate schedules and ramps
//	runner.go     the run: a scheduler handing intended starts to a pool of
//	              connections (open loop), or N threads back to back (closed
//	              loop); backlog and busy connections; intervals
//	histogram.go  HDR histograms per operation, merged across intervals
//	result.go     interval and summary records, JSON and CSV
//	oltp.go       sysbench's oltp_* workloads (schema and statement mix)
//	linkbench.go  LinkBench's graph workload (schema, operation mix, power-law ids)
//	marker.go     the marker table: what prepare created, so cleanup drops
//	              only that
//	report.go     the HTML report and PNG charts
package loadgen

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// Workload is one benchmark: its schema and data (Prepare, Cleanup) and the
// transactions a client runs.
type Workload interface {
	// Name is the workload's name on the command line (oltp_read_write,
	// linkbench, ...).
	Name() string
	// Ops names the operations a transaction can be, in a fixed order: a
	// Client reports the index of the one it ran. oltp_* workloads have
	// one operation (the workload's transaction); linkbench has one per
	// LinkBench operation (get_node, add_link, ...).
	Ops() []string
	// Prepare creates the schema and loads the data with opt.Parallel
	// connections of db, recording what it created in the marker table.
	// Tables that exist already are refused unless opt.Force.
	Prepare(ctx context.Context, db *sql.DB, opt PrepareOptions) error
	// Cleanup drops what Prepare created (as the marker table lists it),
	// nothing else.
	Cleanup(ctx context.Context, db *sql.DB) error
	// NewClient returns the state of one connection's client, seeded so
	// that runs can be repeated.
	NewClient(seed int64) Client
}

// Client chooses and runs a workload's transactions. The runner asks Next
// for the operation of the next transaction (so that it can send reads to
// replicas), then Run executes it on a connection. A Client is used by one
// goroutine at a time.
type Client interface {
	// Next picks the next transaction's operation: its index in
	// Workload.Ops and whether it writes.
	Next() (op int, write bool)
	// Run executes one transaction of operation op on conn. A write
	// transaction with a non-nil ledger also runs InsertSQL(ledger.Next())
	// inside the transaction and calls ledger.Ack with that id once the
	// commit succeeded. Run returns the first error; the runner classifies
	// it and may replace conn.
	Run(ctx context.Context, conn Conn, op int, ledger *Ledger) error
}

// Conn is one connection of a run as a workload's client uses it; in
// dbpilot a mysql.WireConn (the client protocol without database/sql, its
// socket read with blocking system calls). A Conn is used by one goroutine
// at a time.
type Conn interface {
	// Exec runs a statement that returns no rows and returns the rows it
	// affected. With args the statement is prepared on the server once
	// per connection and executed in the binary protocol, as sysbench's
	// --db-ps-mode=auto does; without, it is sent as text.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
	// Query runs a statement and reads its rows. scan, when not nil, gets
	// each row's values (int64, uint64, float64, []byte valid during the
	// call, nil for NULL); otherwise the rows are read and discarded, so
	// that the server's work of sending them is measured.
	Query(ctx context.Context, q string, scan func(values []any) error, args ...any) error
	// Close ends the connection; a statement blocked on it returns.
	Close() error
}

// PrepareOptions size the data Prepare loads.
type PrepareOptions struct {
	Tables    int  // oltp_*: tables sbtest1..N (sysbench --tables, default 1)
	TableSize int  // oltp_*: rows per table (sysbench --table-size, default 10000)
	Nodes     int  // linkbench: nodes (default 100000)
	Parallel  int  // connections loading data (default 4)
	Force     bool // drop and recreate tables that exist
}

// withDefaults fills the fields left at zero: sysbench's 1 table of 10000
// rows, LinkBench's 100000 nodes, 4 loading connections.
func (o PrepareOptions) withDefaults() PrepareOptions {
	if o.Tables <= 0 {
		o.Tables = defaultTables
	}
	if o.TableSize <= 0 {
		o.TableSize = defaultTableSize
	}
	if o.Nodes <= 0 {
		o.Nodes = lbDefaultNodes
	}
	if o.Parallel <= 0 {
		o.Parallel = defaultParallel
	}
	return o
}

// Arrival is how intended start times are spaced at a given rate.
type Arrival string

const (
	// ArrivalConstant spaces transactions 1/rate apart.
	ArrivalConstant Arrival = "constant"
	// ArrivalPoisson draws exponential gaps of mean 1/rate.
	ArrivalPoisson Arrival = "poisson"
)

// Clock is the time source of a run; tests use a fake one.
type Clock interface {
	Now() time.Time
	// Sleep waits until t or ctx ends.
	SleepUntil(ctx context.Context, t time.Time) error
}

// Ledger gives write transactions unique ids during a failover run and
// remembers which were acknowledged (committed without error), so that the
// run can count the acknowledged writes the new primary lacks. Write
// transactions insert their id into LedgerTable inside the transaction.
// A nil *Ledger is valid: no ids (runs without an event).
type Ledger struct {
	next  atomic.Uint64
	mu    sync.Mutex
	acked []uint64
}

// LedgerTable is the table write transactions record their ids in during
// a failover run (created by the run, dropped by cleanup).
const LedgerTable = "dbpilot_bench_ledger"

// MarkerTable lists what prepare created (workload, table), so that
// cleanup drops nothing else.
const MarkerTable = "dbpilot_bench_marker"

// Interval is what one reporting interval (default 1 s) saw. Latencies are
// measured from each transaction's intended start.
type Interval struct {
	Start      time.Time        `json:"start"`
	Seconds    float64          `json:"seconds"`      // the interval's length
	RateTarget float64          `json:"rate_target"`  // transactions/s scheduled (0: closed loop)
	Rate       float64          `json:"rate"`         // transactions/s completed
	Completed  int64            `json:"transactions"` // completed (with or without error)
	Errors     int64            `json:"errors"`
	ErrorsBy   map[string]int64 `json:"errors_by_class,omitempty"`
	P50        float64          `json:"p50_ms"`
	P90        float64          `json:"p90_ms"`
	P99        float64          `json:"p99_ms"`
	P999       float64          `json:"p999_ms"`
	Max        float64          `json:"max_ms"`
	Busy       int              `json:"busy_connections"` // at the interval's end (LinkBenchX's concurrency)
	BusyMax    int              `json:"busy_max"`
	Backlog    int64            `json:"backlog"` // transactions due and not started, at the interval's end
	BacklogMax int64            `json:"backlog_max"`
	Reconnects int64            `json:"reconnects"`
	// WriteStallMS is the longest time without an acknowledged write (a
	// write transaction that committed without error) that ended in this
	// interval or was still going at its end: from the acknowledgement
	// before it (in this interval or an earlier one; the run's start for
	// the first) to the one that ended it, or to the interval's end. The
	// largest over a span of intervals is the longest stall in it. 0 while
	// the run has attempted no write (a read-only workload).
	WriteStallMS float64 `json:"write_stall_ms,omitempty"`
}

// OpSummary is one operation's latency over a run.
type OpSummary struct {
	Op     string  `json:"op"`
	Count  int64   `json:"count"`
	Errors int64   `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P90    float64 `json:"p90_ms"`
	P99    float64 `json:"p99_ms"`
	P999   float64 `json:"p999_ms"`
	Max    float64 `json:"max_ms"`
}

// Summary is a whole run.
type Summary struct {
	Workload     string           `json:"workload"`
	Target       string           `json:"target"` // HOST:PORT or cluster
	Mode         string           `json:"mode"`   // open or closed
	Arrival      Arrival          `json:"arrival,omitempty"`
	Seconds      float64          `json:"seconds"`
	RateTarget   float64          `json:"rate_target"` // mean scheduled rate (0: closed loop)
	RateAchieved float64          `json:"rate_achieved"`
	Transactions int64            `json:"transactions"`
	Errors       int64            `json:"errors"`
	ErrorsBy     map[string]int64 `json:"errors_by_class,omitempty"`
	P50          float64          `json:"p50_ms"`
	P90          float64          `json:"p90_ms"`
	P99          float64          `json:"p99_ms"`
	P999         float64          `json:"p999_ms"`
	Max          float64          `json:"max_ms"`
	MaxBacklog   int64            `json:"max_backlog"`
	MaxBusy      int              `json:"max_busy"`
	Reconnects   int64            `json:"reconnects"`
	// WriteStallMS is the longest time without an acknowledged write
	// (Interval.WriteStallMS's largest).
	WriteStallMS float64      `json:"longest_write_stall_ms,omitempty"`
	Ops          []OpSummary  `json:"ops"`
	Event        *EventReport `json:"event,omitempty"`
	Interrupted  bool         `json:"interrupted,omitempty"` // Ctrl-C: the summary so far
}

// EventReport is what clients saw of a topology change run mid-load
// (--during failover|switchover|kill-primary --at D).
type EventReport struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Unavailable is the write-unavailability window: from the first failed
	// write to the first successful write after it (0: no write failed).
	UnavailableMS float64   `json:"write_unavailable_ms"`
	FirstFailed   time.Time `json:"first_failed_write,omitzero"`
	FirstOK       time.Time `json:"first_ok_write_after,omitzero"`
	Failed        int64     `json:"failed_transactions"`
	Before        OpSummary `json:"before"`
	During        OpSummary `json:"during"`
	After         OpSummary `json:"after"`
	AckedWrites   int64     `json:"acknowledged_writes"`
	LostWrites    int64     `json:"lost_acknowledged_writes"`
	OldPrimary    string    `json:"old_primary,omitempty"`
	NewPrimary    string    `json:"new_primary,omitempty"`
}
