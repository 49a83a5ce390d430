package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/sandbox"
)

// WaitFor polls cond until it returns true, backing off from 10 ms to
// 250 ms between tries, and fails the test when timeout passes first. what
// names the awaited condition in the failure; cond may return a detail
// (the last value seen) to print with it.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if detail != "" {
				t.Fatalf("%s: not within %s (last: %s)", what, timeout, detail)
			}
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(wait)
		wait = min(wait*2, 250*time.Millisecond)
	}
}

// WaitValue polls query on a sandbox node until its single value equals
// want, and fails the test after timeout with the last value or error.
func WaitValue(t testing.TB, d *sandbox.Descriptor, node, query, want string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("%s on %s = %q", query, node, want), func() (bool, string) {
		got, err := Value(d, node, query)
		if err != nil {
			return false, err.Error()
		}
		return got == want, fmt.Sprintf("%q", got)
	})
}

// Value runs query on a sandbox node and returns the first column of its
// single row ("" for NULL); more or fewer rows are an error.
func Value(d *sandbox.Descriptor, node, query string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := sandbox.Exec(ctx, d, node, query)
	if err != nil {
		return "", err
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) == 0 {
		return "", fmt.Errorf("%d rows", len(rows.Values))
	}
	if v := rows.Values[0][0]; v != nil {
		return *v, nil
	}
	return "", nil
}
