package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gmclient "github.com/go-mysql-org/go-mysql/client"

	"github.com/dbpilot/dbpilot"
	"github.com/dbpilot/dbpilot/internal/testutil"
	"github.com/dbpilot/dbpilot/mysql"
	"github.com/dbpilot/dbpilot/sandbox"
)

// TestConnectTimeoutCoversHandshake connects every way package mysql
// connects to a server that never sends its greeting (a silent listener)
// and to a port where the TCP connect hangs (a full accept queue): each
// fails within the connect timeout (and a margin for a loaded machine),
// saying that it timed out.
func TestConnectTimeoutCoversHandshake(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const limit = timeout + 2*time.Second
	ways := []struct {
		name    string
		connect func(ctx context.Context, key dbpilot.InstanceKey) error
	}{
		{"Open", func(ctx context.Context, key dbpilot.InstanceKey) error {
			db, err := mysql.Open(ctx, key, mysql.Options{ConnectTimeout: timeout, QueryTimeout: time.Minute})
			if err == nil {
				db.Close()
			}
			return err
		}},
		{"Open blocking", func(ctx context.Context, key dbpilot.InstanceKey) error {
			db, err := mysql.Open(ctx, key, mysql.Options{ConnectTimeout: timeout, QueryTimeout: time.Minute, BlockingIO: true})
			if err == nil {
				db.Close()
			}
			return err
		}},
		{"Inspector", func(ctx context.Context, key dbpilot.InstanceKey) error {
			in := mysql.NewInspector(mysql.Options{ConnectTimeout: timeout, QueryTimeout: time.Minute})
			defer in.Close()
			_, err := in.Inspect(ctx, key)
			return err
		}},
		{"DialWire", func(ctx context.Context, key dbpilot.InstanceKey) error {
			w, err := mysql.DialWire(ctx, key, mysql.Options{ConnectTimeout: timeout})
			if err == nil {
				w.Close()
			}
			return err
		}},
		{"DialBounded", func(ctx context.Context, key dbpilot.InstanceKey) error {
			// go-mysql's client, as the binlog syncers use it.
			c, err := gmclient.ConnectWithDialer(ctx, "tcp", key.String(), "root", "", "", mysql.DialBounded(nil, timeout))
			if err == nil {
				c.Close()
			}
			return err
		}},
	}
	targets := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"silent", func(t *testing.T) string { return testutil.SilentListener(t) }},
		{"blackhole", func(t *testing.T) string { return testutil.BlackHole(t) }},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			key, err := dbpilot.ParseInstanceKey(target.addr(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range ways {
				t.Run(w.name, func(t *testing.T) {
					// The caller's context is far longer: the connect
					// timeout alone must end the wait.
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					start := time.Now()
					err := w.connect(ctx, key)
					took := time.Since(start)
					if err == nil {
						t.Fatal("connected to a server that never answers")
					}
					if took > limit {
						t.Errorf("failed after %s, want at most %s (connect timeout %s): %v", took.Round(time.Millisecond), limit, timeout, err)
					}
					if !strings.Contains(err.Error(), "timed out after "+timeout.String()) {
						t.Errorf("error %q does not say it timed out after %s", err, timeout)
					}
					var cte *mysql.ConnectTimeoutError
					if !errors.As(err, &cte) && !strings.Contains(w.name, "DialBounded") {
						t.Errorf("error %v is not a *ConnectTimeoutError", err)
					}
					if w.name != "DialBounded" && dbpilot.ErrorCode(mysql.Classify(err, key, "root", "connect")) != dbpilot.EUNAVAIL {
						t.Errorf("error %v does not classify as %s", err, dbpilot.EUNAVAIL)
					}
				})
			}
		})
	}
}

// TestDialBoundedAfterHandshake checks on a real server that DialBounded's
// deadline ends with the handshake: a connection logged in keeps working
// past the connect timeout, through a statement that runs longer than it,
// with Go's poller and with a blocking socket.
func TestDialBoundedAfterHandshake(t *testing.T) {
	d := testutil.MustSandbox(t, sandbox.Spec{Topology: sandbox.TopologySingle})
	n, err := d.Node("node1")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	for _, blocking := range []bool{false, true} {
		name := "poll"
		dial := mysql.DialBounded(nil, timeout)
		if blocking {
			name = "blocking"
			dial = mysql.DialBounded(mysql.DialBlocking(nil), timeout)
		}
		t.Run(name, func(t *testing.T) {
			c, err := gmclient.ConnectWithDialer(context.Background(), "tcp", n.Key().String(), d.Admin.User, d.Admin.Password, "", dial)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			time.Sleep(2 * timeout)
			r, err := c.Execute("SELECT SLEEP(0.6), 42")
			if err != nil {
				t.Fatalf("statement after the connect timeout: %v", err)
			}
			if v, err := r.GetInt(0, 1); err != nil || v != 42 {
				t.Errorf("SELECT returned %d, %v; want 42", v, err)
			}
		})
	}
}
