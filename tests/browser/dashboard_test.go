package browser

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// The page's handles (dashboard/README.md).
const (
	digState  = `[data-testid=dig-state]`
	operation = `[data-testid=operation]`
	dialogOn  = `dialog#confirm[open]`
	message   = `[role=status]#message`
	updated   = `[data-testid=updated]`
)

func cellOf(cluster string) string {
	return fmt.Sprintf(`table[data-testid=matrix] tr[data-cluster="%s+%s"] td[data-app=%q]`, provider, cluster, app)
}

// act presses an action button of the DIG view, confirms it in the dialog and waits for
// its outcome in #message (a text other than the one before).
func (p *page) act(action string) {
	p.t.Helper()
	before := p.text(message)
	p.click(fmt.Sprintf(`button[data-action=%q]`, action))
	p.waitVisible(dialogOn, 30*time.Second)
	p.click(`dialog#confirm button#confirm-yes`)
	p.waitGone(dialogOn, 30*time.Second)
	p.waitUntil("the outcome of "+action+" in #message", 30*time.Second, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "").trim()`, message))
		return s != "" && s != before, fmt.Sprintf("%q", s), err
	})
	p.t.Logf("%s: %s", action, p.text(message))
}

// oneH1 checks the view's single h1 (every view has one) and returns its text.
func (p *page) oneH1() string {
	p.t.Helper()
	p.waitUntil("one h1", 30*time.Second, func() (bool, string, error) {
		n, err := eval[int](p, `document.querySelectorAll("h1").length`)
		return n == 1, fmt.Sprintf("%d h1", n), err
	})
	return p.text("h1")
}

// noError waits for a new answer of the view (the page polls every 3 s and shows the time
// of its last answer) and checks that #message shows no failed call.
func (p *page) noError() {
	p.t.Helper()
	at := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? (e.dateTime || e.textContent).trim() : "<absent>"; })()`, updated)
	first, err := eval[string](p, at)
	if err != nil {
		p.fatalf("read %s: %v", updated, err)
	}
	p.waitUntil("a new answer of the view", time.Minute, func() (bool, string, error) {
		s, err := eval[string](p, at)
		return s != "" && s != first && s != "<absent>", fmt.Sprintf("last answer at %q", s), err
	})
	if m := p.text(message); m != "" {
		p.fatalf("the view shows an error: %q", m)
	}
}

