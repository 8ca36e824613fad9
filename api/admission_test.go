package api

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// serveTurns serves h in turns of n at /r.
func serveTurns(n int, h echo.HandlerFunc) *httptest.Server {
	e := echo.New()
	e.POST("/r", newTurns(n).admit(h))
	return httptest.NewServer(e)
}

// awaitTrue polls cond until it holds or the deadline passes.
func awaitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition, with a deadline
	}
}

// No more than n requests run at once, and every waiting one is served in the end.
func TestStoreRequestsRunInTurns(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	srv := serveTurns(2, func(c echo.Context) error {
		now := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		<-release
		return c.NoContent(http.StatusNoContent)
	})
	defer srv.Close()
	var wg sync.WaitGroup
	codes := make([]int, 6)
	for i := range codes {
		wg.Go(func() {
			r, err := http.Post(srv.URL+"/r", "application/json", strings.NewReader("{}"))
			if err == nil {
				codes[i] = r.StatusCode
				r.Body.Close()
			}
		})
	}
	awaitTrue(t, "two requests run", func() bool { return running.Load() == 2 })
	close(release)
	wg.Wait()
	if m := most.Load(); m != 2 {
		t.Fatalf("%d requests ran at once; want 2", m)
	}
	for i, c := range codes {
		if c != http.StatusNoContent {
			t.Fatalf("request %d answered %d; want 204", i, c)
		}
	}
}

// A client still sending its body holds no turn; its handler reads the whole body after.
func TestASlowBodyTakesNoTurn(t *testing.T) {
	srv := serveTurns(1, func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, string(b))
	})
	defer srv.Close()
	pr, pw := io.Pipe()
	slow := make(chan string)
	go func() {
		r, err := http.Post(srv.URL+"/r", "application/json", pr)
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		slow <- string(b)
	}()
	if _, err := pw.Write([]byte(`{"a":`)); err != nil { // the first half, then nothing
		t.Fatal(err)
	}
	r, err := http.Post(srv.URL+"/r", "application/json", strings.NewReader(`{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || string(b) != `{"b":2}` {
		t.Fatalf("beside a slow body: %d %s; want 200 {\"b\":2}", r.StatusCode, b)
	}
	_, _ = pw.Write([]byte(`1}`))
	pw.Close()
	if got := <-slow; got != `{"a":1}` {
		t.Fatalf("the slow request's handler read %q; want {\"a\":1}", got)
	}
}

// A request that waits too long is answered 503 with Retry-After, not queued for ever.
func TestAWaitTooLongIsAnswered503(t *testing.T) {
	defer func(w time.Duration) { admissionWait = w }(admissionWait)
	admissionWait = 50 * time.Millisecond
	release := make(chan struct{})
	var started atomic.Bool
	srv := serveTurns(1, func(c echo.Context) error {
		started.Store(true)
		<-release
		return c.NoContent(http.StatusNoContent)
	})
	defer srv.Close()
	done := make(chan error)
	go func() {
		r, err := http.Post(srv.URL+"/r", "application/json", strings.NewReader("{}"))
		if err == nil {
			r.Body.Close()
		}
		done <- err
	}()
	awaitTrue(t, "the first request runs", started.Load)
	r, err := http.Post(srv.URL+"/r", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("a request past its wait: %d, Retry-After %q; want 503, 1", r.StatusCode, r.Header.Get("Retry-After"))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A body over the route's limit is still refused by the handler's read, as before.
func TestABodyReadErrorReachesTheHandler(t *testing.T) {
	e := echo.New()
	e.POST("/r", func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, 4)
			return next(c)
		}
	}(newTurns(1).admit(func(c echo.Context) error {
		_, err := io.ReadAll(c.Request().Body)
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			return httpErr(http.StatusRequestEntityTooLarge, "too large")
		}
		return c.NoContent(http.StatusNoContent)
	})))
	srv := httptest.NewServer(e)
	defer srv.Close()
	r, err := http.Post(srv.URL+"/r", "application/json", strings.NewReader(`{"abc":1}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("an oversized body: %d; want 413", r.StatusCode)
	}
}
