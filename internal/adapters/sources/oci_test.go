package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/artifact"
)

// fakeRegistry answers the OCI distribution API for one repository, charts/web, with the
// manifests and blobs it is given (a blob's declared size may be anything: the manifest
// says it), counting what it serves of each blob.
type fakeRegistry struct {
	srv       *httptest.Server
	mu        sync.Mutex
	manifests map[string][]byte // by digest and by tag
	blobs     map[string][]byte // by digest
	served    map[string]int    // bytes of each blob written
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	f := &fakeRegistry{manifests: map[string][]byte{}, blobs: map[string][]byte{}, served: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegistry) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ref, ok := strings.CutPrefix(r.URL.Path, "/v2/charts/web/manifests/"); ok {
		m, ok := f.manifests[ref]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", artifact.Digest(m))
		w.Header().Set("Content-Length", strconv.Itoa(len(m)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(m)
		}
		return
	}
	if d, ok := strings.CutPrefix(r.URL.Path, "/v2/charts/web/blobs/"); ok {
		b, ok := f.blobs[d]
		if !ok {
			http.NotFound(w, r)
			return
		}
		n, _ := w.Write(b)
		f.served[d] += n
		return
	}
	http.NotFound(w, r)
}

// push stores a manifest of the layers (media type, bytes served, size declared; -1: the
// bytes' own) and a Helm config for web 1.0.0 under tag, returning its digest.
func (f *fakeRegistry) push(tag string, layers ...layerSpec) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	config := []byte(`{"name":"web","version":"1.0.0","apiVersion":"v2"}`)
	f.blobs[artifact.Digest(config)] = config
	descriptor := func(mediaType string, data []byte, size int64) map[string]any {
		return map[string]any{"mediaType": mediaType, "digest": artifact.Digest(data), "size": size}
	}
	var ls []map[string]any
	for _, l := range layers {
		size := l.declared
		if size < 0 {
			size = int64(len(l.data))
		}
		f.blobs[artifact.Digest(l.data)] = l.data
		ls = append(ls, descriptor(l.mediaType, l.data, size))
	}
	data, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": ocispec.MediaTypeImageManifest,
		"config": descriptor(registry.ConfigMediaType, config, int64(len(config))), "layers": ls})
	f.manifests[tag], f.manifests[artifact.Digest(data)] = data, data
	return artifact.Digest(data)
}

type layerSpec struct {
	mediaType string
	data      []byte
	declared  int64
}

func (f *fakeRegistry) servedOf(b []byte) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served[artifact.Digest(b)]
}

func (f *fakeRegistry) client(t *testing.T) *Client {
	u, _ := url.Parse(f.srv.URL)
	c := NewClient(context.Background(), egress.MustParse(u.Host), nil, nil)
	t.Cleanup(c.Close)
	return c
}

func (f *fakeRegistry) source() artifact.Source {
	return artifact.Source{OCI: "oci://" + strings.TrimPrefix(f.srv.URL, "http://") + "/charts/web", Version: "1.0.0", PlainHTTP: true}
}

// A chart layer is read only once the size its manifest declares is within the bound: a
// manifest declaring 1 GiB fails at once, permanently, with both sizes, and not one byte
// of the layer is read (Helm's client read it whole first, allocating the 1 GiB).
func TestAnOCILayerOverTheBoundIsNotRead(t *testing.T) {
	f := newFakeRegistry(t)
	chart, prov := []byte("a chart's bytes"), []byte("a provenance")
	f.push("1.0.0", layerSpec{registry.ChartLayerMediaType, chart, 1 << 30}, layerSpec{registry.ProvLayerMediaType, prov, 1 << 30})
	ctx := context.Background()
	r, err := Resolve(ctx, f.source(), f.client(t))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Download(ctx, r, f.client(t))
	if want := fmt.Sprintf("the manifest's chart layer is %d bytes, over the %d allowed", 1<<30, artifact.MaxSize); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a 1 GiB chart layer: %v, want a permanent failure saying %q", err, want)
	}
	if _, _, err := DownloadProvenance(ctx, r, f.client(t)); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "provenance layer is 1073741824 bytes") {
		t.Errorf("a 1 GiB provenance layer: %v, want a permanent failure naming its size", err)
	}
	if n, m := f.servedOf(chart), f.servedOf(prov); n != 0 || m != 0 {
		t.Errorf("the registry served %d bytes of the chart layer and %d of the provenance, want none", n, m)
	}
}

// A chart layer is checked against the manifest: its digest, and a size other than the
// one declared, fail permanently; the chart and its provenance (and the archive's name,
// from the config) come back as pushed.
func TestAnOCIChartIsReadAsItsManifestDeclaresIt(t *testing.T) {
	f := newFakeRegistry(t)
	chart, prov := []byte("a chart's bytes"), []byte("a provenance")
	f.push("1.0.0", layerSpec{registry.ChartLayerMediaType, chart, -1}, layerSpec{registry.ProvLayerMediaType, prov, -1})
	ctx := context.Background()
	r, err := Resolve(ctx, f.source(), f.client(t))
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := Download(ctx, r, f.client(t))
	if err != nil || string(data) != string(chart) {
		t.Fatalf("downloaded %q, %v", data, err)
	}
	if p, name, err := DownloadProvenance(ctx, r, f.client(t)); err != nil || string(p) != string(prov) || name != "web-1.0.0.tgz" {
		t.Fatalf("provenance %q of %q, %v", p, name, err)
	}

	f.mu.Lock()
	f.blobs[artifact.Digest(chart)] = []byte("other bytes, same size")[:len(chart)]
	f.mu.Unlock()
	_, _, err = Download(ctx, r, f.client(t))
	var m *Mismatch
	if !errors.As(err, &m) || !IsPermanent(err) || m.Want != artifact.Digest(chart) {
		t.Errorf("a tampered layer: %v, want a permanent mismatch", err)
	}

	short := f.push("short", layerSpec{registry.ChartLayerMediaType, chart, int64(len(chart)) + 100})
	r.Ref, r.Digest = strings.Split(r.Ref, "@")[0]+"@"+short, short
	if _, _, err := Download(ctx, r, f.client(t)); err == nil {
		t.Error("a layer shorter than its manifest says was read")
	}

	none := f.push("none", layerSpec{"application/vnd.example.other", chart, -1})
	r.Ref, r.Digest = strings.Split(r.Ref, "@")[0]+"@"+none, none
	if _, _, err := Download(ctx, r, f.client(t)); err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "no layer of type "+registry.ChartLayerMediaType) {
		t.Errorf("a manifest without a chart layer: %v", err)
	}
}
