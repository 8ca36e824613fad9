package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/events/feed"
)

// The page's handles of the notifications view (dashboard/README.md).
const (
	receiverRows = `table[data-testid=receivers] tr[data-receiver]`
	eventRows    = `table[data-testid=events] tr[data-event]`
)

// callWith sends one request with a JSON body to the authenticated api with tok.
func (a *authAPI) callWith(t *testing.T, tok, method, path string, body any, code int) []byte {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, a.base+"/v2"+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Temco-Client", "browser-test")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	got, b, err := send(req)
	if err != nil || got != code {
		t.Fatalf("%s %s: %d %v, want %d: %s", method, path, got, err, code, b)
	}
	return b
}

// receiver is a notification receiver's body.
func receiver(name, format, url, secret string, filter map[string]any) map[string]any {
	spec := map[string]any{"format": format, "url": url, "filter": filter}
	if secret != "" {
		spec["secret"] = secret
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
}

// attrs lists an attribute of every element matching sel, in order.
func (p *page) attrs(sel, name string) []string {
	p.t.Helper()
	v, err := eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.getAttribute(%q) ?? "")`, sel, name))
	if err != nil {
		p.fatalf("read %s of %s: %v", name, sel, err)
	}
	return v
}

// waitAttrs waits until the attribute of the elements matching sel is want, in order.
func (p *page) waitAttrs(sel, name string, want []string, timeout time.Duration) {
	p.t.Helper()
	p.waitUntil(fmt.Sprintf("%s of %s is %q", name, sel, want), timeout, func() (bool, string, error) {
		got := p.attrs(sel, name)
		return slices.Equal(got, want), fmt.Sprintf("%q", got), nil
	})
}

// The notifications view against a temco with authentication on, its receivers created
// over the API and its feed and delivery states seeded in the stack's store: a tenant
// sees its project's receiver with its deliveries (state, counts, the last delivered
// event, the last errors, the URL's host and never its path or secret) and its events,
// newest first, filtered by type and paged back; it sees nothing of another project's
// (the API's 403) nor the admin receivers and the fleet's feed, which its page does not
// even ask for. An admin sees the admin receivers and every project's events and the
// fleet's.
func TestNotificationsPage(t *testing.T) {
	iss, err := authtest.New(authIssuer, authAudience)
	if err != nil {
		t.Fatal(err)
	}
	a := startAuthAPI(t, iss, "TEMCO_NOTIFY_HOSTS_ALLOW=127.0.0.1")
	const mine, other = "br-notify-mine", "br-notify-other"
	for _, name := range []string{mine, other} {
		must(t, 201, "POST", "/projects", res(name, nil))
	}
	adminTok := iss.Token("notify-admin", []string{"admin"}, nil)
	tenantTok := iss.Token("notify-tenant", []string{"project:" + mine}, nil)

	// Receivers, over the API. Their filters take nothing the stack raises meanwhile (no
	// DIG in these projects, no policy), so no delivery overwrites the states seeded below.
	mineR, otherR, fleetR := "/projects/"+mine+"/notification-receivers", "/projects/"+other+"/notification-receivers", "/notification-receivers"
	a.callWith(t, adminTok, "POST", mineR, receiver("ops-hook", "cloudevents", "http://127.0.0.1:9/hooks/path-of-mine",
		"signing-secret-of-mine", map[string]any{"events": []string{"drift.*"}, "deploymentIntentGroups": []string{"dig"}}), 201)
	a.callWith(t, adminTok, "POST", otherR, receiver("other-hook", "slack", "http://127.0.0.1:9/services/token-of-other", "", nil), 201)
	a.callWith(t, adminTok, "POST", fleetR, receiver("fleet-hook", "cloudevents", "http://127.0.0.1:9/fleet",
		"signing-secret-of-fleet", map[string]any{"events": []string{"policy.action"}, "projects": []string{mine}}), 201)
	t.Cleanup(func() {
		for _, r := range []string{mineR + "/ops-hook", otherR + "/other-hook", fleetR + "/fleet-hook"} {
			if code, b, err := a.call(adminTok, "DELETE", r); err != nil || code != http.StatusNoContent {
				t.Logf("DELETE %s: %d %v: %s", r, code, err, b)
			}
		}
	})

	// The feed and the deliveries, as the stack's activities and delivery workflows
	// would record them.
	st := stackStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	digOf := func(p string) string { return "/projects/" + p + "/composite-apps/ca/v1/deployment-intent-groups/dig" }
	ev := func(id, typ string, at time.Time, about, summary string) events.Event {
		e := events.Event{ID: events.ID("br-notify", id), Type: typ, Time: at, Summary: summary}
		return *e.About(about)
	}
	drift := ev("drift", events.DriftFound, now.Add(-time.Minute), digOf(mine), "2 objects drifted on dig")
	drift.Details = map[string]any{"drifted": 2}
	succeeded := ev("succeeded", events.OperationSucceeded, now.Add(-2*time.Minute), digOf(mine), "instantiate of dig succeeded")
	seeded := []events.Event{drift, succeeded}
	// 50 older ones: the first page (50) ends among them, the next has the 2 oldest.
	var policies []string
	for i := range 50 {
		e := ev(fmt.Sprintf("policy-%d", i), events.PolicyAction, now.Add(-time.Hour-time.Duration(i)*time.Second), "/projects/"+mine,
			fmt.Sprintf("policy action %d", i))
		seeded, policies = append(seeded, e), append(policies, e.ID)
	}
	otherFailed := ev("other", events.OperationFailed, now.Add(-30*time.Second), digOf(other), "instantiate of the other project's dig failed")
	gone := ev("gone", events.ClusterUnreachable, now.Add(-10*time.Second), "", "cluster local+gone unreachable")
	gone.AboutCluster("local+gone", []string{"edge"})
	seeded = append(seeded, otherFailed, gone)
	if err := feed.Open(st.Database()).Record(ctx, seeded); err != nil {
		t.Fatal(err)
	}
	statuses := feed.OpenStatuses(st.Database())
	deliveredAt, failedAt := now.Add(-50*time.Second), now.Add(-20*time.Second)
	for _, rec := range []struct {
		receiver string
		a        events.Attempt
		queued   int
	}{
		{"/projects/" + mine + "/notification-receivers/ops-hook", events.Attempt{Event: drift.ID, Type: drift.Type, Time: deliveredAt, Attempt: 1}, 0},
		{"/projects/" + mine + "/notification-receivers/ops-hook", events.Attempt{Event: "e-next", Type: events.DriftCorrected, Time: failedAt, Attempt: 3,
			Error: "post to 127.0.0.1:9: connection refused"}, 2},
		{"/projects/" + other + "/notification-receivers/other-hook", events.Attempt{Event: otherFailed.ID, Type: otherFailed.Type, Time: now, Attempt: 1}, 0},
	} {
		if err := statuses.Record(ctx, rec.receiver, rec.a, events.Waiting{Queued: rec.queued}, false); err != nil {
			t.Fatal(err)
		}
	}
	forbidden := a.message(t, tenantTok, "GET", otherR, http.StatusForbidden)

	p := newPage(t)
	p.extra = func() string {
		_, b, _ := a.call(adminTok, "GET", mineR+"/ops-hook/status")
		return "GET " + mineR + "/ops-hook/status: " + string(b) + "\n--- temco api (authentication on), its log's end\n" + tail(a.proc.Log, 3000)
	}

	// The tenant, from its project's page.
	p.openAt(a.base + "/dashboard/#/p/" + mine)
	p.submitToken(tenantTok)
	p.waitGone(`form#token-form`, 30*time.Second)
	p.waitVisible(`a[data-testid=project-notifications]`, time.Minute)
	p.follow("#/p/" + mine + "/notifications")
	if h := p.oneH1(); h != "Notifications of project "+mine {
		p.fatalf("the view's h1 reads %q", h)
	}
	p.waitAttrs(receiverRows, "data-receiver", []string{"ops-hook"}, time.Minute)
	row := receiverRows + `[data-receiver="ops-hook"]`
	p.waitAttrs(row, "data-state", []string{"Retrying"}, 30*time.Second)
	for cell, want := range map[string]string{"receiver-delivered": "1", "receiver-failed": "0", "receiver-queued": "2"} {
		p.waitText(row+" [data-testid="+cell+"]", want, 10*time.Second)
	}
	p.waitText(row+" [data-testid=receiver-format]", "cloudevents", 10*time.Second)
	for cell, want := range map[string]string{
		"receiver-state": "Retrying", "receiver-host": "127.0.0.1:9", "receiver-filter": "events drift.*; DIGs dig", "receiver-last-delivered": events.DriftFound,
		"receiver-errors": "post to 127.0.0.1:9: connection refused",
	} {
		p.textHas(row+" td[data-testid="+cell+"]", want, 10*time.Second)
	}
	if got := p.text(row + " td[data-testid=receiver-errors]"); !strings.Contains(got, "attempt 3") || !strings.Contains(got, events.DriftCorrected) {
		p.fatalf("the receiver's last errors read %q: no attempt, no event type", got)
	}
	if n, _ := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, row+` td[data-testid=receiver-errors] li time[datetime]`)); n != 1 {
		p.fatalf("the receiver's last error shows %d times, want 1", n)
	}

	// Its feed: newest first, its own events only, 50 a page; older ones a click away.
	firstPage := append([]string{drift.ID, succeeded.ID}, policies[:48]...)
	p.waitAttrs(eventRows, "data-event", firstPage, 30*time.Second)
	p.textHas(eventRows+`[data-type="drift.found"] td[data-testid=event-summary]`, "2 objects drifted on dig", 10*time.Second)
	p.textHas(eventRows+`[data-type="drift.found"] td[data-testid=event-about]`, mine+"/ca/v1/dig", 10*time.Second)
	p.shot("tenant-project")
	p.click(`button#events-older`)
	p.waitAttrs(eventRows, "data-event", policies[48:], 30*time.Second)
	p.click(`button#events-newer`)
	p.waitAttrs(eventRows, "data-event", firstPage, 30*time.Second)
	p.choose(`select#events-type`, events.DriftFound)
	p.waitAttrs(eventRows, "data-event", []string{drift.ID}, 30*time.Second)
	p.waitHash("#/p/" + mine + "/notifications?type=drift.found")
	p.noError()
	body, _ := eval[string](p, `document.body.innerText`)
	for _, secret := range []string{"path-of-mine", "signing-secret-of-mine"} {
		if strings.Contains(body, secret) {
			p.fatalf("the page shows the receiver's %q", secret)
		}
	}

	// Another project's, by its address: the API's 403, no receiver, no event.
	p.goTo("#/p/" + other + "/notifications")
	p.waitText(message, forbidden, 30*time.Second)
	if n, _ := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, receiverRows+","+eventRows)); n != 0 {
		p.fatalf("the tenant's page lists %d receivers or events of another project", n)
	}
	// The fleet's: links to its projects' pages; the page asks for no admin receiver and
	// no fleet feed.
	p.goTo("#/notifications")
	p.waitVisible(`[data-testid=notification-projects] a[href="#/p/`+mine+`/notifications"]`, 30*time.Second)
	body, _ = eval[string](p, `document.body.innerText`)
	for _, c := range p.apiCalls() {
		if c == "/v2/events" || strings.HasPrefix(c, "/v2/notification-receivers") {
			p.fatalf("the tenant's page called %s", c)
		}
	}
	if strings.Contains(body, "fleet-hook") || strings.Contains(body, otherFailed.Summary) {
		p.fatalf("the tenant's page shows the fleet's or another project's notifications:\n%s", body)
	}
	p.shot("tenant-fleet")

	// An admin: the admin receivers and every project's events and the fleet's.
	p.click(`button#sign-out`)
	p.submitToken(adminTok)
	p.waitGone(`form#token-form`, 30*time.Second)
	p.waitHash("#/notifications")
	if h := p.oneH1(); h != "Notifications" {
		p.fatalf("the admin's view's h1 reads %q", h)
	}
	p.waitAttrs(receiverRows, "data-receiver", []string{"fleet-hook"}, time.Minute)
	p.waitAttrs(receiverRows, "data-state", []string{"Idle"}, 10*time.Second)
	p.waitVisible(eventRows+fmt.Sprintf(`[data-event=%q]`, gone.ID), 30*time.Second)
	p.textHas(eventRows+fmt.Sprintf(`[data-event=%q] td[data-testid=event-project]`, gone.ID), "the fleet", 10*time.Second)
	p.textHas(eventRows+fmt.Sprintf(`[data-event=%q] td[data-testid=event-about]`, gone.ID), "local+gone", 10*time.Second)
	p.textHas(eventRows+fmt.Sprintf(`[data-event=%q] td[data-testid=event-project]`, otherFailed.ID), other, 10*time.Second)
	p.waitVisible(eventRows+fmt.Sprintf(`[data-event=%q]`, drift.ID), 10*time.Second)
	p.noError()
	p.shot("admin-fleet")
	p.goTo("#/p/" + other + "/notifications")
	p.waitAttrs(receiverRows, "data-state", []string{"Delivering"}, time.Minute)
	p.textHas(receiverRows+` [data-testid=receiver-format]`, "slack", 10*time.Second)
	p.waitAttrs(eventRows, "data-event", []string{otherFailed.ID}, 30*time.Second)
}
