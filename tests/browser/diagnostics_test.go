package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/auth/authtest"
)

// The diagnostics view's handles (dashboard/README.md).
const (
	diagRows      = `table[data-testid=diagnostics] tr[data-path]`
	filterRefused = `input#filter-refused`
)

func diagRow(attr, value string) string {
	return fmt.Sprintf(`table[data-testid=diagnostics] tr[%s=%q]`, attr, value)
}

// report sends temco hub's report of object (Kind/namespace/name, or Kind/name) as the
// hub does: PUT /v2/diagnostics/declarations with X-Temco-Owner hub:<object>.
func report(t *testing.T, object, project, path string, accepted bool, message string, generation int64) {
	t.Helper()
	parts := strings.Split(object, "/")
	d := map[string]any{"object": object, "kind": parts[0], "name": parts[len(parts)-1], "generation": generation,
		"project": project, "path": path, "accepted": accepted, "message": message, "time": time.Now().UTC().Format(time.RFC3339)}
	if len(parts) == 3 {
		d["namespace"] = parts[1]
	}
	if code, b := callAs(t, "hub:"+object, "PUT", "/diagnostics/declarations", d); code != http.StatusNoContent {
		t.Fatalf("report %s: %d %s", object, code, b)
	}
}

// callAs sends a JSON request with X-Temco-Owner owner, as temco hub writes.
func callAs(t *testing.T, owner, method, path string, body any) (int, []byte) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, apiURL+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Temco-Owner", owner)
	code, b, err := send(req)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// diagnosticsAnswer is the part of GET /v2/diagnostics the tests read.
type diagnosticsAnswer struct {
	Resources []struct {
		Path     string `json:"path"`
		Object   string `json:"object"`
		Project  string `json:"project"`
		Accepted bool   `json:"accepted"`
	} `json:"resources"`
	Summary struct {
		Total   int `json:"total"`
		Refused int `json:"refused"`
	} `json:"summary"`
}

func diagnosticsOf(t *testing.T, query string) diagnosticsAnswer {
	t.Helper()
	var a diagnosticsAnswer
	if err := json.Unmarshal(must(t, 200, "GET", "/diagnostics"+query, nil), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// rowsShown are the "path|object|accepted" of the diagnostics table's rows, in order.
func (p *page) rowsShown() []string {
	p.t.Helper()
	rows, err := eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(r => [r.dataset.path, r.dataset.object ?? "", r.dataset.accepted].join("|"))`, diagRows))
	if err != nil {
		p.fatalf("read the diagnostics rows: %v", err)
	}
	return rows
}

// textHas waits until the text of sel contains want.
func (p *page) textHas(sel, want string, timeout time.Duration) {
	p.t.Helper()
	p.waitUntil(fmt.Sprintf("%s says %q", sel, want), timeout, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "<absent>").trim()`, sel))
		return strings.Contains(s, want), fmt.Sprintf("it reads %q", s), err
	})
}

