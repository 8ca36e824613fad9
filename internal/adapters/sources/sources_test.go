package sources

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/artifact"
)

// repoServer serves a Helm repository with one chart, web 1.0.0, whose index.yaml
// states digest; files may be replaced to tamper with them.
func repoServer(t *testing.T, archive []byte, digest string) (*httptest.Server, map[string][]byte, *int) {
	files := map[string][]byte{
		"/charts/web-1.0.0.tgz": archive,
		"/charts/index.yaml": []byte(fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n    digest: %s\n    urls: [web-1.0.0.tgz]\n  - name: web\n    version: 0.9.0\n    urls: [web-0.9.0.tgz]\n",
			strings.TrimPrefix(digest, "sha256:"))),
	}
	fails := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if *fails > 0 {
			*fails--
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if u, p, ok := r.BasicAuth(); !ok || u != "me" || p != "secret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv, files, fails
}

func clientFor(srv *httptest.Server, creds bool) *Client {
	u, _ := url.Parse(srv.URL)
	return NewClient(context.Background(), egress.MustParse(u.Host), func(host string) (Credential, bool) {
		return Credential{"me", "secret"}, creds && host == u.Host
	}, nil)
}

func TestAHelmRepositoryChartIsPinnedByItsIndexAndChecked(t *testing.T) {
	archive := []byte("chart bytes")
	digest := artifact.Digest(archive)
	srv, files, fails := repoServer(t, archive, digest)
	ctx := context.Background()
	src := artifact.Source{HelmRepo: srv.URL + "/charts", Chart: "web", Version: "^1"}
	r, err := Resolve(ctx, src, clientFor(srv, true))
	if err != nil || r.Digest != digest || r.Version != "1.0.0" || r.Ref != srv.URL+"/charts/web-1.0.0.tgz" {
		t.Fatalf("resolved %+v, %v; want 1.0.0 pinned to %s", r, err, digest)
	}
	data, blob, err := Download(ctx, r, clientFor(srv, true))
	if err != nil || string(data) != "chart bytes" || blob != digest {
		t.Fatalf("downloaded %q %s, %v", data, blob, err)
	}

	// A registry that fails is tried again; one that refuses is not.
	*fails = 1
	if _, _, err := Download(ctx, r, clientFor(srv, true)); err == nil || IsPermanent(err) {
		t.Fatalf("a 503 answered %v, want a transient error", err)
	}
	if _, _, err := Download(ctx, r, clientFor(srv, false)); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("no credentials answered %v, want a permanent 401", err)
	}

	// Tampered bytes behind an unchanged index are refused, naming both digests.
	files["/charts/web-1.0.0.tgz"] = []byte("evil bytes")
	_, _, err = Download(ctx, r, clientFor(srv, true))
	var m *Mismatch
	if !errors.As(err, &m) || !IsPermanent(err) || m.Want != digest || m.Got != artifact.Digest([]byte("evil bytes")) {
		t.Fatalf("tampered chart: %v, want a permanent mismatch naming both digests", err)
	}

	// A version the index lacks, or one it gives no digest for, cannot resolve.
	for _, v := range []string{"2.0.0", "0.9.0"} {
		if _, err := Resolve(ctx, artifact.Source{HelmRepo: srv.URL + "/charts", Chart: "web", Version: v}, clientFor(srv, true)); err == nil || !IsPermanent(err) {
			t.Errorf("version %s: %v, want a permanent failure", v, err)
		}
	}
	// A digest the source demands that the index contradicts is refused before downloading.
	other := artifact.Digest([]byte("other"))
	if _, err := Resolve(ctx, artifact.Source{HelmRepo: srv.URL + "/charts", Chart: "web", Version: "1.0.0", Digest: other}, clientFor(srv, true)); !errors.As(err, &m) {
		t.Errorf("contradicted digest: %v, want a mismatch", err)
	}
}

func TestAURLIsReachedOnlyWhereTheAdminAllowed(t *testing.T) {
	archive := []byte("chart bytes")
	srv, _, _ := repoServer(t, archive, artifact.Digest(archive))
	ctx := context.Background()
	r, err := Resolve(ctx, artifact.Source{URL: srv.URL + "/charts/web-1.0.0.tgz", Digest: artifact.Digest(archive)}, clientFor(srv, true))
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := Download(ctx, r, clientFor(srv, true)); err != nil || string(data) != "chart bytes" {
		t.Fatalf("downloaded %q, %v", data, err)
	}
	elsewhere := NewClient(ctx, egress.MustParse("registry.example.com"), nil, nil)
	if _, _, err := Download(ctx, r, elsewhere); err == nil || !IsPermanent(err) {
		t.Fatalf("a host off the list answered %v, want a permanent refusal", err)
	}
}
