package api_test

// The routes of features/notify, served by the api (export_features_test.go).

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/notify"
	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/store"
)

// notifyHosts is the tests' TEMCO_NOTIFY_HOSTS_ALLOW.
var notifyHosts = egress.MustParse("hooks.example.com")

// deliveries records the delivery workflows the API stops.
type deliveries struct{ stopped []string }

func (d *deliveries) StopDelivering(_ context.Context, receiver string) error {
	d.stopped = append(d.stopped, receiver)
	return nil
}

const (
	hookURL    = "https://hooks.example.com/hooks/T0K3N?sig=qu3ry"
	hookSecret = "s3cret-signing-key"
)

// receiverSpec is a cloudevents receiver's spec with the tests' URL and secret.
func receiverSpec(filter map[string]any) map[string]any {
	return map[string]any{"format": "cloudevents", "url": hookURL, "secret": hookSecret, "filter": filter}
}

// sealedReceiver is what the store keeps sealed of receiver id; it fails the test if the
// document's body shows any of it.
func sealedReceiver(t *testing.T, c *api.FeatureClient, id string) events.Sealed {
	t.Helper()
	d, err := c.Store().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Secret) == 0 {
		t.Fatalf("%s keeps nothing sealed", id)
	}
	plain, err := api.OpenSealed(c.Keys(), d)
	if err != nil {
		t.Fatal(err)
	}
	var s events.Sealed
	if err := json.Unmarshal(plain, &s); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"T0K3N", "qu3ry", s.Secret} {
		if part != "" && strings.Contains(d.Body, part) {
			t.Errorf("%s's stored body shows %q: %s", id, part, d.Body)
		}
	}
	return s
}

// shown fails the test if an answer shows the URL's path or query or the secret.
func shown(t *testing.T, what string, body []byte, secrets ...string) {
	t.Helper()
	for _, s := range append([]string{"T0K3N", "qu3ry", hookSecret}, secrets...) {
		if strings.Contains(string(body), s) {
			t.Errorf("%s shows %q: %s", what, s, body)
		}
	}
}