// A hub object the API refused and one it accepted, as temco hub reports them: the page
// lists the refused one with its message and the accepted one with its object, says which
// is which in words, counts them as the API does, and "Refused only" — reached and
// toggled with the keyboard — leaves the refused ones alone.
func TestDiagnosticsPage(t *testing.T) {
	const project = "br-diag"
	hubProject := "Project/" + project
	broken := "DeploymentIntentGroup/" + project + "/broken"
	const refusal = `composite app "shop" version "v1" does not exist`
	if code, b := callAs(t, "hub:"+hubProject, "POST", "/projects", res(project, nil)); code != http.StatusCreated {
		t.Fatalf("create the hub's project: %d %s", code, b)
	}
	report(t, hubProject, project, "/v2/projects/"+project, true, "", 1)
	report(t, broken, project, "/v2/projects/"+project+"/composite-apps/shop/v1/deployment-intent-groups/broken", false, refusal, 2)
	mine := diagnosticsOf(t, "?project="+project)
	if len(mine.Resources) != 2 || mine.Summary.Refused != 1 {
		t.Fatalf("the API lists for %s: %+v", project, mine)
	}
	p := newPage(t)
	p.extra = func() string {
		_, b, err := call("GET", "/diagnostics", nil)
		return fmt.Sprintf("GET /v2/diagnostics: %v\n%s", err, b)
	}

	p.open("#/")
	p.follow("#/diagnostics")
	if h := p.oneH1(); h != "Diagnostics" {
		p.fatalf("the view's h1 reads %q", h)
	}
	refusedRow := diagRow("data-object", broken)
	acceptedRow := diagRow("data-path", "/v2/projects/"+project)
	p.waitVisible(refusedRow, time.Minute)
	p.textHas(refusedRow+` td[data-testid=accepted]`, "Refused", 10*time.Second)
	p.textHas(refusedRow+` td[data-testid=errors]`, refusal, 10*time.Second)
	p.textHas(refusedRow+` td[data-testid=source]`, "temco hub", 10*time.Second)
	p.textHas(refusedRow+` td[data-testid=source]`, "generation 2", 10*time.Second)
	p.textHas(acceptedRow+` td[data-testid=accepted]`, "Accepted", 10*time.Second)
	p.textHas(acceptedRow+` td[data-testid=source]`, "object "+hubProject+", generation 1", 10*time.Second)
	if s := p.text(acceptedRow + ` td[data-testid=errors]`); s != "none" {
		p.fatalf("the accepted project's errors read %q", s)
	}
	if href, _ := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.getAttribute("href") ?? "<absent>"`, acceptedRow+` th a`)); href != "#/p/"+project {
		p.fatalf("the accepted project links to %q", href)
	}
	p.noError()
	all := diagnosticsOf(t, "")
	p.waitText(`[data-testid=summary-refused]`, strconv.Itoa(all.Summary.Refused), 30*time.Second)
	p.waitText(`[data-testid=summary-total]`, strconv.Itoa(all.Summary.Total), 30*time.Second)
	p.shot("all")

	// Refused only, with the keyboard.
	p.tabTo(filterRefused)
	p.key(" ") // a checkbox toggles on Space
	p.waitHash("#/diagnostics?refused=true")
	refused := diagnosticsOf(t, "?accepted=false")
	var want []string
	for _, e := range refused.Resources {
		want = append(want, e.Path+"|"+e.Object+"|false")
	}
	p.waitUntil("only the refused rows, as the API lists them", 30*time.Second, func() (bool, string, error) {
		got := p.rowsShown()
		return slices.Equal(got, want), fmt.Sprintf("rows %q, the API's %q", got, want), nil
	})
	if n, _ := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, acceptedRow)); n != 0 {
		p.fatalf("refused only still shows the accepted project")
	}
	p.shot("refused-only")

	p.key(" ") // the focus stayed on the checkbox
	p.waitHash("#/diagnostics")
	p.waitVisible(acceptedRow, 30*time.Second)
	if on, _ := eval[bool](p, fmt.Sprintf(`document.querySelector(%q).checked`, filterRefused)); on {
		p.fatalf("the filter is still checked")
	}
}

// With authentication on, a tenant's page lists its project's entries only, its refused
// report among them; nothing cluster-scoped, nothing of another project.
func TestDiagnosticsPageOfATenant(t *testing.T) {
	iss, err := authtest.New(authIssuer, authAudience)
	if err != nil {
		t.Fatal(err)
	}
	a := startAuthAPI(t, iss)
	const project, other = "br-diag-tenant", "br-diag-other"
	for _, name := range []string{project, other} {
		must(t, 201, "POST", "/projects", res(name, nil))
		report(t, "DeploymentIntentGroup/"+name+"/broken", name, "", false, "refused in "+name, 1)
	}
	tok := iss.Token("diag-tenant", []string{"project:" + project}, nil)
	code, b, err := a.call(tok, "GET", "/diagnostics")
	var theirs diagnosticsAnswer
	if err != nil || code != 200 || json.Unmarshal(b, &theirs) != nil || len(theirs.Resources) != 2 {
		t.Fatalf("GET /v2/diagnostics as the tenant: %d %v: %s", code, err, b)
	}

	p := newPage(t)
	p.extra = func() string { return "GET /v2/diagnostics as the tenant:\n" + string(b) }
	p.openAt(a.base + "/dashboard/#/diagnostics")
	p.submitToken(tok)
	p.waitGone(`form#token-form`, 30*time.Second)
	if h := p.oneH1(); h != "Diagnostics" {
		p.fatalf("signed in, the view's h1 reads %q", h)
	}
	refusedRow := diagRow("data-object", "DeploymentIntentGroup/"+project+"/broken")
	p.waitVisible(refusedRow, time.Minute)
	p.textHas(refusedRow+` td[data-testid=errors]`, "refused in "+project, 10*time.Second)
	want := []string{"/v2/projects/" + project + "||true", "|DeploymentIntentGroup/" + project + "/broken|false"}
	slices.Sort(want)
	got := p.rowsShown()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		p.fatalf("the tenant's page lists %q, want %q", got, want)
	}
	p.waitText(`[data-testid=summary-total]`, "2", 30*time.Second)
	p.noError()
	p.shot("tenant")
	if m := a.message(t, tok, "GET", "/diagnostics?project="+url.QueryEscape(other), http.StatusForbidden); !strings.Contains(m, "not granted") {
		t.Errorf("the tenant's filter on another project: %q", m)
	}
}
