package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/dev/devstack"
)

// Authentication: the dev stack's api runs without it, so this test starts a second
// `temco api` with authentication on (tokens of an authtest issuer, its key in a PEM
// file), on the same stack's MongoDB (FerretDB) and Temporal, and signs in to its page
// as nobody, with a forged token, as a tenant of one project and as an admin.

const (
	authIssuer   = "https://issuer.browser.test"
	authAudience = "temco-browser"
	tokenKey     = "temco.token" // the page's sessionStorage key (dashboard/web/api.js)
)

// authAPI is a `temco api` of the test's own, with authentication on.
type authAPI struct {
	base string // http://127.0.0.1:<port>
	proc *devstack.Proc
}

var (
	temporalSummary = regexp.MustCompile(`^\s*Temporal frontend\s+(\S+) \(namespace (\S+), task queue (\S+)\)$`)
	mongoSummary    = regexp.MustCompile(`^\s*MongoDB wire\s+(mongodb://\S+)`)
	temporalUILine  = regexp.MustCompile(`^\s*Temporal Web UI\s+(http\S+)$`)
)

// stackEnv is the environment the dev stack gives its api (internal/devstack's
// Stack.env), read from temco dev's summary and its data directory.
func stackEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	var temporal, mongo bool
	for _, l := range devSummary {
		if m := temporalSummary.FindStringSubmatch(l); m != nil {
			env = append(env, "TEMCO_TEMPORAL_ADDRESS="+m[1], "TEMCO_TEMPORAL_NAMESPACE="+m[2], "TEMCO_TASK_QUEUE="+m[3])
			temporal = true
		}
		if m := mongoSummary.FindStringSubmatch(l); m != nil {
			env = append(env, "TEMCO_MONGO_URI="+m[1], "TEMCO_MONGO_DB=temco")
			mongo = true
		}
		if m := temporalUILine.FindStringSubmatch(l); m != nil {
			env = append(env, "TEMCO_TEMPORAL_UI_URL="+m[1])
		}
	}
	if !temporal || !mongo {
		t.Fatalf("temco dev's summary names no Temporal frontend or MongoDB:\n%s", strings.Join(devSummary, "\n"))
	}
	keys := filepath.Join(devData, "encryption.keys") // devstack's Stack.KeyFile
	if _, err := os.Stat(keys); err != nil {
		t.Fatalf("the stack's encryption key file: %v", err)
	}
	return append(env, "TEMCO_KEY_FILE="+keys)
}

// startAuthAPI starts `temco api` on a free port with authentication by iss's key (and
// env's settings); it is killed (and waited for) at the test's end.
func startAuthAPI(t *testing.T, iss *authtest.Issuer, env ...string) *authAPI {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	env = append(append(stackEnv(t), env...),
		"TEMCO_AUTH_ISSUER="+iss.Name, "TEMCO_AUTH_AUDIENCE="+iss.Audience,
		"TEMCO_AUTH_PUBLIC_KEY_FILE="+keyFile, "TEMCO_AUTH_JWKS_URL=",
		"TEMCO_API_TLS_CERT=", "TEMCO_API_TLS_KEY=")
	log := filepath.Join(devData, "logs", "api-auth.log") // kept with the stack's logs on a failure
	var err error
	for try := 1; try <= 2; try++ { // another process may take the free port first
		var port int
		if port, err = devstack.FreePort(); err != nil {
			t.Fatal(err)
		}
		a := &authAPI{base: "http://127.0.0.1:" + strconv.Itoa(port)}
		if a.proc, err = devstack.StartProc("temco api (authentication on)", log, temcoBin, []string{"api"},
			append(env, "TEMCO_API_ADDR=127.0.0.1:"+strconv.Itoa(port))); err != nil {
			t.Fatal(err)
		}
		err = devstack.WaitReady(context.Background(), a.proc, time.Minute, func(ctx context.Context) error {
			return devstack.HTTPOK(ctx, a.base+"/healthz")
		})
		if err == nil {
			t.Logf("temco api with authentication on at %s (log %s)", a.base, log)
			t.Cleanup(a.proc.Kill) // SIGKILL to its process group, then waits for it
			return a
		}
		a.proc.Kill()
		t.Logf("temco api on port %d: %v", port, err)
	}
	t.Fatalf("temco api with authentication on did not start: %v\n%s", err, tail(log, 4000))
	return nil
}

