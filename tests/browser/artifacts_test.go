package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/store"
)

// contextStore opens the stack's AppContexts (its MongoDB, from temco dev's summary), to
// seed what the stack's own pipeline would take minutes, or a broken registry, to reach.
func contextStore(t *testing.T) *appctx.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	contexts, err := appctx.New(ctx, stackStore(t).Database())
	if err != nil {
		t.Fatal(err)
	}
	return contexts
}

// stackStore opens the stack's resource store (its MongoDB, from temco dev's summary),
// disconnected at the test's end.
func stackStore(t *testing.T) *store.Store {
	t.Helper()
	var uri string
	for _, l := range devSummary {
		if m := mongoSummary.FindStringSubmatch(l); m != nil {
			uri = m[1]
		}
	}
	if uri == "" {
		t.Fatalf("temco dev's summary names no MongoDB:\n%s", strings.Join(devSummary, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, client, err := store.Open(ctx, uri, "temco") // the database stackEnv gives an api
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return st
}

// A DIG whose charts were uploaded shows no artifacts; once its context records charts by
// reference (seeded: one Rendered from the store's cache, one downloading and retrying,
// one Failed), the page shows each one's source, stage, version and shortened digest,
// the download's progress, the retry's attempt, next try and last error, and the Failed
// one's error above the table; the digest's Copy button puts the whole digest in #message.
func TestArtifactsOnThePage(t *testing.T) {
	cluster := devCluster.name
	f := newProject(t, "br-artifacts", cluster)
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
	p.extra = f.restView
	p.open(f.digRoute())
	p.oneH1()
	p.waitText(digState, "Instantiated", time.Minute)
	p.noError()
	const section = `[data-testid=artifacts-section]`
	if n, err := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, section)); err != nil || n != 0 {
		p.fatalf("an uploaded chart shows artifacts (%d sections, %v)", n, err)
	}

	var d struct {
		Instance  string            `json:"instance"`
		Artifacts []artifact.Status `json:"artifacts"`
	}
	if err := json.Unmarshal(must(t, 200, "GET", f.dig()+"/dashboard", nil), &d); err != nil || d.Instance == "" || len(d.Artifacts) != 0 {
		t.Fatalf("the dashboard answer before: %+v %v", d, err)
	}
	webDigest := artifact.Digest([]byte("the web chart's archive"))
	wanted := artifact.Digest([]byte("what the URL's owner published"))
	got := artifact.Digest([]byte("what the URL served"))
	next := time.Now().Add(10 * time.Minute)
	contexts := contextStore(t)
	for _, st := range []artifact.Status{
		{App: app, Source: "oci://127.0.0.1:5000/charts/web", Transport: artifact.TransportOCI, Stage: artifact.StageRendered,
			Version: "1.0.0", Digest: webDigest, Blob: webDigest, Size: 2048, Cached: true},
		{App: "api", Source: "http://127.0.0.1:8879 api", Transport: artifact.TransportHelm, Stage: artifact.StageDownloading,
			Version: "2.1.0", Size: 4096, Downloaded: 1024, Retrying: true, Attempts: 4, NextTry: next,
			Error: "read tcp 127.0.0.1:40112->127.0.0.1:8879: connection reset by peer"},
		{App: "cache", Source: "https://charts.example/cache-0.1.0.tgz", Transport: artifact.TransportURL, Stage: artifact.StageFailed,
			Digest: wanted, Error: "digest mismatch: want " + wanted + ", got " + got},
	} {
		if err := contexts.SetArtifact(context.Background(), d.Instance, st); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(must(t, 200, "GET", f.dig()+"/dashboard", nil), &d); err != nil || len(d.Artifacts) != 3 {
		t.Fatalf("the dashboard answer after: %+v %v", d.Artifacts, err)
	}

	// The page shows them at its next poll, sorted by app as the API sends them.
	rowOf := func(a string) string { return fmt.Sprintf(`table[data-testid=artifacts] tr[data-app=%q]`, a) }
	p.waitVisible(rowOf("cache"), time.Minute)
	apps, err := eval[string](p, `[...document.querySelectorAll("table[data-testid=artifacts] tbody tr")].map(r => r.dataset.app).join(",")`)
	if err != nil || apps != "api,cache,"+app {
		t.Errorf("rows %q (%v), want api,cache,%s", apps, err, app)
	}
	cell := func(a, testid string) string { return p.text(rowOf(a) + fmt.Sprintf(` td[data-testid=%q]`, testid)) }
	contains := func(what, s string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(s, w) {
				t.Errorf("%s reads %q: no %q", what, s, w)
			}
		}
	}

	// Rendered, from the store's cache: its version, its digest shortened, the whole one
	// in the title.
	contains("web's row", p.text(rowOf(app)), "oci://127.0.0.1:5000/charts/web", "OCI registry", "1.0.0")
	contains("web's stage", cell(app, "artifact-stage"), "Rendered")
	short := webDigest[:len("sha256:")+12] + "…"
	if s := p.text(rowOf(app) + ` code`); s != short {
		t.Errorf("web's digest reads %q, want %q", s, short)
	}
	if title, err := eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.title ?? ""`, rowOf(app)+` code`)); err != nil || title != webDigest {
		t.Errorf("web's digest's title %q (%v), want %s", title, err, webDigest)
	}
	contains("web's download", cell(app, "artifact-transfer"), "cached (not downloaded)", "2.0 KiB")

	// Downloading and retrying: how far, which attempt, when the next, and why.
	contains("api's stage", cell("api", "artifact-stage"), "Downloading", "retrying")
	contains("api's download", cell("api", "artifact-transfer"), "1.0 KiB of 4.0 KiB")
	contains("api's retry", cell("api", "artifact-retry"), "attempt 4", "next try at", "Last error", "connection reset by peer")
	if n, err := eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, rowOf("api")+` progress`)); err != nil || n != 1 {
		t.Errorf("api's progress bar: %d (%v)", n, err)
	}

	// Failed: said in words, its error in the row and above the table.
	contains("cache's stage", cell("cache", "artifact-stage"), "Failed")
	contains("cache's error", cell("cache", "artifact-retry"), "Failed:", "digest mismatch", got)
	failure := `[data-testid=artifact-failures] li[data-app="cache"]`
	contains("the failure above the table", p.text(failure), "Failed: the chart of app cache", "digest mismatch", wanted, got)
	if n, err := eval[int](p, `document.querySelectorAll("[data-testid=artifact-failures] li").length`); err != nil || n != 1 {
		t.Errorf("%d failures listed (%v), want 1", n, err)
	}
	p.shot("artifacts")

	// Copy: the whole digest, said in #message whether the browser let the page copy or not.
	p.click(fmt.Sprintf(`button[data-action=copy-digest][data-app=%q]`, app))
	p.waitUntil("the copied digest in #message", 30*time.Second, func() (bool, string, error) {
		s, err := eval[string](p, fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "").trim()`, message))
		return strings.Contains(s, webDigest), fmt.Sprintf("%q", s), err
	})
	t.Logf("copy: %s", p.text(message))
	if !p.focusIs(fmt.Sprintf(`button[data-action=copy-digest][data-app=%q]`, app)) {
		t.Errorf("after the copy the focus is on %s, not its button", p.focused())
	}
}
