package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/egress"
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
