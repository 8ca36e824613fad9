package work

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/features/notify/flow"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

const (
	project  = "/projects/p1"
	receiver = project + "/notification-receivers/r1"
	secret   = "whsec_c2VjcmV0IGtleSBvZiB0aGUgdGVzdHM=" // "secret key of the tests"
)

// hook is the receiver's server: it answers code and keeps what it was sent.
type hook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	code int
	reqs []posted
}

type posted struct {
	path   string
	header http.Header
	body   []byte
}

func newHook(t *testing.T) *hook {
	h := &hook{code: http.StatusNoContent}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.reqs = append(h.reqs, posted{path: r.URL.RequestURI(), header: r.Header.Clone(), body: b})
		w.WriteHeader(h.code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) host() string { return strings.TrimPrefix(h.srv.URL, "http://") }

func (h *hook) answer(code int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.code = code
}

func (h *hook) received() []posted {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]posted(nil), h.reqs...)
}

// fixture is a store with project p1 and the activities over it, their keys and the hosts
// allowed.
type fixture struct {
	st   *store.Store
	keys *seal.Keyring
	a    *Activities
}

func newFixture(t *testing.T, allow *egress.Allow) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.New(ctx, testenv.Database(t, ferret, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, &store.Doc{ID: project, Kind: "project", Name: "p1", Body: `{"metadata":{"name":"p1"}}`}); err != nil {
		t.Fatal(err)
	}
	keys, err := seal.NewKeyring([]string{"test"}, [][]byte{[]byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, keys: keys, a: NewActivities(st, keys, allow)}
}

// putReceiver stores receiver id as the api does: the URL and secret sealed bound to the
// document's id, the body showing them masked.
func (f *fixture) putReceiver(t *testing.T, id, format, url, secret string) {
	t.Helper()
	plain, err := json.Marshal(events.Sealed{URL: url, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := f.keys.Seal(plain, []byte(id))
	if err != nil {
		t.Fatal(err)
	}
	spec := events.Receiver{Format: format, URL: events.Masked(url)}
	if secret != "" {
		spec.Secret = events.Mask
	}
	body, err := json.Marshal(model.Resource[events.Receiver]{Metadata: model.Metadata{Name: id[strings.LastIndex(id, "/")+1:]}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.Create(context.Background(), &store.Doc{ID: id, Parent: project, Scope: project, Kind: model.KindNotificationReceiver,
		Name: id[strings.LastIndex(id, "/")+1:], Body: string(body), Secret: sealed}); err != nil {
		t.Fatal(err)
	}
}

// deliver runs one attempt of DeliverEvent as the worker does.
func (f *fixture) deliver(t *testing.T, id string, e events.Event, queued int) (flow.Delivered, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestActivityEnvironment()
	lifecycle.Register(env, flow.DeliverEvent, f.a.DeliverEvent)
	v, err := env.ExecuteActivity(flow.DeliverEvent.Name(), flow.DeliverInput{Receiver: id, Event: e, Queued: queued})
	var out flow.Delivered
	if err == nil {
		if err := v.Get(&out); err != nil {
			t.Fatal(err)
		}
	}
	return out, err
}

func (f *fixture) status(t *testing.T, id string) events.Status {
	t.Helper()
	st, err := f.a.Statuses.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// retryable is what Temporal makes of an activity's error: the test environment passes it
// through the failure converter as a worker does, and the outermost application error
// decides whether it is retried.
func retryable(t *testing.T, err error) bool {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		t.Fatalf("%v is no application error", err)
	}
	return !app.NonRetryable()
}

func event(id string) events.Event {
	e := events.Event{ID: id, Type: events.OperationFailed, Time: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), Summary: "instantiate failed"}
	return *e.About("/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d1")
}

// A cloudevents receiver gets the event as a CloudEvent at its sealed URL (path and query
// included), signed as Standard Webhooks say with its sealed secret; the delivery is
// counted.
func TestACloudEventIsPostedSignedToTheSealedURL(t *testing.T) {
	h := newHook(t)
	f := newFixture(t, egress.MustParse(h.host()))
	f.putReceiver(t, receiver, events.FormatCloudEvents, h.srv.URL+"/hooks/abc?token=t0k", secret)
	out, err := f.deliver(t, receiver, event("e1"), 3)
	if err != nil || out.Gone {
		t.Fatalf("delivery: %+v %v", out, err)
	}
	reqs := h.received()
	if len(reqs) != 1 {
		t.Fatalf("%d posts, want 1", len(reqs))
	}
	p := reqs[0]
	if p.path != "/hooks/abc?token=t0k" {
		t.Errorf("posted to %s, want the sealed URL's path and query", p.path)
	}
	if ct := p.header.Get("Content-Type"); ct != "application/cloudevents+json" {
		t.Errorf("Content-Type %s", ct)
	}
	id, ts, sig := p.header.Get(events.HeaderID), p.header.Get(events.HeaderTimestamp), p.header.Get(events.HeaderSignature)
	if id != "e1" || ts == "" || !strings.HasPrefix(sig, "v1,") {
		t.Errorf("headers %s=%q %s=%q %s=%q", events.HeaderID, id, events.HeaderTimestamp, ts, events.HeaderSignature, sig)
	}
	if !events.Verify(secret, id, ts, sig, p.body) {
		t.Error("the signature does not verify with the receiver's secret")
	}
	if events.Verify("whsec_b3RoZXIgc2VjcmV0", id, ts, sig, p.body) {
		t.Error("the signature verifies with another secret")
	}
	var ce map[string]any
	if err := json.Unmarshal(p.body, &ce); err != nil {
		t.Fatal(err)
	}
	if ce["specversion"] != "1.0" || ce["id"] != "e1" || ce["type"] != "io.temco.operation.failed" || ce["source"] != "/v2/projects/p1" {
		t.Errorf("body %s", p.body)
	}
	st := f.status(t, receiver)
	if st.State != events.StateDelivering || st.Delivered != 1 || st.Queued != 3 || st.LastDelivered == nil || st.LastDelivered.Event != "e1" ||
		st.LastDelivered.Attempt != 1 || len(st.LastErrors) != 0 {
		t.Errorf("status %+v", st)
	}
}

// A slack receiver gets {"text": ...}, unsigned.
func TestASlackReceiverGetsItsText(t *testing.T) {
	h := newHook(t)
	h.answer(http.StatusOK)
	f := newFixture(t, egress.MustParse(h.host()))
	f.putReceiver(t, receiver, events.FormatSlack, h.srv.URL+"/services/T0/B0/XXXX", "")
	if _, err := f.deliver(t, receiver, event("e1"), 0); err != nil {
		t.Fatal(err)
	}
	reqs := h.received()
	if len(reqs) != 1 {
		t.Fatalf("%d posts, want 1", len(reqs))
	}
	if string(reqs[0].body) != `{"text":"temco: instantiate failed (operation.failed)"}` || reqs[0].path != "/services/T0/B0/XXXX" {
		t.Errorf("posted %s to %s", reqs[0].body, reqs[0].path)
	}
	if reqs[0].header.Get(events.HeaderSignature) != "" || reqs[0].header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", reqs[0].header)
	}
	if st := f.status(t, receiver); st.Delivered != 1 || st.State != events.StateDelivering {
		t.Errorf("status %+v", st)
	}
}

// What the receiver answers decides: a 2xx is delivered; a 5xx, 408 or 429 is tried
// again (the error recorded, the receiver Retrying); any other 4xx, or a redirect, is
// refused for good, not retried, counted failed, and the receiver says Refused.
func TestTheAnswerDecidesRetryOrRefusal(t *testing.T) {
	h := newHook(t)
	f := newFixture(t, egress.MustParse(h.host()))
	for _, c := range []struct {
		code      int
		retryable bool
		failed    bool // counted given up
	}{
		{http.StatusInternalServerError, true, false},
		{http.StatusBadGateway, true, false},
		{http.StatusTooManyRequests, true, false},
		{http.StatusRequestTimeout, true, false},
		{http.StatusBadRequest, false, true},
		{http.StatusNotFound, false, true},
		{http.StatusGone, false, true},
		{http.StatusFound, false, true}, // a redirect is not followed: the URL is to be fixed
	} {
		t.Run(http.StatusText(c.code), func(t *testing.T) {
			id := project + "/notification-receivers/r" + strings.ReplaceAll(strings.ToLower(http.StatusText(c.code)), " ", "-")
			f.putReceiver(t, id, events.FormatCloudEvents, h.srv.URL+"/hook", secret)
			h.answer(c.code)
			_, err := f.deliver(t, id, event("e1"), 1)
			if err == nil {
				t.Fatal("delivered")
			}
			if got := retryable(t, err); got != c.retryable {
				t.Errorf("error %v: retryable %v, want %v", err, got, c.retryable)
			}
			var app *temporal.ApplicationError
			if !c.retryable && (!errors.As(err, &app) || app.Type() != errRefused) {
				t.Errorf("error %v, want a %s", err, errRefused)
			}
			st := f.status(t, id)
			wantFailed := map[bool]int{true: 1, false: 0}[c.failed]
			wantState := map[bool]string{true: events.StateRefused, false: events.StateRetrying}[c.failed]
			if st.State != wantState || st.Delivered != 0 || st.Failed != wantFailed || len(st.LastErrors) != 1 ||
				st.LastErrors[0].Event != "e1" || !strings.Contains(st.LastErrors[0].Error, http.StatusText(c.code)) {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// A receiver whose host is no longer allowed (an admin took it off the list) is refused
// at once, not retried for a day: nothing is posted.
func TestAHostNotAllowedIsRefusedForGood(t *testing.T) {
	h := newHook(t)
	f := newFixture(t, egress.MustParse("hooks.example.com"))
	f.putReceiver(t, receiver, events.FormatCloudEvents, h.srv.URL+"/hook", secret)
	_, err := f.deliver(t, receiver, event("e1"), 0)
	if err == nil || retryable(t, err) {
		t.Fatalf("error %v, want one not retried", err)
	}
	if !strings.Contains(err.Error(), "not on the hosts an admin allowed") {
		t.Errorf("error %v, want one saying the host is not allowed", err)
	}
	if n := len(h.received()); n != 0 {
		t.Errorf("%d posts to a host not allowed", n)
	}
	if st := f.status(t, receiver); st.Failed != 1 || len(st.LastErrors) != 1 {
		t.Errorf("status %+v", st)
	}
}

// A receiver down is retried: the error says no more than that it did not answer.
func TestAReceiverDownIsRetried(t *testing.T) {
	h := newHook(t)
	url := h.srv.URL
	h.srv.Close()
	f := newFixture(t, egress.MustParse(h.host()))
	f.putReceiver(t, receiver, events.FormatCloudEvents, url+"/hook", secret)
	_, err := f.deliver(t, receiver, event("e1"), 0)
	if err == nil || !retryable(t, err) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("error %v, want a retryable one saying it did not answer", err)
	}
	if st := f.status(t, receiver); st.State != events.StateRetrying || st.Failed != 0 {
		t.Errorf("status %+v", st)
	}
}

// A receiver deleted is gone: the workflow ends, nothing is posted or recorded.
func TestADeletedReceiverIsGone(t *testing.T) {
	h := newHook(t)
	f := newFixture(t, egress.MustParse(h.host()))
	out, err := f.deliver(t, receiver, event("e1"), 0)
	if err != nil || !out.Gone {
		t.Fatalf("delivery to a receiver that is not: %+v %v, want Gone", out, err)
	}
	if n := len(h.received()); n != 0 {
		t.Errorf("%d posts", n)
	}
	if st := f.status(t, receiver); st.State != events.StateIdle {
		t.Errorf("status %+v", st)
	}
}

// The sealed URL opens only for the document it was sealed for: one copied into another
// receiver (a store write that bypassed the api) is refused, not posted to.
func TestASealedURLOpensOnlyForItsReceiver(t *testing.T) {
	h := newHook(t)
	f := newFixture(t, egress.MustParse(h.host()))
	f.putReceiver(t, receiver, events.FormatCloudEvents, h.srv.URL+"/hook", secret)
	d, err := f.st.Get(context.Background(), receiver)
	if err != nil {
		t.Fatal(err)
	}
	other := project + "/notification-receivers/copy"
	if err := f.st.Create(context.Background(), &store.Doc{ID: other, Parent: project, Scope: project, Kind: d.Kind, Name: "copy", Body: d.Body, Secret: d.Secret}); err != nil {
		t.Fatal(err)
	}
	_, err = f.deliver(t, other, event("e1"), 0)
	if err == nil || retryable(t, err) || !strings.Contains(err.Error(), "open the receiver's sealed URL") {
		t.Errorf("error %v, want a refusal to open", err)
	}
	if n := len(h.received()); n != 0 {
		t.Errorf("%d posts", n)
	}
}

// A receiver too slow to answer is retried, and what is recorded (shown in the
// receiver's status) names its host only: never the sealed URL's path or query, a
// Slack hook's token.
func TestASlowReceiverIsRetriedWithoutItsURLInTheError(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	allow := egress.MustParse(strings.TrimPrefix(slow.URL, "http://"))
	f := newFixture(t, allow)
	f.a.Client = allow.HTTPClient(200 * time.Millisecond)
	f.putReceiver(t, receiver, events.FormatSlack, slow.URL+"/services/T0/B0/SECRETTOKEN?x=tok2", "")
	_, err := f.deliver(t, receiver, event("e1"), 0)
	if err == nil || !retryable(t, err) {
		t.Fatalf("error %v, want a retryable one", err)
	}
	st := f.status(t, receiver)
	if len(st.LastErrors) != 1 {
		t.Fatalf("status %+v", st)
	}
	for _, msg := range []string{err.Error(), st.LastErrors[0].Error} {
		if strings.Contains(msg, "SECRETTOKEN") || strings.Contains(msg, "tok2") {
			t.Errorf("the error shows the sealed URL: %s", msg)
		}
	}
}
