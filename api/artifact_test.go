package api

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/lifecycle"
)

// An app's chart is EMCO's upload or temco's reference, on a host the admin allowed.
func TestAnAppsChartMayComeByReference(t *testing.T) {
	c, srv, _ := lifecycleClient(t)
	srv.ArtifactHosts = egress.MustParse("reg.example.com,charts.example.com:8443")
	digest := "sha256:" + strings.Repeat("ab", 32)
	oci := res("web", map[string]any{"chart": map[string]any{"oci": "oci://reg.example.com/charts/web", "version": "1.2.0"}})
	got := c.do("POST", pCA+"/apps", oci).must(t, http.StatusCreated)
	if !strings.Contains(string(got.body), `"chart":{"oci":"oci://reg.example.com/charts/web","version":"1.2.0"}`) {
		t.Errorf("created %s", got.body)
	}
	// The same in emcoctl's multipart form, a Helm repository, a URL with its digest.
	c.multipart("POST", pCA+"/apps", res("repo", map[string]any{"chart": map[string]any{
		"helmRepo": "https://charts.example.com:8443/stable", "chart": "web", "version": "~1"}}), nil).must(t, http.StatusCreated)
	url := res("tgz", map[string]any{"chart": map[string]any{"url": "https://reg.example.com/web.tgz", "digest": strings.Repeat("AB", 32)}})
	if got := c.do("POST", pCA+"/apps", url).must(t, http.StatusCreated); !strings.Contains(string(got.body), digest) {
		t.Errorf("a bare digest is not stored as %s: %s", digest, got.body)
	}
	// A reference has no archive to download.
	if r := c.do("GET", pCA+"/apps/web", nil, "Accept", "application/octet-stream"); r.code != http.StatusNotFound || !strings.Contains(string(r.body), "by reference") {
		t.Errorf("download of a referenced chart: %d %s", r.code, r.body)
	}
	// An upload replaced by a reference keeps no archive.
	c.do("PUT", pCA+"/apps/app1", res("app1", map[string]any{"chart": map[string]any{"oci": "oci://reg.example.com/charts/web", "version": "1"}})).must(t, http.StatusOK)
	if d, err := srv.Store.Get(t.Context(), "/projects/p1/composite-apps/ca/v1/apps/app1"); err != nil || len(d.Blob) != 0 {
		t.Errorf("app1 after a reference replaced its upload: blob of %d bytes, %v", len(d.Blob), err)
	}

	for want, body := range map[string]any{
		"not on the hosts an admin allowed": res("x", map[string]any{"chart": map[string]any{"oci": "oci://169.254.169.254/x/y", "version": "1"}}),
		"needs its sha256":                  res("x", map[string]any{"chart": map[string]any{"url": "https://reg.example.com/web.tgz"}}),
		"exactly one of":                    res("x", map[string]any{"chart": map[string]any{}}),
		"the chart is missing":              res("x", nil),
	} {
		if r := c.do("POST", pCA+"/apps", body); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), want) {
			t.Errorf("%v: %d %s, want 400 saying %q", body, r.code, r.body, want)
		}
	}
	if r := c.multipart("POST", pCA+"/apps", oci, testChart); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "not both") {
		t.Errorf("a file and a reference: %d %s", r.code, r.body)
	}

	// A profile's archive, from a URL with its digest.
	profiles := pCA + "/composite-profiles/cprof/profiles"
	c.do("POST", profiles, res("web-prof", map[string]any{"app": "web", "archive": map[string]any{
		"url": "https://reg.example.com/web-profile.tgz", "digest": digest}})).must(t, http.StatusCreated)
	if r := c.do("POST", profiles, res("tgz-prof", map[string]any{"app": "tgz", "archive": map[string]any{
		"oci": "oci://reg.example.com/profiles/tgz", "version": "1"}})); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "from a url") {
		t.Errorf("a profile from OCI: %d %s", r.code, r.body)
	}
	if r := c.do("POST", profiles, res("tgz-prof", map[string]any{"app": "tgz"})); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "archive is missing") {
		t.Errorf("a profile without archive: %d %s", r.code, r.body)
	}
}

// A project's registry password is sealed, masked in answers and kept by a PUT of the mask.
func TestArtifactCredentialsAreSealedAndMasked(t *testing.T) {
	c, srv, _ := lifecycleClient(t)
	coll := "/projects/p1/artifact-credentials"
	cred := res("reg", map[string]any{"host": "Reg.Example.com:5000", "username": "ci", "password": "s3cret-token"})
	got := c.do("POST", coll, cred).must(t, http.StatusCreated)
	for _, r := range []response{got, c.do("GET", coll, nil).must(t, 200), c.do("GET", coll+"/reg", nil).must(t, 200)} {
		if strings.Contains(string(r.body), "s3cret") || !strings.Contains(string(r.body), `"password":"********"`) ||
			!strings.Contains(string(r.body), `"host":"reg.example.com:5000"`) {
			t.Errorf("answer %s", r.body)
		}
	}
	d, err := srv.Store.Get(t.Context(), "/projects/p1/artifact-credentials/reg")
	if err != nil || strings.Contains(d.Body+string(d.Secret), "s3cret") || len(d.Secret) == 0 {
		t.Fatalf("stored %q / %d sealed bytes, %v", d.Body, len(d.Secret), err)
	}
	c.do("PUT", coll+"/reg", res("reg", map[string]any{"host": "reg.example.com:5000", "username": "ci2", "password": "********"})).must(t, http.StatusOK)
	if d2, _ := srv.Store.Get(t.Context(), "/projects/p1/artifact-credentials/reg"); string(d2.Secret) != string(d.Secret) {
		t.Error("a PUT of the mask did not keep the stored password")
	}
	if r := c.do("POST", coll, res("again", map[string]any{"host": "reg.example.com:5000", "username": "x", "password": "y"})); r.code != http.StatusConflict {
		t.Errorf("a second credential for one host: %d %s", r.code, r.body)
	}
	for want, spec := range map[string]map[string]any{
		"spec.host is required":     {"username": "x", "password": "y"},
		"not a URL":                 {"host": "https://reg.example.com", "username": "x", "password": "y"},
		"spec.password is required": {"host": "other.example.com", "username": "x"},
	} {
		if r := c.do("POST", coll, res("bad", spec)); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), want) {
			t.Errorf("%v: %d %s, want 400 saying %q", spec, r.code, r.body, want)
		}
	}
}

