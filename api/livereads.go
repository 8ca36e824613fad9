package api

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// DefaultLiveReadsPerMinute bounds each caller's live reads of clusters (status=ready,
// the dashboard's live view). A dashboard tab polls live every 3 s, 20 a minute, so three
// tabs fit; a script looping on status=ready is held to one read a second, each of which
// is a workflow asking every cluster of the DIG.
const DefaultLiveReadsPerMinute = 60

// maxLiveReadCallers bounds the callers remembered: about 100 bytes each.
const maxLiveReadCallers = 10000

// liveReadLimiter is a token bucket per caller. A nil limiter allows everything.
type liveReadLimiter struct {
	perMinute int
	rate      float64 // tokens a second
	burst     float64 // ten seconds' worth: a page opened, its filters changed
	now       func() time.Time

	mu        sync.Mutex
	callers   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was counted
}

// newLiveReadLimiter allows each caller perMinute live reads a minute; none (nil) when
// perMinute is 0 or less.
func newLiveReadLimiter(perMinute int, now func() time.Time) *liveReadLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &liveReadLimiter{perMinute: perMinute, rate: float64(perMinute) / 60, burst: math.Ceil(float64(perMinute) / 6),
		now: now, callers: map[string]*bucket{}, lastSweep: now()}
}

// take spends one of caller's reads; when none is left, it says how long until one is.
func (l *liveReadLimiter) take(caller string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.lastSweep) >= time.Minute || len(l.callers) >= maxLiveReadCallers && l.callers[caller] == nil {
		l.sweep(now)
	}
	b := l.callers[caller]
	if b == nil {
		b = &bucket{tokens: l.burst, at: now}
		l.callers[caller] = b
	}
	b.tokens, b.at = l.refilled(b, now), now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

func (l *liveReadLimiter) refilled(b *bucket, now time.Time) float64 {
	return min(l.burst, b.tokens+max(0, now.Sub(b.at).Seconds())*l.rate)
}

// sweep forgets the callers whose buckets have refilled (a full bucket is a new one);
// if every caller is still busy and there is no room, the one seen longest ago goes.
func (l *liveReadLimiter) sweep(now time.Time) {
	l.lastSweep = now
	var oldest string
	for k, b := range l.callers {
		if l.refilled(b, now) >= l.burst {
			delete(l.callers, k)
		} else if oldest == "" || b.at.Before(l.callers[oldest].at) {
			oldest = k
		}
	}
	if len(l.callers) >= maxLiveReadCallers {
		delete(l.callers, oldest)
	}
}

// allowLiveRead answers 429, with Retry-After, when the caller has spent its live reads.
// Callers are subjects, or without authentication addresses (a proxy's X-Forwarded-For
// only when the proxy is on a private network).
func (s *Server) allowLiveRead(c echo.Context) error {
	caller, who := "address:"+echo.ExtractIPFromXFFHeader()(c.Request()), "this address"
	if p := principal(c); p != nil {
		caller, who = "subject:"+p.Subject, strconv.Quote(p.Subject)
	}
	ok, wait := s.liveReads.take(caller)
	if ok {
		return nil
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return httpErr(http.StatusTooManyRequests, "too many live reads of clusters from %s (at most %d a minute): retry in %d s; "+
		"the stored state answers without a limit", who, s.liveReads.perMinute, secs)
}
