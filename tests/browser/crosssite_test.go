package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// reboundHost is a name the browser resolves to 127.0.0.1 (startBrowser's
// host-resolver-rules): a name an attacker pointed at the api's address.
const reboundHost = "rebound.test"

// otherSitePage is a page of another origin that tries, as soon as it loads, to drive the
// api it is given: a no-cors fetch terminating the DIG, a urlencoded form (no fields: no
// body) terminating it too, a multipart form registering a cluster, a text/plain form
// posting a project as JSON, and a no-cors fetch reading the projects.
func otherSitePage(api, dig, provider string) string {
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	attr := func(s string) string {
		return strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(s)
	}
	return `<!doctype html><meta charset="utf-8"><title>another site</title><h1>another site</h1>
<iframe name="a"></iframe><iframe name="b"></iframe><iframe name="c"></iframe>
<form method="post" target="a" action="` + attr(api+dig+"/terminate") + `"></form>
<form method="post" target="b" enctype="multipart/form-data" action="` + attr(api+"/cluster-providers/"+provider+"/clusters") + `">
<input name="metadata" value="` + attr(`{"metadata":{"name":"xsite-evil"}}`) + `">
<textarea name="file">` + attr(fakeKubeconfig) + `</textarea></form>
<form method="post" target="c" enctype="text/plain" action="` + attr(api+"/projects") + `">
<input name="` + attr(`{"metadata":{"name":"xsite-evil","x":"`) + `" value="` + attr(`"}}`) + `"></form>
<script>
addEventListener("load", () => {
  for (const f of document.forms) f.submit();
  fetch(` + js(api+dig+"/terminate") + `, {method: "POST", mode: "no-cors"}).catch(() => {});
  fetch(` + js(api+"/projects") + `, {mode: "no-cors"}).catch(() => {});
});
</script>`
}

// fakeKubeconfig is a kubeconfig the api registers a cluster with (it dials nothing).
const fakeKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// answers records the status of every response the tab received from the api, by
// "<resource type> <method> <path>".
type answers struct {
	mu      sync.Mutex
	methods map[network.RequestID]string
	got     map[string]int
}

func (a *answers) listen(t *testing.T, ctx context.Context, apiPrefix string) {
	a.methods, a.got = map[network.RequestID]string{}, map[string]int{}
	if err := chromedp.Listen(ctx, func(ev any) {
		a.mu.Lock()
		defer a.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			a.methods[ev.RequestID] = ev.Request.Method
		case *network.EventResponseReceived:
			if u, err := url.Parse(ev.Response.URL); err == nil && strings.HasPrefix(ev.Response.URL, apiPrefix) {
				a.got[fmt.Sprintf("%s %s %s", ev.Type, a.methods[ev.RequestID], u.Path)] = int(ev.Response.Status)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
}

func (a *answers) snapshot() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.got {
		out[k] = v
	}
	return out
}

func describe(m map[string]int) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(s)
	return strings.Join(s, "\n")
}

// A page of another origin (another port of 127.0.0.1, served by the test) that the
// operator opens while the api runs without authentication tries to terminate an
// instantiated DIG with a no-cors fetch and with a form, to register a cluster with a
// multipart form, to create a project with a text/plain form and to read the projects
// (a no-cors fetch, as an image or a script would):
// the api answers every one 403, and the REST API shows nothing changed.
func TestAnotherSitesPageCannotDriveTheAPI(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-xsite", cluster)
	f.deploy(cluster)
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	f.eventually("the DIG instantiated", 3*time.Minute, func() error {
		if s := f.status(); s.Status != "Instantiated" {
			return fmt.Errorf("status %q", s.Status)
		}
		return nil
	})
	before := f.status()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprint(w, otherSitePage(apiURL, f.dig(), provider))
	}))
	defer site.Close()

	p := newPage(t)
	p.extra = f.restView
	var a answers
	a.listen(t, p.ctx, strings.TrimSuffix(apiURL, "/v2")+"/")
	p.openAt(site.URL + "/")
	dig := "/v2" + f.dig()
	want := map[string]int{
		"Fetch POST " + dig + "/terminate":                              403,
		"Document POST " + dig + "/terminate":                           403,
		"Document POST /v2/cluster-providers/" + provider + "/clusters": 403,
		"Document POST /v2/projects":                                    403,
		"Fetch GET /v2/projects":                                        403,
	}
	p.waitUntil("the api's answers to the other site's five requests", time.Minute, func() (bool, string, error) {
		got := a.snapshot()
		for k := range want {
			if _, ok := got[k]; !ok {
				return false, describe(got), nil
			}
		}
		return true, "", nil
	})
	got := a.snapshot()
	for k, code := range want {
		if got[k] != code {
			t.Errorf("%s answered %d, want %d\nall answers:\n%s", k, got[k], code, describe(got))
		}
	}
	p.shot("another-site")

	// The REST API, the witness: the DIG is as it was, nothing was created.
	after := f.status()
	if after.Status != "Instantiated" || len(after.States.Actions) != len(before.States.Actions) || after.state() != before.state() {
		t.Errorf("the DIG changed: %s with %d actions (last %q), was %s with %d (last %q)", after.Status, len(after.States.Actions),
			after.state(), before.Status, len(before.States.Actions), before.state())
	}
	must(t, 404, "GET", "/cluster-providers/"+provider+"/clusters/xsite-evil", nil)
	must(t, 404, "GET", "/projects/xsite-evil", nil)
}

// A page whose name was pointed at the api's address (DNS rebinding) is, to the browser,
// of the api's origin: it may read whatever the api answers it. The api serves no such
// name (TEMCO_API_HOSTS): the page and its reads get a 421, the projects stay unread.
func TestARenamedPageReadsNothing(t *testing.T) {
	const project = "br-rebound"
	must(t, 201, "POST", "/projects", res(project, nil))
	u, err := url.Parse(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	rebound := "http://" + reboundHost + ":" + u.Port()
	p := newPage(t)
	if err := p.run(time.Minute, chromedp.Navigate(rebound+"/dashboard/")); err != nil {
		p.fatalf("open %s: %v", rebound, err)
	}
	body := p.text("body")
	if !strings.Contains(body, "is not one this api serves") || strings.Contains(body, project) {
		p.fatalf("the rebound page shows %q, want the api's refusal", body)
	}
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	read, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`fetch("/v2/projects").then(async r => r.status + " " + await r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fatalf("read /v2/projects from the rebound page: %v", err)
	}
	if !strings.HasPrefix(read, "421 ") || strings.Contains(read, project) {
		t.Errorf("the rebound page read /v2/projects: %.300s", read)
	}
	// The same page by the api's address still works: the dashboard lists the project.
	p.open("#/")
	p.waitVisible(fmt.Sprintf(`a[href=%q]`, "#/p/"+project), time.Minute)
}
