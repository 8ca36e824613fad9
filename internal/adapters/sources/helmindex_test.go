package sources

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/core/artifact"
)

// testIndex is an index as Helm writes it: charts a-web, b-db and "1"-named ones, some
// versions with a description over several lines and annotations.
func testIndex() *repo.IndexFile {
	idx := repo.NewIndexFile()
	for _, name := range []string{"a-web", "b-db", "123", "true", "z.last"} {
		for v := range 3 {
			md := &chart.Metadata{APIVersion: "v2", Name: name, Version: fmt.Sprintf("1.%d.0", v),
				Description: "line one\n\nline three: with a colon\n- and a dash", Annotations: map[string]string{"a": "b"}}
			if err := idx.MustAdd(md, fmt.Sprintf("%s-1.%d.0.tgz", name, v), "https://charts.example.com", artifact.Digest([]byte(name + md.Version))[7:]); err != nil {
				panic(err)
			}
		}
	}
	idx.SortEntries()
	return idx
}

// Each chart's versions read from the stream are those Helm's whole parse finds (version,
// digest, first URL), whether the index is YAML or JSON; a chart the index lacks has none.
func TestAnIndexStreamHoldsTheVersionsHelmFinds(t *testing.T) {
	idx := testIndex()
	asYAML, err := yaml.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	asJSON, _ := json.MarshalIndent(idx, "", "  ")
	want := map[string]bool{"a-web": true, "123": true, "true": true, "z.last": true, "missing": true}
	for format, data := range map[string][]byte{"yaml": asYAML, "json": asJSON, "yaml with CRLF": []byte(strings.ReplaceAll(string(asYAML), "\n", "\r\n"))} {
		got, err := indexEntries(strings.NewReader(string(data)), want)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for name := range want {
			if summary(got[name]) != summary(idx.Entries[name]) {
				t.Errorf("%s: chart %q read as %s, Helm's parse %s", format, name, summary(got[name]), summary(idx.Entries[name]))
			}
		}
		if _, ok := got["b-db"]; ok {
			t.Errorf("%s: a chart not asked for was kept", format)
		}
	}
}

func summary(vs repo.ChartVersions) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%s %s %v;", v.Version, v.Digest, v.URLs[:1])
	}
	return b.String()
}

// endless is an index that never ends: after its head, a chart "other" of 1,000 versions
// again and again, served without allocating.
type endless struct {
	block []byte
	off   int
	read  int64
}

func newEndless() *endless {
	var b strings.Builder
	b.WriteString("  other:\n")
	for v := range 1000 {
		fmt.Fprintf(&b, "  - apiVersion: v2\n    name: other\n    version: 1.%d.0\n    urls:\n    - other-1.%d.0.tgz\n", v, v)
	}
	return &endless{block: []byte(b.String())}
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read == 0 {
		n := copy(p, "apiVersion: v1\nentries:\n")
		e.read += int64(n)
		return n, nil
	}
	n := copy(p, e.block[e.off:])
	e.off = (e.off + n) % len(e.block)
	e.read += int64(n)
	return n, nil
}

// An index is read no further than maxIndex, holding a line at a time: past it, the read
// fails permanently, having allocated a small part of what it read (Helm's whole parse of
// 50 MiB allocates 1.6 GiB).
func TestAnIndexIsReadWithinItsBound(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	src := newEndless()
	_, err := indexEntries(src, map[string]bool{"web": true})
	runtime.ReadMemStats(&after)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", maxIndex)) {
		t.Fatalf("an endless index: %v, want a permanent failure naming the bound", err)
	}
	if src.read > maxIndex+maxSkippedLine+1<<20 {
		t.Errorf("read %d bytes of an endless index, bound %d", src.read, maxIndex)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("reading %d MiB of an index allocated %d MiB", src.read>>20, alloc>>20)
	}
}

// Hostile or odd indexes fail permanently, naming why: a version's entry or a chart's
// versions over their bounds, entries in the flow style, versions that are no list, keys
// or versions out of line.
func TestAnIndexOverItsBoundsOrOutOfShapeFails(t *testing.T) {
	many := "apiVersion: v1\nentries:\n  web:\n" + strings.Repeat("  - name: web\n    version: 1.0.0\n", maxVersions+1)
	for what, c := range map[string]struct{ index, want string }{
		"a huge version":    {"apiVersion: v1\nentries:\n  web:\n  - name: web\n    description: " + strings.Repeat("x", maxVersionBytes) + "\n", "a version's entry of more than 262144 bytes"},
		"too many":          {many, "more than 20000 versions"},
		"flow entries":      {"apiVersion: v1\nentries: {web: [{name: web, version: 1.0.0}]}\n", "not in the block style"},
		"flow versions":     {"apiVersion: v1\nentries:\n  web: [{name: web, version: 1.0.0}]\n", "not in the block style"},
		"versions no list":  {"apiVersion: v1\nentries:\n  web:\n    name: web\n", "its versions are not a list"},
		"keys unaligned":    {"apiVersion: v1\nentries:\n    other:\n    - name: other\n  web:\n", `line 5: a chart's key less indented than the others`},
		"version outdented": {"apiVersion: v1\nentries:\n  web:\n    - name: web\n   - name: web\n", `line 5: chart "web": a line less indented than its versions`},
		"no chart's key":    {"apiVersion: v1\nentries:\n  [web]: 1\n", `line 3: not a chart's key: "[web]: 1"`},
		"json huge":         {`{"entries":{"web":[{"name":"web","description":"` + strings.Repeat("x", maxVersionBytes) + `"}]}}`, "a version's entry of more than"},
	} {
		if _, err := indexEntries(strings.NewReader(c.index), map[string]bool{"web": true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", what, err, c.want)
		}
	}
	// Reading ends once the charts asked for were read: the rest is not waited for.
	src := newEndless()
	got, err := indexEntries(io.MultiReader(strings.NewReader("apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 2.0.0\n"), src),
		map[string]bool{"web": true})
	if err != nil || len(got["web"]) != 1 || got["web"][0].Version != "2.0.0" || src.read > 1<<20 {
		t.Errorf("read %v, %v, and %d bytes past the chart", got, err, src.read)
	}
}

// Apps of one repository are resolved from one read of its index: every chart declared
// is read in that one pass.
func TestARepositorysIndexIsReadOncePerCall(t *testing.T) {
	data, _ := yaml.Marshal(testIndex())
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	ix := &Indexes{}
	srcs := []artifact.Source{{HelmRepo: srv.URL, Chart: "a-web", Version: "1.1.0"}, {HelmRepo: srv.URL + "/", Chart: "z.last", Version: "^1"},
		{HelmRepo: srv.URL, Chart: "true", Version: "1.0.0"}}
	for _, s := range srcs {
		ix.Want(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, len(srcs))
	for _, s := range srcs {
		go func() {
			c := clientFor(srv, false)
			c.Indexes = ix
			r, err := Resolve(ctx, s, c)
			if err == nil && !strings.HasSuffix(r.Ref, "/"+s.Chart+"-"+r.Version+".tgz") {
				err = fmt.Errorf("%s resolved to %+v", s.Chart, r)
			}
			done <- err
		}()
	}
	for range srcs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("the index was read %d times for three charts, want once", n)
	}
	// A chart not declared before the read is read alone.
	c := clientFor(srv, false)
	c.Indexes = ix
	if _, err := Resolve(ctx, artifact.Source{HelmRepo: srv.URL, Chart: "b-db", Version: "1.0.0"}, c); err != nil || gets.Load() != 2 {
		t.Errorf("an undeclared chart: %v, %d reads", err, gets.Load())
	}
}