// Deleting a DIG collects the charts no remaining revision keeps, once unused for the grace.
func TestDeletingADIGCollectsItsCharts(t *testing.T) {
	c, srv, _ := lifecycleClient(t)
	ctx := t.Context()
	charts := blobs.StoreOf(srv.Store)
	gone, err := charts.Put(ctx, []byte("only the deleted DIG's chart"), "")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := charts.Put(ctx, []byte("a chart another revision keeps"), "")
	if err != nil {
		t.Fatal(err)
	}
	dig := "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1"
	record(t, srv, dig, lifecycle.StatusInstantiated, "ctx-deleted", lifecycle.StatusInstantiated)
	if err := srv.Contexts.Create(ctx, &appctx.Context{ID: "ctx-other", DIG: "/elsewhere", Instance: "ctx-other", Revision: 1}); err != nil {
		t.Fatal(err)
	}
	for ctxID, sts := range map[string][]artifact.Status{
		"ctx-deleted": {{App: "app1", Blob: gone}, {App: "app2", Blob: shared}},
		"ctx-other":   {{App: "web", Blob: shared}},
	} {
		for _, st := range sts {
			if err := srv.Contexts.SetArtifact(ctx, ctxID, st); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Used longer ago than the grace.
	if _, err := srv.Store.Database().Collection("artifacts").UpdateMany(ctx, bson.D{},
		bson.D{{Key: "$set", Value: bson.D{{Key: "used", Value: time.Now().Add(-time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}
	record(t, srv, dig, lifecycle.StatusTerminated, "", "")
	c.do("DELETE", pGPI, nil).must(t, http.StatusNoContent)
	c.do("DELETE", pDIG, nil).must(t, http.StatusNoContent)
	if _, err := charts.Get(ctx, gone); !errors.Is(err, blobs.ErrNotStored) {
		t.Errorf("the deleted DIG's chart: %v, want it collected", err)
	}
	if _, err := charts.Get(ctx, shared); err != nil {
		t.Errorf("the chart another revision keeps: %v", err)
	}
}

// A credential moved to another host is sent there: it keeps no stored password, whoever
// moves it (a tenant could otherwise send an admin's password to a host it reads).
func TestAMovedArtifactCredentialNeedsItsPassword(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	bob := c.as(iss.Token("bob", []string{"project:p2"}, nil))
	admin.do("POST", "/projects", res("p1", nil)).must(t, http.StatusCreated)
	admin.do("POST", "/projects", res("p2", nil)).must(t, http.StatusCreated)
	item := "/projects/p1/artifact-credentials/reg"
	admin.do("POST", "/projects/p1/artifact-credentials", res("reg", map[string]any{
		"host": "reg.example.com", "username": "ci", "password": "admins-s3cret"})).must(t, http.StatusCreated)
	stored := func() (host string, secret []byte) {
		t.Helper()
		d, err := c.store.Get(t.Context(), item)
		if err != nil {
			t.Fatal(err)
		}
		return d.Fields["host"], d.Secret
	}
	_, sealed := stored()

	for name, spec := range map[string]map[string]any{
		"the mask":    {"host": "attacker.example.com", "username": "ci", "password": secretMask},
		"no password": {"host": "attacker.example.com", "username": "ci"},
		"a new port":  {"host": "reg.example.com:8443", "username": "ci", "password": secretMask},
	} {
		for who, cl := range map[string]*client{"the project's tenant": alice, "an admin": admin} {
			r := cl.do("PUT", item, res("reg", spec)).must(t, http.StatusBadRequest)
			if msg := r.message(t); !strings.Contains(msg, "spec.host") || !strings.Contains(msg, "a new host needs its password: send it") {
				t.Errorf("%s moving it with %s: message %q", who, name, msg)
			}
		}
	}
	if host, secret := stored(); host != "reg.example.com" || string(secret) != string(sealed) {
		t.Fatalf("after the refused moves: host %q, password kept %v", host, string(secret) == string(sealed))
	}
	// Another project's tenant cannot even try.
	bob.do("PUT", item, res("reg", map[string]any{"host": "attacker.example.com", "username": "ci", "password": secretMask})).must(t, http.StatusForbidden)

	// The same host keeps it (whatever the case or spaces); a new host with its password moves.
	alice.do("PUT", item, res("reg", map[string]any{"host": " Reg.Example.com ", "username": "ci2", "password": secretMask})).must(t, http.StatusOK)
	if _, secret := stored(); string(secret) != string(sealed) {
		t.Error("a PUT of the mask on the same host did not keep the stored password")
	}
	alice.do("PUT", item, res("reg", map[string]any{"host": "mirror.example.com", "username": "ci2", "password": "alices-token"})).must(t, http.StatusOK)
	host, secret := stored()
	plain, err := c.keys.Open(secret, []byte(item))
	if err != nil || host != "mirror.example.com" || !strings.Contains(string(plain), "alices-token") {
		t.Errorf("moved with its password: host %q, password replaced %v (%v)", host, strings.Contains(string(plain), "alices-token"), err)
	}
}
