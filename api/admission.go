package api

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"time"

	"github.com/labstack/echo/v4"
)

// Admission: the resources' routes (create, list, get, replace, delete: store round trips
// and nothing else) run at most MaxStoreRequests at once; the others wait their turn, in
// the order they came.
//
// Why: beyond what the store and its database can serve at once, the kernel shares their
// CPU among every request under way, so a request's time is its own round trips times the
// crowd, and a delete (eight round trips) takes eight reads' time: the tail is the heavy
// requests. In turn, every request waits about as long as the others and then runs beside
// few: the tail comes close to the median, and the mean (callers ÷ throughput, Little's
// law) is what it was. Measured in BENCHMARKS.md ("the API in turn").
//
// A request's body is read before it waits (at most maxUploadBody), so that a slow client
// never holds a turn; long waits (operations, live reads, agents' polls) are on other
// routes and never take one.

// DefaultMaxStoreRequests is MaxStoreRequests when it is 0: enough to keep every core and
// a remote store's round trips busy, few enough that they are not shared among a crowd.
func DefaultMaxStoreRequests() int { return 4 * runtime.GOMAXPROCS(0) }

// admissionWait is the longest a request waits for its turn before it is answered 503:
// a caller then retries, or another api replica serves it.
var admissionWait = 10 * time.Second

// turns is the FIFO of the store-bound routes: a buffered channel whose blocked senders
// Go serves in the order they blocked. nil: no limit.
type turns chan struct{}

func newTurns(n int) turns {
	switch {
	case n < 0:
		return nil
	case n == 0:
		n = DefaultMaxStoreRequests()
	}
	return make(turns, n)
}

// admit runs h when it is the request's turn.
func (t turns) admit(h echo.HandlerFunc) echo.HandlerFunc {
	if t == nil {
		return h
	}
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body != nil && r.Body != http.NoBody {
			// The whole body first (bodyRules bounds it); a read error comes back to the
			// handler where it would have met it.
			b, err := io.ReadAll(r.Body)
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errorReader{err}))
		}
		wait := time.NewTimer(admissionWait)
		defer wait.Stop()
		select {
		case t <- struct{}{}:
		case <-r.Context().Done():
			return r.Context().Err()
		case <-wait.C:
			c.Response().Header().Set("Retry-After", "1")
			return httpErr(http.StatusServiceUnavailable, "the api is serving %d requests and more are waiting: retry", cap(t))
		}
		defer func() { <-t }()
		return h(c)
	}
}

// errorReader answers err, or io.EOF.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
