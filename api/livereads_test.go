package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/core/appctx"
)

// fakeClock is a settable time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                { return c.t }
func (c *fakeClock) add(d time.Duration)           { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock                     { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func takes(l *liveReadLimiter, caller string) bool { ok, _ := l.take(caller); return ok }

// A caller may read ten seconds' worth at once, then at the rate; callers do not share.
func TestLiveReadLimiterIsATokenBucketPerCaller(t *testing.T) {
	clock := newFakeClock()
	l := newLiveReadLimiter(60, clock.now)
	for i := range 10 {
		if !takes(l, "a") {
			t.Fatalf("read %d of the burst of 10 refused", i+1)
		}
	}
	ok, wait := l.take("a")
	if ok || wait != time.Second {
		t.Fatalf("the 11th read: allowed %v, wait %s; want refused, 1s", ok, wait)
	}
	if !takes(l, "b") {
		t.Fatal("another caller is refused for a's reads")
	}
	clock.add(500 * time.Millisecond)
	if ok, wait := l.take("a"); ok || wait != 500*time.Millisecond {
		t.Fatalf("half a second later: allowed %v, wait %s", ok, wait)
	}
	clock.add(500 * time.Millisecond)
	if !takes(l, "a") || takes(l, "a") {
		t.Fatal("a second later: want exactly one more read")
	}
	clock.add(time.Hour) // refills to the burst, no further
	for i := range 10 {
		if !takes(l, "a") {
			t.Fatalf("after an hour, read %d refused", i+1)
		}
	}
	if takes(l, "a") {
		t.Fatal("an idle hour banked more than the burst")
	}
	if newLiveReadLimiter(0, clock.now) != nil || !takes(nil, "a") {
		t.Fatal("0 a minute is no limit")
	}
	if small := newLiveReadLimiter(1, clock.now); !takes(small, "a") || takes(small, "a") {
		t.Fatal("1 a minute: want a burst of one")
	}
}

// The remembered callers are bounded: idle ones (their buckets full again) are forgotten,
// and when all are busy the one seen longest ago makes room.
func TestLiveReadLimiterForgetsIdleCallers(t *testing.T) {
	clock := newFakeClock()
	l := newLiveReadLimiter(6, clock.now) // a burst of 1, refilled in 10 s
	for i := range maxLiveReadCallers {
		takes(l, fmt.Sprint(i))
		clock.add(time.Microsecond)
	}
	if len(l.callers) != maxLiveReadCallers {
		t.Fatalf("%d callers remembered", len(l.callers))
	}
	takes(l, "new")
	if len(l.callers) != maxLiveReadCallers || l.callers["0"] != nil || l.callers["new"] == nil {
		t.Fatalf("all busy: %d callers, the oldest kept %v", len(l.callers), l.callers["0"] != nil)
	}
	clock.add(2 * time.Second) // a fifth of a read refilled: not idle yet
	takes(l, "x")
	if len(l.callers) != maxLiveReadCallers {
		t.Fatalf("callers with spent reads were forgotten: %d left", len(l.callers))
	}
	clock.add(time.Minute)
	takes(l, "y")
	if len(l.callers) != 1 {
		t.Fatalf("a minute later %d callers remembered, want only y", len(l.callers))
	}
}

// Live reads (status=ready, the dashboard's live view and its objects view) answer 429
// with Retry-After once the caller's are spent, before reading anything; stored reads of
// the same routes, and other callers, are not limited. Without authentication the caller
// is the address: X-Forwarded-For counts only from a proxy on a private network.
func TestLiveReadsAreLimitedPerCaller(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads; s.LiveReadsPerMinute = 6 }) // a burst of 1
	tree(t, c)
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{"app1": {{Ref: res3("")[0].Ref,
		Manifest: manifest("apps/v1", "Deployment", "web", nil)}}}, []*appctx.ClusterApp{{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied")}})
	from := func(addr, path string, hdr ...string) response {
		req := httptest.NewRequest("GET", "/v2"+path, nil)
		req.RemoteAddr = addr + ":40000"
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return c.serve(req)
	}
	for i, live := range []string{pDIG + "/status?status=ready", pDIG + "/dashboard?live=true", pDIG + "/dashboard/clusters/cp1/c1/apps/app1"} {
		alice, bob, carol := fmt.Sprintf("203.0.113.%d", 3*i+1), fmt.Sprintf("203.0.113.%d", 3*i+2), fmt.Sprintf("203.0.113.%d", 3*i+3)
		t.Run(live, func(t *testing.T) {
			before := reads.reads
			from(alice, live).must(t, 200)
			r := from(alice, live).must(t, 429)
			if m := r.message(t); !strings.Contains(m, "too many live reads") || !strings.Contains(m, "6 a minute") {
				t.Errorf("message %q", m)
			}
			if ra := r.hdr.Get("Retry-After"); ra != "10" {
				t.Errorf("Retry-After %q, want 10 (s until the next read)", ra)
			}
			from(alice, live, "X-Forwarded-For", bob).must(t, 429) // alice is no proxy
			if reads.reads != before+1 {
				t.Errorf("%d live reads, want 1: a refused request read the clusters", reads.reads-before)
			}
			for _, stored := range []string{pDIG + "/status", pDIG + "/status?status=deployed", pDIG + "/dashboard", "/projects", pDIG} {
				from(alice, stored).must(t, 200)
			}
			from(bob, live).must(t, 200)
			from("10.1.2.3", live, "X-Forwarded-For", carol).must(t, 200) // a proxy in the cluster, for carol
			from("10.1.2.3", live, "X-Forwarded-For", carol).must(t, 429)
			from(carol, live).must(t, 429)
		})
	}
}

// With authentication the caller is the token's subject, wherever it calls from.
func TestLiveReadsAreLimitedPerSubject(t *testing.T) {
	iss := newIssuer(t)
	keyFile := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), auth.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads; s.Auth = a; s.LiveReadsPerMinute = 6 })
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{"app1": {{Ref: res3("")[0].Ref,
		Manifest: manifest("apps/v1", "Deployment", "web", nil)}}}, []*appctx.ClusterApp{{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied")}})
	const ready = pDIG + "/status?status=ready"
	tina := c.as(iss.Token("tina", []string{"project:p1"}, nil))
	tina.do("GET", ready, nil).must(t, 200)
	if m := tina.do("GET", ready, nil, "X-Forwarded-For", "198.51.100.7").must(t, 429).message(t); !strings.Contains(m, `"tina"`) {
		t.Errorf("message %q does not name the subject", m)
	}
	c.as(iss.Token("tom", []string{"project:p1"}, nil)).do("GET", ready, nil).must(t, 200)
	admin.do("GET", ready, nil).must(t, 200)
}
