package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkArtifactFleet (`make bench-artifacts CLUSTERS=N`): a chart fetched once per
// digest for the whole fleet (issue 43 point 6). One chart is pushed to the stack's OCI
// registry; K DIGs (TEMCO_ARTIFACT_DIGS, default 3), each in its own project with its own
// artifact credentials, name it by reference (oci://…, a tag) and place it on all N
// clusters of BenchmarkScale's kind (TEMCO_SCALE_CLUSTERS, default 200 here); a (K+1)th
// DIG, in a project of its own, has the same chart uploaded: the baseline. The baseline is
// instantiated first, then the K DIGs one after another (TEMCO_ARTIFACT_AT_ONCE=1: the K
// at once, the store cold for all of them), each timed from the request until its
// workflow completes. The registry's answers are counted by a reverse proxy put on the
// registry's address (the registry itself logs no requests: its access log is off): GETs
// of the chart's layer blob answered 2xx are the downloads, and must be K for K DIGs × N
// clusters: one per project (the store serves a project only bytes it fetched itself),
// none per cluster; HEAD/GET of the tag's manifest are the resolves (one per instantiate).
func BenchmarkArtifactFleet(b *testing.B) {
	n := scaleN(200)
	k, _ := strconv.Atoi(os.Getenv("TEMCO_ARTIFACT_DIGS"))
	if k <= 0 {
		k = 3
	}
	atOnce := os.Getenv("TEMCO_ARTIFACT_AT_ONCE") != ""
	prov := fmt.Sprintf("art%d", n)
	c := &client{}
	setup := time.Now()
	kubeconfigs := scaleClusters(b, prov, n)
	if kubeconfigs == nil {
		b.Fatalf("provider %s is registered already: run the benchmark on a stack of its own", prov)
	}
	var projects []string // the K by reference, then the baseline
	for i := range k {
		projects = append(projects, fmt.Sprintf("artref%d", i))
	}
	projects = append(projects, "artupload")
	for _, p := range projects {
		mustCode(b, c.do("POST", "/projects", res(p, nil)), 201)
		mustCode(b, c.do("POST", "/projects/"+p+"/logical-clouds", res("all", map[string]any{"level": "0"})), 201)
	}
	importArtifactClusters(b, prov, projects, kubeconfigs)
	for _, p := range projects {
		mustCode(b, c.do("POST", "/projects/"+p+"/logical-clouds/all/instantiate", nil), 202)
	}
	for _, p := range projects {
		(&deployment{t: &testing.T{}, c: c, project: p}).awaitCloud("all", lifecycle.StatusInstantiated)
	}

	// A chart no earlier run stored (its nonce), one ConfigMap named after the release
	// (the DIG's version), so that the DIGs' objects do not collide on a cluster.
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	tgz := testenv.VersionedChart("fleetchart", "1.0.0", "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\n" +
		"metadata:\n  name: {{ .Release.Name }}\ndata:\n  nonce: \"" + nonce + "\"\n"})
	reg := countRegistry(b)
	manifest := testenv.PushChart(b, stack, tgz, "charts/fleetchart", "1.0.0") // to the registry itself: not counted
	layer := artifact.Digest(tgz)
	for i, p := range projects {
		artifactDIG(b, c, prov, p, reg.host, tgz, i < k)
	}
	fmt.Printf("artifacts: N=%d, %d DIGs by reference + 1 uploaded, set up in %s; chart %s (layer %s, %d bytes)\n",
		n, k, time.Since(setup).Round(time.Second), manifest, layer, len(tgz))

	tc := dialTemporal(b)
	defer tc.Close()
	// instantiate and artifactOf return errors: they run on other goroutines too.
	instantiate := func(p string) (time.Duration, error) {
		dig := "/projects/" + p + "/composite-apps/ca/v1/deployment-intent-groups/dig"
		start := time.Now()
		r := c.do("POST", dig+"/"+lifecycle.OpInstantiate, nil)
		if err := expect(r, 202); err != nil {
			return 0, err
		}
		var acc lifecycle.OpAccepted
		_ = json.Unmarshal(r.body, &acc)
		if err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil); err != nil {
			return 0, fmt.Errorf("%s: instantiate: %w", p, err)
		}
		took := time.Since(start)
		var s status
		r = c.do("GET", dig+"/status?output=summary", nil)
		if err := expect(r, 200); err != nil {
			return 0, err
		}
		_ = json.Unmarshal(r.body, &s)
		if s.Status != lifecycle.StatusInstantiated || s.RsyncStatus[lifecycle.ResApplied] != n {
			return 0, fmt.Errorf("%s after instantiate: %s, rsync-status %v", p, s.Status, s.RsyncStatus)
		}
		return took, nil
	}
	artifactOf := func(p string) (artifact.Status, error) {
		var v struct {
			Artifacts []artifact.Status `json:"artifacts"`
		}
		r := c.do("GET", "/projects/"+p+"/composite-apps/ca/v1/deployment-intent-groups/dig/status?status=deployed&output=summary", nil)
		if err := expect(r, 200); err != nil {
			return artifact.Status{}, err
		}
		_ = json.Unmarshal(r.body, &v)
		if len(v.Artifacts) != 1 || v.Artifacts[0].Digest != manifest || v.Artifacts[0].Stage != artifact.StageRendered {
			return artifact.Status{}, fmt.Errorf("%s's artifacts %+v, want fleetchart Rendered from %s", p, v.Artifacts, manifest)
		}
		return v.Artifacts[0], nil
	}

	upload, err := instantiate("artupload")
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("artifacts: N=%d uploaded chart: instantiate %s\n", n, upload.Round(time.Millisecond))
	took := make([]time.Duration, k)
	var mu sync.Mutex
	one := func(i int) error {
		var err error
		if took[i], err = instantiate(projects[i]); err != nil {
			return err
		}
		a, err := artifactOf(projects[i])
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("artifacts: N=%d %s by reference: instantiate %s (cached %v); registry so far: %s\n",
			n, projects[i], took[i].Round(time.Millisecond), a.Cached, reg.counts(layer, "1.0.0"))
		return nil
	}
	start := time.Now()
	if atOnce {
		parallel(b, k, k, one)
	} else {
		for i := range k {
			if err := one(i); err != nil {
				b.Fatal(err)
			}
		}
	}
	all := time.Since(start)
	got := reg.counts(layer, "1.0.0")
	rest := slices.Clone(took[1:])
	slices.Sort(rest)
	fmt.Printf("artifacts: N=%d, %d DIGs × %d clusters by reference (%s): %d chart download(s), %d manifest resolve(s) "+
		"(by tag), %d manifest GET(s) by digest, %d request(s) in all (%d answered 401); instantiate by reference %s "+
		"(the first: %s), uploaded %s; blob store: %s\n", n, k, n, map[bool]string{true: "at once", false: "one after another"}[atOnce],
		got.downloads, got.resolves, got.byDigest, got.total, got.unauthorized, durations(took), took[0].Round(time.Millisecond),
		upload.Round(time.Millisecond), documentCounts(b))
	b.ReportMetric(float64(got.downloads), "downloads")
	b.ReportMetric(float64(got.resolves), "manifest-resolves")
	b.ReportMetric(float64(n), "clusters")
	b.ReportMetric(float64(k), "digs")
	b.ReportMetric(upload.Seconds(), "instantiate-upload-s")
	b.ReportMetric(took[0].Seconds(), "instantiate-ref-first-s")
	if len(rest) > 0 { // the DIGs after the first: their median (of two, the slower)
		b.ReportMetric(rest[len(rest)/2].Seconds(), "instantiate-ref-cached-s")
	}
	b.ReportMetric(took[0].Seconds()/upload.Seconds(), "ratio-first/upload")
	if atOnce {
		b.ReportMetric(all.Seconds(), "instantiate-all-ref-s")
	}
	if got.downloads != k {
		b.Fatalf("the chart was downloaded %d times for %d DIGs (a project each) × %d clusters, want %d: one per project; the registry's requests:\n%s",
			got.downloads, k, n, k, strings.Join(reg.lines(), "\n"))
	}
}