// A project's receivers and an admin's are created, read, replaced and deleted through
// the api; their URL and secret are sealed in the store and masked in every answer, a
// replace that sends the masks back keeps them, and a delete stops the deliveries and
// forgets their status.
func TestNotificationReceiversKeepTheirURLAndSecretSealed(t *testing.T) {
	for _, c := range []struct {
		name   string
		coll   string
		filter map[string]any
	}{
		{"a project's", api.PathP + "/notification-receivers", map[string]any{"events": []string{"drift.*"}, "deploymentIntentGroups": []string{api.DIGName}}},
		{"an admin's", "/notification-receivers", map[string]any{"events": []string{"cluster.*"}, "projects": []string{"p1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := &deliveries{}
			fc := api.NewFeatureClient(t, notify.Extension(rs, notifyHosts))
			item := c.coll + "/r1"
			created := fc.Do("POST", c.coll, res("r1", receiverSpec(c.filter))).Must(t, http.StatusCreated)
			answers := []api.Response{created, fc.Do("GET", item, nil).Must(t, http.StatusOK), fc.Do("GET", c.coll, nil).Must(t, http.StatusOK),
				fc.Do("GET", item+"/status", nil).Must(t, http.StatusOK)}
			for _, r := range answers {
				shown(t, "an answer", r.Body())
			}
			var got struct {
				Spec events.Receiver `json:"spec"`
			}
			answers[1].JSON(t, &got)
			if got.Spec.URL != "https://hooks.example.com/"+events.Mask || got.Spec.Secret != events.Mask || got.Spec.Format != events.FormatCloudEvents ||
				len(got.Spec.Filter.Events) != 1 {
				t.Errorf("GET answered spec %+v", got.Spec)
			}
			var st struct {
				Name  string `json:"name"`
				State string `json:"state"`
			}
			answers[3].JSON(t, &st)
			if st.Name != "r1" || st.State != events.StateIdle {
				t.Errorf("status %s", answers[3].Body())
			}
			if s := sealedReceiver(t, fc, item); s.URL != hookURL || s.Secret != hookSecret {
				t.Errorf("sealed %+v", s)
			}

			// The spec as answered, with another filter: the URL and secret kept.
			spec := map[string]any{"format": got.Spec.Format, "url": got.Spec.URL, "secret": got.Spec.Secret,
				"filter": map[string]any{"events": []string{events.OperationFailed}}}
			r := fc.Do("PUT", item, res("r1", spec)).Must(t, http.StatusOK)
			shown(t, "the replace's answer", r.Body())
			if s := sealedReceiver(t, fc, item); s.URL != hookURL || s.Secret != hookSecret {
				t.Errorf("a replace with the masks sealed %+v, want the URL and secret kept", s)
			}
			if r := fc.Do("GET", item, nil).Must(t, http.StatusOK); !strings.Contains(string(r.Body()), events.OperationFailed) {
				t.Errorf("the filter was not replaced: %s", r.Body())
			}
			// A mask is the stored URL's only: another host's or port's is not kept silently.
			for _, other := range []string{"https://hooks.example.com:8443/" + events.Mask, "http://hooks.example.com/" + events.Mask} {
				spec["url"] = other
				if m := fc.Do("PUT", item, res("r1", spec)).Must(t, http.StatusBadRequest).Message(t); !strings.Contains(m, "spec.url") {
					t.Errorf("a replace with %s: %q, want a message naming spec.url", other, m)
				}
			}
			spec["url"] = got.Spec.URL
			// Without a secret, a cloudevents receiver keeps its own too.
			delete(spec, "secret")
			fc.Do("PUT", item, res("r1", spec)).Must(t, http.StatusOK)
			if s := sealedReceiver(t, fc, item); s.Secret != hookSecret {
				t.Errorf("a replace without a secret sealed %+v", s)
			}
			// A new secret, then a new URL: each replaced, the other kept.
			spec["secret"] = "another-signing-key"
			r = fc.Do("PUT", item, res("r1", spec)).Must(t, http.StatusOK)
			shown(t, "the replace's answer", r.Body(), "another-signing-key")
			if s := sealedReceiver(t, fc, item); s.URL != hookURL || s.Secret != "another-signing-key" {
				t.Errorf("a new secret sealed %+v", s)
			}
			spec["url"] = "https://hooks.example.com/other/N3WTOKEN"
			r = fc.Do("PUT", item, res("r1", spec)).Must(t, http.StatusOK)
			shown(t, "the replace's answer", r.Body(), "N3WTOKEN")
			if s := sealedReceiver(t, fc, item); s.URL != "https://hooks.example.com/other/N3WTOKEN" || s.Secret != "another-signing-key" {
				t.Errorf("a new URL sealed %+v", s)
			}

			// A delete stops the deliveries and forgets their status.
			statuses := feed.OpenStatuses(fc.Store().Database())
			if err := statuses.Record(context.Background(), item, events.Attempt{Event: "e1", Time: time.Now()}, events.Waiting{}, false); err != nil {
				t.Fatal(err)
			}
			fc.Do("DELETE", item, nil).Must(t, http.StatusNoContent)
			if !slices.Equal(rs.stopped, []string{item}) {
				t.Errorf("deliveries stopped %q, want %s's", rs.stopped, item)
			}
			if s, err := statuses.Get(context.Background(), item); err != nil || s.Delivered != 0 {
				t.Errorf("the deleted receiver's status is kept: %+v %v", s, err)
			}
			fc.Do("GET", item, nil).Must(t, http.StatusNotFound)
			fc.Do("GET", item+"/status", nil).Must(t, http.StatusNotFound)
		})
	}
}

// What a receiver may not be is refused with a message saying why: a host an admin did
// not allow is a 403 naming TEMCO_NOTIFY_HOSTS_ALLOW, the rest 400s; nothing is stored.
func TestNotificationReceiversRefusals(t *testing.T) {
	c := api.NewFeatureClient(t, notify.Extension(&deliveries{}, notifyHosts))
	coll := api.PathP + "/notification-receivers"
	slack := func(url string) map[string]any { return map[string]any{"format": "slack", "url": url} }
	with := func(k string, v any) map[string]any {
		s := receiverSpec(nil)
		s[k] = v
		return s
	}
	for _, tc := range []struct {
		name string
		coll string
		spec map[string]any
		code int
		want string
	}{
		{"a host not allowed", coll, with("url", "https://evil.example.com/x"), http.StatusForbidden, "TEMCO_NOTIFY_HOSTS_ALLOW"},
		{"a host not allowed, for an admin", "/notification-receivers", slack("https://evil.example.com/x"), http.StatusForbidden, "host evil.example.com is not one temco may send notifications to"},
		{"no URL", coll, with("url", ""), http.StatusBadRequest, "spec.url is required"},
		{"the mask as URL on a create", coll, with("url", "https://hooks.example.com/"+events.Mask), http.StatusBadRequest, "spec.url is required"},
		{"another scheme", coll, with("url", "ftp://hooks.example.com/x"), http.StatusBadRequest, "spec.url must be an absolute http or https URL"},
		{"a user in the URL", coll, with("url", "https://u:p@hooks.example.com/x"), http.StatusBadRequest, "spec.url may not carry a user or password"},
		{"an unknown format", coll, with("format", "email"), http.StatusBadRequest, `spec.format "email" is not "cloudevents" or "slack"`},
		{"a secret too short", coll, with("secret", "short"), http.StatusBadRequest, "at least 16 characters"},
		{"no secret", coll, with("secret", ""), http.StatusBadRequest, "at least 16 characters"},
		{"the mask as secret on a create", coll, with("secret", events.Mask), http.StatusBadRequest, "no secret is stored to keep"},
		{"a slack receiver with a secret", coll, map[string]any{"format": "slack", "url": "https://hooks.example.com/x", "secret": hookSecret}, http.StatusBadRequest, "a slack receiver is not signed"},
		{"an unknown event type", coll, receiverSpec(map[string]any{"events": []string{"operation.exploded"}}), http.StatusBadRequest, `"operation.exploded" names no event type`},
		{"a project's receiver naming projects", coll, receiverSpec(map[string]any{"projects": []string{"p2"}}), http.StatusBadRequest, "spec.filter.projects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do("POST", tc.coll, res("bad", tc.spec)).Must(t, tc.code)
			if m := r.Message(t); !strings.Contains(m, tc.want) {
				t.Errorf("message %q, want %q", m, tc.want)
			}
			shown(t, "a refusal", r.Body())
			if ok, err := c.Store().Exists(context.Background(), tc.coll+"/bad"); err != nil || ok {
				t.Errorf("a refused receiver is stored (%v)", err)
			}
		})
	}

	// A replace is checked the same: the stored one is left as it was.
	c.Do("POST", coll, res("r1", receiverSpec(nil))).Must(t, http.StatusCreated)
	if m := c.Do("PUT", coll+"/r1", res("r1", with("url", "https://evil.example.com/x"))).Must(t, http.StatusForbidden).Message(t); !strings.Contains(m, "TEMCO_NOTIFY_HOSTS_ALLOW") {
		t.Errorf("replace to a host not allowed: %q", m)
	}
	if s := sealedReceiver(t, c, coll+"/r1"); s.URL != hookURL {
		t.Errorf("a refused replace sealed %+v", s)
	}
	c.Do("POST", "/projects/nope/notification-receivers", res("r1", receiverSpec(nil))).Must(t, http.StatusNotFound)
}