// An operator opens the dashboard, follows the links from the project to the DIG,
// approves and instantiates it with the page's buttons, and watches the matrix cell turn
// Ready; the cell leads to the app's objects on the cluster, read live: Ready too.
func TestInstantiateFromThePageUntilReady(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-ready", cluster)
	f.deploy(cluster)
	p := newPage(t)
	p.extra = f.restView

	p.open("#/")
	p.oneH1()
	if on, _ := eval[bool](p, `!!document.querySelector("form#token-form") && document.querySelector("form#token-form").checkVisibility()`); on {
		p.fatalf("the page asks for a token although the dev stack runs without authentication")
	}
	p.waitVisible(fmt.Sprintf(`a[href=%q]`, f.projectRoute()), time.Minute)
	p.shot("projects")
	p.follow(f.projectRoute())
	p.oneH1()
	p.shot("project")
	p.follow(f.caRoute())
	p.oneH1()
	p.shot("composite-app")
	p.follow(f.digRoute())
	p.oneH1()
	p.waitText(digState, "Created", time.Minute)
	p.shot("dig-created")

	p.act("approve")
	p.waitText(digState, "Approved", time.Minute)
	if s := f.status(); s.state() != "Approved" {
		t.Fatalf("after the page's approve the API says %q", s.state())
	}
	p.shot("dig-approved")

	p.act("instantiate")
	cell := cellOf(cluster)
	p.waitUntil("the matrix cell Ready", 5*time.Minute, func() (bool, string, error) {
		st, err := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.dataset.state ?? "<no cell>"`, cell))
		detail := "data-state " + st
		if s := f.status(); st != "Ready" && s.Status == "Instantiated" && s.RsyncStatus["Pending"] > 0 {
			// Seen when a live read (the page polls with live=true) wrote its stale copy of
			// the cluster's statuses over the apply's.
			detail += fmt.Sprintf("; the API: the instantiate ended, yet objects are Pending (%v): their Applied statuses were lost", s.RsyncStatus)
		}
		return st == "Ready", detail, err
	})
	p.waitText(digState, "Instantiated", time.Minute)
	p.waitGone(operation, 2*time.Minute)
	p.shot("dig-ready")
	if s := f.status(); s.Status != "Instantiated" {
		t.Errorf("the page shows the cell Ready; the API's status is %q", s.Status)
	}
	if v, raw := f.dashboard(); len(v.Clusters) != 1 || v.Clusters[0].Apps[app].Ready != "Ready" {
		t.Errorf("the page shows the cell Ready; the API's dashboard answer: %s", raw)
	}

	p.click(cell + ` a[href^="#/"]`)
	p.waitHash(f.objectsRoute(cluster))
	p.oneH1()
	deployment := fmt.Sprintf(`table[data-testid=objects] tr[data-object="Deployment/default/%s"] td[data-testid=ready]`, app)
	p.waitText(deployment, "Ready", 2*time.Minute)
	// The chart's three objects (ConfigMap, Deployment, Service), each read Ready.
	p.waitUntil("three objects, all Ready", time.Minute, func() (bool, string, error) {
		got, err := eval[[]string](p, `[...document.querySelectorAll("table[data-testid=objects] tr[data-object]")].map(
			r => r.dataset.object + "=" + (r.querySelector("td[data-testid=ready]")?.textContent ?? "").trim())`)
		ready := 0
		for _, o := range got {
			if strings.HasSuffix(o, "=Ready") {
				ready++
			}
		}
		return len(got) == 3 && ready == 3, fmt.Sprint(got), err
	})
	p.shot("objects")
}

// attempts reads the attempts an entry of the retrying list shows ("4 attempts",
// "attempts: 4", "attempt 4").
var attemptsText = regexp.MustCompile(`(?i)attempts?\W{0,3}(\d+)|(\d+)\s*attempts?`)

func attemptsIn(s string) int {
	best := 0
	for _, m := range attemptsText.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1] + m[2])
		best = max(best, n)
	}
	return best
}

// A cluster that refuses connections shows in the retrying list with the error and the
// attempts so far; the page's Stop ends the operation, which the REST API confirms.
func TestRetryingClusterStoppedFromThePage(t *testing.T) {
	const down = "unreachable"
	server := registerUnreachableCluster(t, down)
	f := newProject(t, "br-retry", down)
	f.deploy(down)
	must(t, 202, "POST", f.dig()+"/approve", nil)
	p := newPage(t)
	p.extra = f.restView

	p.open(f.digRoute())
	p.oneH1()
	p.waitText(digState, "Approved", time.Minute)
	p.act("instantiate")
	p.waitVisible(operation, time.Minute)
	// The operation box: its progress and its link to the workflow in the Temporal UI.
	p.waitText(operation+` [data-testid=progress]`, "0 / 1 clusters", time.Minute)
	var session struct {
		TemporalUI string `json:"temporalUI"`
	}
	if err := json.Unmarshal(must(t, 200, "GET", "/session", nil), &session); err != nil || session.TemporalUI == "" {
		t.Fatalf("GET /v2/session: %v %+v", err, session)
	}
	op, _ := f.dashboard()
	if op.Operation == nil {
		p.fatalf("the page shows an operation; the API none")
	}
	if href, err := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.href ?? "<absent>"`, operation+` a[data-testid=temporal-link]`)); err != nil ||
		!strings.HasPrefix(href, session.TemporalUI+"/") || !strings.Contains(href, "/workflows/"+url.PathEscape(op.Operation.WorkflowID)+"/") {
		p.fatalf("the operation's link to the Temporal UI (%s, workflow %s) is %q (%v)", session.TemporalUI, op.Operation.WorkflowID, href, err)
	}

	entry := fmt.Sprintf(`[data-testid=retrying] li[data-cluster="%s+%s"]`, provider, down)
	addr := strings.TrimPrefix(server, "https://")
	p.waitUntil("the cluster in the retrying list, refused, after 2 attempts or more", 3*time.Minute, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "<absent>").trim()`, entry))
		ok := strings.Contains(s, "connection refused") && strings.Contains(s, addr) && attemptsIn(s) >= 2
		return ok, fmt.Sprintf("%q (%d attempts read)", s, attemptsIn(s)), err
	})
	if v, raw := f.dashboard(); len(v.Clusters) != 1 || v.Clusters[0].Retry == nil || v.Clusters[0].Retry.Attempts < 2 ||
		!strings.Contains(v.Clusters[0].Retry.Error, "connection refused") {
		t.Errorf("the page shows the cluster retrying; the API's dashboard answer: %s", raw)
	}
	p.shot("retrying")

	p.act("stop")
	p.waitGone(operation, 2*time.Minute)
	p.waitText(digState, "InstantiateStopped", time.Minute)
	p.waitGone(entry, time.Minute) // a stopped operation retries nothing
	p.shot("stopped")
	f.eventually("the API says InstantiateStopped", time.Minute, func() error {
		if s := f.status(); s.Status != "InstantiateStopped" || s.state() != "InstantiateStopped" {
			return fmt.Errorf("status %q, state %q", s.Status, s.state())
		}
		if v, raw := f.dashboard(); v.Operation != nil || v.State != "InstantiateStopped" {
			return fmt.Errorf("dashboard answer %s", raw)
		}
		return nil
	})
}

// tabTo presses Tab until the focus is on sel, and fails with the path the focus took.
func (p *page) tabTo(sel string) {
	p.t.Helper()
	var path []string
	for range 150 {
		p.key(kb.Tab)
		path = append(path, p.focused())
		if p.focusIs(sel) {
			p.t.Logf("focus on %s after %d Tab", path[len(path)-1], len(path))
			return
		}
	}
	p.fatalf("150 Tab presses never focused %s; the focus went:\n%s", sel, strings.Join(path, "\n"))
}

// From the projects view to the DIG with Tab and Enter only; the confirmation dialog
// opens with Enter and closes with Escape or its No button, changing nothing.
func TestKeyboardOnly(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-keys", cluster)
	f.deploy(cluster)
	p := newPage(t)
	p.extra = f.restView

	p.open("#/")
	p.waitVisible(fmt.Sprintf(`a[href=%q]`, f.projectRoute()), time.Minute)
	for _, route := range []string{f.projectRoute(), f.caRoute(), f.digRoute()} {
		p.tabTo(fmt.Sprintf(`a[href=%q]`, route))
		p.key(kb.Enter)
		p.waitHash(route)
		p.oneH1()
		t.Logf("at %s the focus is on %s", route, p.focused())
	}
	p.waitText(digState, "Created", time.Minute)
	p.shot("dig")

	approve := `button[data-action="approve"]`
	p.tabTo(approve)
	p.key(kb.Enter)
	p.waitVisible(dialogOn, 30*time.Second)
	p.waitUntil("the focus in the dialog", 10*time.Second, func() (bool, string, error) {
		return p.focusIs(`dialog#confirm, dialog#confirm *`), "focus on " + p.focused(), nil
	})
	p.shot("confirm")
	p.key(kb.Escape)
	p.waitGone(dialogOn, 10*time.Second)
	p.waitUntil("the focus back on the Approve button", 10*time.Second, func() (bool, string, error) {
		return p.focusIs(approve), "focus on " + p.focused(), nil
	})

	// Again, cancelled with the dialog's No button.
	p.key(kb.Enter)
	p.waitVisible(dialogOn, 30*time.Second)
	p.tabTo(`button#confirm-no`)
	p.key(kb.Enter)
	p.waitGone(dialogOn, 10*time.Second)

	if s := p.text(digState); s != "Created" {
		p.fatalf("the DIG reads %q after two cancelled approvals", s)
	}
	if s := f.status(); s.state() != "Created" {
		t.Fatalf("two cancelled approvals left the DIG %q", s.state())
	}
	p.shot("cancelled")
}