// importArtifactClusters registers prov's clusters (scaleClusters), labelled "scale" and
// referenced by logical cloud "all" of every one of projects, scaleImport at a time.
func importArtifactClusters(b *testing.B, prov string, projects []string, kubeconfigs [][]byte) {
	c := &client{}
	var clouds []map[string]string
	for _, p := range projects {
		clouds = append(clouds, map[string]string{"project": p, "logicalCloud": "all"})
	}
	imports := (len(kubeconfigs) + scaleImport - 1) / scaleImport
	parallel(b, imports, 2, func(j int) error {
		var clusters []map[string]any
		for i := j * scaleImport; i < min(len(kubeconfigs), (j+1)*scaleImport); i++ {
			clusters = append(clusters, map[string]any{"metadata": map[string]any{"name": "s" + strconv.Itoa(i)},
				"kubeconfig": string(kubeconfigs[i]), "labels": []string{"scale"}, "logicalClouds": clouds})
		}
		return created(func() response {
			return c.do("POST", "/cluster-providers/"+prov+"/cluster-imports", map[string]any{"clusters": clusters})
		})
	})
}

// artifactDIG creates project p's composite app ca/v1 with one app, fleetchart: by
// reference to the chart in the registry at host (with the project's credentials for
// it), or else tgz uploaded; and its DIG "dig" (version p) placing it on every cluster of
// prov labelled "scale", approved.
func artifactDIG(b *testing.B, c *client, prov, p, host string, tgz []byte, byRef bool) {
	ca := "/projects/" + p + "/composite-apps/ca/v1"
	mustCode(b, c.do("POST", "/projects/"+p+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})), 201)
	if byRef {
		mustCode(b, c.do("POST", "/projects/"+p+"/artifact-credentials", res("registry", map[string]any{
			"host": host, "username": stack.Registry.User, "password": stack.Registry.Password})), 201)
		mustCode(b, c.do("POST", ca+"/apps", res("fleetchart", map[string]any{"chart": map[string]any{
			"oci": "oci://" + host + "/charts/fleetchart", "version": "1.0.0", "plainHTTP": true}})), 201)
	} else {
		mustCode(b, c.multipart("POST", ca+"/apps", res("fleetchart", nil), tgz), 201)
	}
	mustCode(b, c.do("POST", ca+"/composite-profiles", res("prof", nil)), 201)
	mustCode(b, c.multipart("POST", ca+"/composite-profiles/prof/profiles", res("fleetchart-profile", map[string]any{"app": "fleetchart"}),
		testenv.Profile("k: v\n")), 201)
	dig := ca + "/deployment-intent-groups/dig"
	mustCode(b, c.do("POST", ca+"/deployment-intent-groups", res("dig", map[string]any{
		"compositeProfile": "prof", "version": p, "logicalCloud": "all"})), 201)
	mustCode(b, c.do("POST", dig+"/generic-placement-intents", res("gpi", nil)), 201)
	mustCode(b, c.do("POST", dig+"/generic-placement-intents/gpi/app-intents", res("fleetchart-placement", map[string]any{"app": "fleetchart",
		"intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": prov, "clusterLabel": "scale"}}}})), 201)
	mustCode(b, c.do("POST", dig+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})), 201)
	mustCode(b, c.do("POST", dig+"/approve", nil), 202)
}