// call sends one request to the authenticated api with tok ("": no Authorization).
func (a *authAPI) call(tok, method, path string) (int, []byte, error) {
	req, err := http.NewRequest(method, a.base+"/v2"+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Temco-Client", "browser-test")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return send(req)
}

// message is the API's {"message"} of a refused call, which must have the code.
func (a *authAPI) message(t *testing.T, tok, method, path string, code int) string {
	t.Helper()
	got, b, err := a.call(tok, method, path)
	var m struct {
		Message string `json:"message"`
	}
	if err != nil || got != code || json.Unmarshal(b, &m) != nil || m.Message == "" {
		t.Fatalf("%s %s (token %t): %d %v, want %d with a message: %s", method, path, tok != "", got, err, code, b)
	}
	return m.Message
}

// projects is the names GET /v2/projects answers with tok, in its order.
func (a *authAPI) projects(t *testing.T, tok string) []string {
	t.Helper()
	code, b, err := a.call(tok, "GET", "/projects")
	var list []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("GET /v2/projects: %d %v: %s", code, err, b)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.Metadata.Name)
	}
	return names
}

// openAt loads a page (a URL, not a route of the harness's dashboard) and waits for its h1.
func (p *page) openAt(url string) {
	p.t.Helper()
	if err := p.run(time.Minute, chromedp.Navigate(url)); err != nil {
		p.fatalf("open %s: %v", url, err)
	}
	p.waitVisible("h1", time.Minute)
}

// goTo changes the page's route as an edited address or a bookmark does (a hashchange).
func (p *page) goTo(route string) {
	p.t.Helper()
	if _, err := eval[string](p, fmt.Sprintf(`location.hash = %q`, route)); err != nil {
		p.fatalf("set location.hash %s: %v", route, err)
	}
	p.waitHash(route)
}

// submitToken puts tok in the token form and submits it with its button.
func (p *page) submitToken(tok string) {
	p.t.Helper()
	p.waitVisible(`form#token-form input#token`, 30*time.Second)
	if err := p.run(30*time.Second,
		chromedp.SetValue(chromedp.CSS(`form#token-form input#token`), tok),
		chromedp.Click(chromedp.CSS(`form#token-form button[type=submit]`))); err != nil {
		p.fatalf("submit the token: %v", err)
	}
}

// kept is what the browser keeps for the page's origin: sessionStorage and localStorage
// (as JSON), document.cookie and every cookie the browser holds for the origin (HttpOnly
// ones included).
type kept struct{ session, local, cookie, cookies string }

func (p *page) kept(origin string) kept {
	p.t.Helper()
	s, err := eval[[]string](p, `[JSON.stringify(sessionStorage), JSON.stringify(localStorage), document.cookie]`)
	if err != nil || len(s) != 3 {
		p.fatalf("read the page's storage: %v %q", err, s)
	}
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{origin + "/dashboard/"}})
	if err != nil {
		p.fatalf("read the browser's cookies: %v", err)
	}
	var cookies []string
	for _, c := range res.Cookies {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	return kept{session: s[0], local: s[1], cookie: s[2], cookies: strings.Join(cookies, "; ")}
}

// storedToken is the token sessionStorage holds under the page's key ("" when none).
func (k kept) storedToken(t *testing.T) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(k.session), &m); err != nil {
		t.Fatalf("sessionStorage as JSON %q: %v", k.session, err)
	}
	return m[tokenKey]
}