// The status views of a logical cloud (reached by links) and of a cluster's network
// intents (opened by its address) load without error.
func TestStatusViews(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-status", cluster)
	p := newPage(t)

	p.open("#/")
	network := fmt.Sprintf("#/cp/%s/c/%s", provider, cluster)
	p.waitVisible(fmt.Sprintf(`a[href=%q]`, network), time.Minute)
	p.follow(f.projectRoute())
	p.follow(f.lcRoute())
	p.oneH1()
	p.noError()
	p.waitUntil("the cloud's state", time.Minute, func() (bool, string, error) {
		s, err := eval[string](p, `document.querySelector("main")?.innerText ?? document.body.innerText`)
		return strings.Contains(s, "Instantiated"), "the view reads " + strconv.Quote(s), err
	})
	p.shot("logical-cloud")

	must(t, 200, "GET", "/cluster-providers/"+provider+"/clusters/"+cluster+"/status", nil)
	p.open(network)
	p.oneH1()
	p.noError()
	p.shot("cluster-network")
}

// A caller that spent its live reads (another tab, a script from the same address) still
// sees its DIG: the page shows the stored state and why in the summary, not an error at
// every poll, and reads the clusters live again once the API allows.
func TestSpentLiveReadsShowTheStoredState(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-live", cluster)
	f.deploy(cluster)
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	f.eventually("the DIG instantiated", 3*time.Minute, func() error {
		if s := f.status(); s.Status != "Instantiated" {
			return fmt.Errorf("status %q", s.Status)
		}
		return nil
	})
	p := newPage(t)
	p.open(f.digRoute())
	p.oneH1()
	p.waitText(digState, "Instantiated", time.Minute)

	liveError := `[data-testid=live-error]`
	stop := make(chan struct{})
	var refused atomic.Int32
	var readers sync.WaitGroup
	// The same address as the browser's: one caller. Several reads at once spend its
	// budget however slowly a loaded machine answers each.
	for range 20 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if code, _, _ := call("GET", f.dig()+"/status?status=ready&output=summary", nil); code == 429 {
					refused.Add(1)
				}
			}
		})
	}
	p.waitUntil("the summary saying the live reads are spent", time.Minute, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? "<absent>"`, liveError))
		return strings.Contains(s, "too many live reads"), s, err
	})
	if s, _ := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, message)); strings.TrimSpace(s) != "" {
		t.Errorf("the page shows an error %q: want the stored state, the refusal in the summary", s)
	}
	p.waitText(digState, "Instantiated", time.Minute)
	p.shot("live-reads-spent")
	// The page may meet the refusal before the other client does (a loaded machine slows
	// the other's reads): both share the one budget, so the other is refused too, soon.
	p.waitUntil("the other client refused too", time.Minute, func() (bool, string, error) {
		return refused.Load() > 0, "no 429 yet", nil
	})
	close(stop)
	readers.Wait()
	p.waitGone(liveError, time.Minute)
	p.noError()
}

// Authentication: the dev stack runs without it, so the token form (form#token-form,
// button#sign-out) is exercised by TestAuthenticatedDashboard (auth_test.go), which starts
// a `temco api` of its own with authentication on. TestInstantiateFromThePageUntilReady
// only checks that no token is asked for when authentication is off.

// A DIG with a capacity placement shows its autoscaler: each cluster's state and the
// signals read there, its decisions; the page's Pause and Resume reach the autoscaler,
// which the REST API confirms.
func TestAutoscalerOnThePage(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-autoscale", cluster)
	f.deploy(cluster)
	capacity := f.dig() + "/capacity-placements"
	must(t, 201, "POST", capacity, res("fleet", map[string]any{
		"eligible":           map[string]any{"clusters": []string{provider + "+" + cluster}},
		"workloads":          []any{map[string]any{"app": app, "deployment": app, "hpa": app}},
		"evaluationInterval": "5s",
	}))
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	paused := func() bool {
		var s struct {
			Paused bool `json:"paused"`
		}
		if err := json.Unmarshal(must(t, 200, "GET", capacity+"/fleet/status", nil), &s); err != nil {
			t.Fatal(err)
		}
		return s.Paused
	}

	p := newPage(t)
	p.open(f.digRoute())
	p.oneH1()
	member := fmt.Sprintf(`table[data-testid=autoscaler-members] tr[data-cluster="%s+%s"]`, provider, cluster)
	p.waitText(member+` [data-testid=member-state]`, "ACTIVE", 3*time.Minute)
	// The signals column says what was read: the chart's Deployment has room.
	p.waitUntil("the member's signals", time.Minute, func() (bool, string, error) {
		got, err := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.lastElementChild?.textContent ?? ""`, member))
		return strings.TrimSpace(got) == "room", got, err
	})
	p.waitText(`[data-testid=autoscaler-state]`, "running", time.Minute)
	p.shot("autoscaler")

	p.click(`button[data-action=autoscaler-pause]`)
	p.waitText(`[data-testid=autoscaler-state]`, "paused", time.Minute)
	if !paused() {
		t.Error("the page shows the autoscaler paused; the API does not")
	}
	p.shot("autoscaler-paused")
	p.click(`button[data-action=autoscaler-resume]`)
	p.waitText(`[data-testid=autoscaler-state]`, "running", time.Minute)
	if paused() {
		t.Error("the page shows the autoscaler running; the API says paused")
	}

	must(t, 204, "DELETE", capacity+"/fleet", nil)
	must(t, 202, "POST", f.dig()+"/terminate", nil)
	f.eventually("terminated", 2*time.Minute, func() error {
		if s := f.status(); s.Status != "Terminated" {
			return fmt.Errorf("status %s", s.Status)
		}
		return nil
	})
}