// Switched off (no starter), the routes still check and read, but a create is 503.
func TestNotificationReceiversWhenSwitchedOff(t *testing.T) {
	c := api.NewFeatureClient(t, notify.Extension(nil, notifyHosts))
	coll := api.PathP + "/notification-receivers"
	req := httptest.NewRequest("POST", "/v2"+coll, strings.NewReader(`{"metadata":{"name":"r1"},"spec":{"url":"`+hookURL+`","secret":"`+hookSecret+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	if rec := c.Serve(req); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "feature notify is switched off") {
		t.Errorf("create: %d %s, want 503", rec.Code, rec.Body)
	}
	c.Do("GET", coll, nil).Must(t, http.StatusOK)
	c.Do("GET", api.PathP+"/events", nil).Must(t, http.StatusOK)
}

// feedFixture records events of projects p1 and p2 and the fleet's, a minute apart.
func feedFixture(t *testing.T, st *store.Store) []events.Event {
	t.Helper()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	var evs []events.Event
	for i, e := range []struct{ id, resource, typ string }{
		{"p1-started", "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1", events.OperationStarted},
		{"p2-failed", "/projects/p2/composite-apps/ca/v1/deployment-intent-groups/dig1", events.OperationFailed},
		{"fleet-down", "", events.ClusterUnreachable},
		{"p1-failed", "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1", events.OperationFailed},
		{"p1-drift", "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1", events.DriftFound},
	} {
		ev := events.Event{ID: e.id, Type: e.typ, Time: at.Add(time.Duration(i) * time.Minute), Summary: e.id}
		if e.resource != "" {
			ev.About(e.resource)
		} else {
			ev.AboutCluster("cp1+c1", nil)
		}
		evs = append(evs, ev)
	}
	if err := feed.Open(st.Database()).Record(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

func feedIDs(t *testing.T, r api.Response) []string {
	t.Helper()
	var evs []events.Event
	r.JSON(t, &evs)
	ids := []string{}
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	return ids
}

// A project's feed answers its own events, newest first, by type and in pages; the
// fleet's feed answers every one's; a query that is not one is a 400 saying why.
func TestTheEventFeed(t *testing.T) {
	c := api.NewFeatureClient(t, notify.Extension(&deliveries{}, notifyHosts))
	evs := feedFixture(t, c.Store())
	for _, tc := range []struct {
		path string
		want []string
	}{
		{api.PathP + "/events", []string{"p1-drift", "p1-failed", "p1-started"}},
		{api.PathP + "/events?limit=2", []string{"p1-drift", "p1-failed"}},
		{api.PathP + "/events?limit=2&before=" + url.QueryEscape(evs[3].Time.Format(time.RFC3339Nano)), []string{"p1-started"}},
		{api.PathP + "/events?type=operation.failed,operation.started", []string{"p1-failed", "p1-started"}},
		{"/events", []string{"p1-drift", "p1-failed", "fleet-down", "p2-failed", "p1-started"}},
		{"/events?type=cluster.unreachable", []string{"fleet-down"}},
	} {
		if got := feedIDs(t, c.Do("GET", tc.path, nil).Must(t, http.StatusOK)); !slices.Equal(got, tc.want) {
			t.Errorf("GET %s: %q, want %q", tc.path, got, tc.want)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"limit=0", `limit="0" is invalid`},
		{"limit=501", `limit="501" is invalid: use one whole number from 1 to 500`},
		{"limit=ten", `limit="ten" is invalid`},
		{"before=yesterday", `before="yesterday" is invalid: use an RFC 3339 time`},
		{"type=operation.exploded", `"operation.exploded" is no event type`},
		{"type=drift.*", `"drift.*" is no event type`},
	} {
		for _, path := range []string{api.PathP + "/events", "/events"} {
			if m := c.Do("GET", path+"?"+tc.query, nil).Must(t, http.StatusBadRequest).Message(t); !strings.Contains(m, tc.want) {
				t.Errorf("GET %s?%s: %q, want %q", path, tc.query, m, tc.want)
			}
		}
	}
	c.Do("GET", "/projects/nope/events", nil).Must(t, http.StatusNotFound)
}

// A tenant reads and writes its own project's receivers and events only: another
// project's and the admins' (the fleet's feed included) are refused, and nothing of them
// is answered or changed.
func TestNotificationsTenancy(t *testing.T) {
	iss, err := authtest.New(api.TestIssuer, api.TestAudience)
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewFeatureAuthClient(t, iss, notify.Extension(&deliveries{}, notifyHosts))
	admin := c.As(iss.Token("root", []string{"admin"}, nil))
	for _, p := range []string{"p1", "p2"} {
		admin.Do("POST", "/projects", res(p, nil)).Must(t, http.StatusCreated)
	}
	admin.Do("POST", "/projects/p2/notification-receivers", res("theirs", receiverSpec(nil))).Must(t, http.StatusCreated)
	admin.Do("POST", "/notification-receivers", res("fleet", receiverSpec(nil))).Must(t, http.StatusCreated)
	feedFixture(t, c.Store())

	tenant := c.As(iss.Token("alice", []string{"project:p1"}, nil))
	tenant.Do("POST", "/projects/p1/notification-receivers", res("mine", receiverSpec(nil))).Must(t, http.StatusCreated)
	tenant.Do("GET", "/projects/p1/notification-receivers/mine/status", nil).Must(t, http.StatusOK)
	if got := feedIDs(t, tenant.Do("GET", "/projects/p1/events", nil).Must(t, http.StatusOK)); !slices.Equal(got, []string{"p1-drift", "p1-failed", "p1-started"}) {
		t.Errorf("the tenant's feed: %q", got)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/projects/p2/notification-receivers"},
		{"POST", "/projects/p2/notification-receivers"},
		{"GET", "/projects/p2/notification-receivers/theirs"},
		{"PUT", "/projects/p2/notification-receivers/theirs"},
		{"DELETE", "/projects/p2/notification-receivers/theirs"},
		{"GET", "/projects/p2/notification-receivers/theirs/status"},
		{"GET", "/projects/p2/events"},
		{"GET", "/notification-receivers"},
		{"POST", "/notification-receivers"},
		{"GET", "/notification-receivers/fleet"},
		{"PUT", "/notification-receivers/fleet"},
		{"DELETE", "/notification-receivers/fleet"},
		{"GET", "/notification-receivers/fleet/status"},
		{"GET", "/events"},
	} {
		got := tenant.Do(r.method, r.path, res("theirs", map[string]any{"format": "slack", "url": "https://hooks.example.com/mine"}))
		if got.Code() != http.StatusForbidden {
			t.Errorf("tenant %s %s: %d %s, want 403", r.method, r.path, got.Code(), got.Body())
		}
		if b := string(got.Body()); strings.Contains(b, "p2-failed") || strings.Contains(b, "fleet-down") || strings.Contains(b, "hooks.example.com") {
			t.Errorf("tenant %s %s answered another's: %s", r.method, r.path, b)
		}
	}
	for _, id := range []string{"/projects/p2/notification-receivers/theirs", "/notification-receivers/fleet"} {
		if s := sealedReceiver(t, c, id); s.URL != hookURL {
			t.Errorf("%s changed by a tenant: %+v", id, s)
		}
	}
	if ok, _ := c.Store().Exists(context.Background(), "/notification-receivers/theirs"); ok {
		t.Error("a tenant created an admin's receiver")
	}
}