// apiCalls are the paths of the API calls the page made since it was loaded, in order.
func (p *page) apiCalls() []string {
	p.t.Helper()
	calls, err := eval[[]string](p, `performance.getEntriesByType("resource").map(e => new URL(e.name).pathname).filter(p => p.startsWith("/v2/"))`)
	if err != nil {
		p.fatalf("read the page's resource timings: %v", err)
	}
	return calls
}

// actionsOnPage are the data-action values of the page's action buttons, in order.
func (p *page) actionsOnPage() []string {
	p.t.Helper()
	a, err := eval[[]string](p, `[...document.querySelectorAll("button[data-action]")].map(b => b.dataset.action)`)
	if err != nil {
		p.fatalf("read the action buttons: %v", err)
	}
	return a
}

// projectLinks are the project links of the home view, in order.
func (p *page) projectLinks() []string {
	p.t.Helper()
	l, err := eval[[]string](p, `[...document.querySelectorAll('#view [data-testid=projects] a[href^="#/p/"]')].map(a => a.getAttribute("href"))`)
	if err != nil {
		p.fatalf("read the project links: %v", err)
	}
	return l
}

var allActions = []string{"approve", "instantiate", "update", "rollback", "stop", "terminate"}

// The page against a temco with authentication on: without a token it asks for one and
// loads nothing; a forged token is refused with the API's message; a tenant sees only its
// project, gets the API's 403 on another project's DIG (without action buttons) and may
// operate its own; signing out forgets the token, which was only ever in sessionStorage;
// an admin may operate every DIG.
func TestAuthenticatedDashboard(t *testing.T) {
	iss, err := authtest.New(authIssuer, authAudience)
	if err != nil {
		t.Fatal(err)
	}
	forger, err := authtest.New(authIssuer, authAudience) // same names, another key
	if err != nil {
		t.Fatal(err)
	}
	a := startAuthAPI(t, iss)

	// Through the dev stack's api (no authentication): a project the tenant is not
	// granted and one it is, each with a DIG in state Created.
	cluster := devCluster.name
	other := newProject(t, "br-auth-other", cluster)
	other.deploy(cluster)
	mine := newProject(t, "br-auth-mine", cluster)
	mine.deploy(cluster)
	for _, f := range []*fixture{other, mine} {
		if s := f.status(); s.state() != "Created" {
			t.Fatalf("%s's DIG is %q, not Created", f.project, s.state())
		}
	}

	const tenant, admin = "tenant-mine", "admin-1"
	tenantTok := iss.Token(tenant, []string{"project:" + mine.project}, nil)
	adminTok := iss.Token(admin, []string{"admin"}, nil)
	forged := forger.Token(admin, []string{"admin"}, nil)

	// The API's own answers, which the page must show.
	noTokenMsg := a.message(t, "", "GET", "/session", http.StatusUnauthorized)
	forgedMsg := a.message(t, forged, "GET", "/session", http.StatusUnauthorized)
	if noTokenMsg == forgedMsg {
		t.Fatalf("the API says the same of no token and of a forged one: %q", noTokenMsg)
	}
	forbiddenMsg := a.message(t, tenantTok, "GET", other.dig()+"/dashboard?offset=0&limit=50", http.StatusForbidden)
	tenantProjects := a.projects(t, tenantTok)
	if !slices.Equal(tenantProjects, []string{mine.project}) {
		t.Fatalf("GET /v2/projects as the tenant of %s lists %v", mine.project, tenantProjects)
	}
	if all := a.projects(t, adminTok); !slices.Contains(all, other.project) || !slices.Contains(all, mine.project) {
		t.Fatalf("GET /v2/projects as an admin of the api with authentication lists %v: not the stack's store?", all)
	}
	var session struct {
		Authentication bool     `json:"authentication"`
		Subject        string   `json:"subject"`
		Admin          bool     `json:"admin"`
		Projects       []string `json:"projects"`
	}
	if code, b, err := a.call(tenantTok, "GET", "/session"); err != nil || code != 200 || json.Unmarshal(b, &session) != nil ||
		!session.Authentication || session.Subject != tenant || session.Admin || !slices.Equal(session.Projects, []string{mine.project}) {
		t.Fatalf("GET /v2/session as the tenant: %d %v: %s", code, err, b)
	}

	p := newPage(t)
	p.extra = func() string {
		return other.restView() + mine.restView() + "--- temco api (authentication on), its log's end\n" + tail(a.proc.Log, 3000)
	}
	dash := a.base + "/dashboard/"

	// 1. No token: the form, the API's 401 message, and no call but GET /v2/session.
	p.openAt(dash + "#/")
	p.waitVisible(`form#token-form`, time.Minute)
	p.waitText(message, noTokenMsg, 30*time.Second)
	if h := p.oneH1(); h != "Sign in" {
		p.fatalf("the token form's h1 reads %q", h)
	}
	p.waitUntil("the page's GET /v2/session in its resource timings", 10*time.Second, func() (bool, string, error) {
		c := p.apiCalls()
		return slices.Contains(c, "/v2/session"), fmt.Sprint(c), nil
	})
	if c := p.apiCalls(); !slices.Equal(c, []string{"/v2/session"}) {
		p.fatalf("without a token the page called %v; only GET /v2/session was due", c)
	}
	if l := p.projectLinks(); len(l) > 0 {
		p.fatalf("without a token the page lists projects %v", l)
	}
	if n, _ := eval[int](p, `document.querySelectorAll("button#sign-out").length`); n != 0 {
		p.fatalf("without a token the page offers to sign out")
	}
	p.shot("token-form")

	// 2. A token signed by another key: refused with the API's message; the form stays,
	// emptied, and the token is not kept.
	p.submitToken(forged)
	p.waitText(message, forgedMsg, 30*time.Second)
	p.waitVisible(`form#token-form`, 10*time.Second)
	if v, err := eval[string](p, `document.querySelector("input#token").value`); err != nil || v != "" {
		p.fatalf("after the refusal the token field holds %q (%v)", v, err)
	}
	if c := p.apiCalls(); !slices.Equal(c, []string{"/v2/session", "/v2/session"}) {
		p.fatalf("with a refused token the page called %v; only GET /v2/session twice was due", c)
	}
	if k := p.kept(a.base); k.storedToken(t) != "" || strings.Contains(k.session+k.local+k.cookie+k.cookies, forged) {
		p.fatalf("the refused token is kept: %+v", k)
	}
	p.shot("token-refused")

	// 3. The tenant of one project: its projects are the API's (that one only), the bar
	// names it, and the home view loads without an error.
	p.submitToken(tenantTok)
	p.waitGone(`form#token-form`, 30*time.Second)
	p.waitVisible(`button#sign-out`, 30*time.Second)
	p.waitHash("#/")
	if h := p.oneH1(); h != "Fleet" {
		p.fatalf("signed in, the home view's h1 reads %q", h)
	}
	if bar := p.text("#session-bar"); !strings.Contains(bar, "Signed in as "+tenant) || !strings.Contains(bar, "projects: "+mine.project) {
		p.fatalf("the signed-in bar reads %q", bar)
	}
	p.waitVisible(`#view [data-testid=projects] a[href^="#/p/"]`, time.Minute)
	// The fleet: the tenant's DIG alone, as the API's GET /v2/fleet answers it.
	p.waitVisible(fmt.Sprintf(`table[data-testid=fleet] tr[data-dig=%q]`, mine.project+"/ca/v1/dig"), time.Minute)
	if rows, _ := eval[[]string](p, `[...document.querySelectorAll("table[data-testid=fleet] tr[data-dig]")].map(r => r.dataset.dig)`); !slices.Equal(rows, []string{mine.project + "/ca/v1/dig"}) {
		p.fatalf("the tenant's fleet lists %v", rows)
	}
	want := []string{}
	for _, name := range tenantProjects {
		want = append(want, "#/p/"+name)
	}
	if l := p.projectLinks(); !slices.Equal(l, want) {
		p.fatalf("the tenant's page lists projects %v; the API lists %v", l, tenantProjects)
	}
	p.noError()
	k := p.kept(a.base)
	if got := k.storedToken(t); got != tenantTok {
		p.fatalf("signed in, sessionStorage[%q] holds %q, not the token", tokenKey, got)
	}
	if strings.Contains(k.local, tenantTok) || strings.Contains(k.local, tokenKey) || k.cookie != "" || k.cookies != "" {
		p.fatalf("the token went beyond sessionStorage: localStorage %s, document.cookie %q, cookies %q", k.local, k.cookie, k.cookies)
	}
	p.shot("tenant-projects")

	// The other project's DIG, by its address: the API's 403 in #message, no data, no
	// action buttons.
	p.goTo(other.digRoute())
	if h := p.oneH1(); h != "Deployment intent group dig" {
		p.fatalf("the other project's DIG view's h1 reads %q", h)
	}
	p.waitText(message, forbiddenMsg, 30*time.Second)
	if acts := p.actionsOnPage(); len(acts) != 0 {
		p.fatalf("the tenant of %s is offered actions %v on a DIG of %s", mine.project, acts, other.project)
	}
	if n, _ := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, digState)); n != 0 {
		p.fatalf("the forbidden DIG's view shows a state")
	}
	p.shot("tenant-forbidden-dig")

	// Its own project's DIG: the state and every action; Approve goes through.
	p.goTo(mine.digRoute())
	p.oneH1()
	p.waitText(digState, "Created", time.Minute)
	if acts := p.actionsOnPage(); !slices.Equal(acts, allActions) {
		p.fatalf("on its own DIG the tenant is offered actions %v, want %v", acts, allActions)
	}
	if m := p.text(message); m != "" {
		p.fatalf("the tenant's own DIG view shows an error: %q", m)
	}
	p.shot("tenant-dig")
	p.act("approve")
	if m := p.text(message); !strings.HasPrefix(m, "Approve of dig accepted") {
		p.fatalf("the tenant's Approve: %q", m)
	}
	p.waitText(digState, "Approved", time.Minute)
	if s := mine.status(); s.state() != "Approved" {
		t.Fatalf("after the tenant's approve the API says %q", s.state())
	}

	// 4. Sign out: the form and no token anywhere, also after a reload.
	p.click(`button#sign-out`)
	p.waitVisible(`form#token-form`, 30*time.Second)
	p.waitText(message, "Signed out.", 10*time.Second)
	p.waitGone(`button#sign-out`, 10*time.Second)
	if acts := p.actionsOnPage(); len(acts) != 0 {
		p.fatalf("signed out, the page still offers actions %v", acts)
	}
	k = p.kept(a.base)
	if k.storedToken(t) != "" || strings.Contains(k.session+k.local+k.cookie+k.cookies, tenantTok) || k.cookie != "" || k.cookies != "" {
		p.fatalf("signed out, the browser keeps: sessionStorage %s, localStorage %s, document.cookie %q, cookies %q",
			k.session, k.local, k.cookie, k.cookies)
	}
	p.shot("signed-out")
	if err := p.run(time.Minute, chromedp.Reload()); err != nil {
		p.fatalf("reload: %v", err)
	}
	p.waitVisible(`form#token-form`, time.Minute)
	p.waitText(message, noTokenMsg, 30*time.Second)

	// 5. An admin: every action on the DIG the tenant may not operate.
	p.submitToken(adminTok)
	p.waitGone(`form#token-form`, 30*time.Second)
	if bar := p.text("#session-bar"); !strings.Contains(bar, "Signed in as "+admin) || !strings.Contains(bar, "(admin)") {
		p.fatalf("the admin's bar reads %q", bar)
	}
	p.goTo(other.digRoute())
	p.oneH1()
	p.waitText(digState, "Created", time.Minute)
	if acts := p.actionsOnPage(); !slices.Equal(acts, allActions) {
		p.fatalf("an admin is offered actions %v on %s's DIG, want %v", acts, other.project, allActions)
	}
	p.noError()
	p.shot("admin-dig")
}
