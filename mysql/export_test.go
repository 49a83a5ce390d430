package mysql

import (
	"context"

	"github.com/dbpilot/dbpilot"
)

// HoldInspection takes in's token for key as an inspection in flight
// would (a crawl), until release.
func HoldInspection(in *Inspector, key dbpilot.InstanceKey) (release func(), err error) {
	c, err := in.acquire(context.Background(), key)
	if err != nil {
		return nil, err
	}
	return func() { <-c.sem }, nil
}

// Opened reports whether in has an open connection to key.
func Opened(in *Inspector, key dbpilot.InstanceKey) bool {
	in.mu.Lock()
	c := in.conns[key.Normalized()]
	in.mu.Unlock()
	if c == nil {
		return false
	}
	c.sem <- struct{}{}
	defer func() { <-c.sem }()
	return c.db != nil
}
