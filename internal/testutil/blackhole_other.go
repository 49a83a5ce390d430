//go:build !unix

package testutil

import "testing"

// BlackHole is not available on this platform: the test is skipped.
func BlackHole(t testing.TB) string {
	t.Helper()
	t.Skip("testutil: no black-hole listener on this platform")
	return ""
}