// registryRequests is a counting reverse proxy on the registry's address: the registry
// is moved to a free port behind it, so temco (whose allowed hosts name the address)
// reaches it through the proxy, and everything else (stack.Registry.Address(), as
// testenv.PushChart uses) reaches it directly, uncounted.
type registryRequests struct {
	host string // the address temco knows the registry by: the proxy's
	mu   sync.Mutex
	seen []registryRequest
}

type registryRequest struct {
	method, path string
	code         int
}

// countRegistry moves the stack's registry behind a counting proxy until b ends, when
// the registry is put back on its own address.
func countRegistry(b *testing.B) *registryRequests {
	r := stack.Registry
	host, own := r.Address(), r.Port
	port, err := devstack.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	r.Stop()
	r.Port = port
	if err := r.Start(context.Background()); err != nil {
		r.Port = own
		_ = r.Start(context.Background())
		b.Fatalf("registry on port %d: %v", port, err)
	}
	rr := &registryRequests{host: host}
	target := &url.URL{Scheme: "http", Host: r.Address()}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
	}}
	l, err := net.Listen("tcp", host)
	if err != nil {
		b.Fatalf("the proxy on %s: %v", host, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		proxy.ServeHTTP(cw, req)
		rr.mu.Lock()
		rr.seen = append(rr.seen, registryRequest{req.Method, req.URL.Path, cw.code})
		rr.mu.Unlock()
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() {
		_ = srv.Close()
		r.Stop()
		r.Port = own
		if err := r.Start(context.Background()); err != nil {
			b.Errorf("the registry back on port %d: %v", own, err)
		}
	})
	return rr
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// registryCounts are the registry's answers for one chart.
type registryCounts struct {
	downloads    int // GET of the chart's layer blob, answered 2xx
	resolves     int // HEAD or GET of the tag's manifest, answered 2xx
	byDigest     int // HEAD or GET of a manifest by digest, answered 2xx
	unauthorized int // answered 401 (a client's first try, before its credentials)
	total        int
}

func (c registryCounts) String() string {
	return fmt.Sprintf("%d chart download(s), %d manifest resolve(s), %d manifest(s) by digest, %d request(s), %d answered 401",
		c.downloads, c.resolves, c.byDigest, c.total, c.unauthorized)
}

// counts counts the requests for the chart whose layer is layer and tag tag.
func (rr *registryRequests) counts(layer, tag string) registryCounts {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	var c registryCounts
	for _, r := range rr.seen {
		c.total++
		if r.code == http.StatusUnauthorized {
			c.unauthorized++
		}
		if r.code < 200 || r.code > 299 {
			continue
		}
		switch _, ref, _ := strings.Cut(r.path, "/manifests/"); {
		case strings.HasSuffix(r.path, "/blobs/"+layer) && r.method == http.MethodGet:
			c.downloads++
		case ref == tag:
			c.resolves++
		case strings.HasPrefix(ref, "sha256:"):
			c.byDigest++
		}
	}
	return c
}

// lines are the requests seen, one a line.
func (rr *registryRequests) lines() []string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	var out []string
	for _, r := range rr.seen {
		out = append(out, fmt.Sprintf("%s %s %d", r.method, r.path, r.code))
	}
	return out
}

// durations lists ds rounded to the millisecond.
func durations(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Round(time.Millisecond).String())
	}
	return strings.Join(out, ", ")
}
