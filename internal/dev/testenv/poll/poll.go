// Package poll is how tests wait for what happens elsewhere (another process, a cluster,
// a browser): they ask again until it holds or a deadline passes, never sleep a guess.
// A leaf package, so that any test may use it, devstack's own included.
package poll

import (
	"context"
	"testing"
	"time"
)

// Every is the pause between two asks.
const Every = 200 * time.Millisecond

// Until calls check until it returns nil, failing the test at the deadline with what and
// check's last error. check's context ends at the deadline.
func Until(t testing.TB, what string, timeout time.Duration, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		case <-tick.C:
		}
	}
}
