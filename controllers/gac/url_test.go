package gac

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/model"
)

// EMCO's examples/test-gac: the clusters, their kv-pairs (clusters.yaml) and the host
// its URLs name, clm's NodePort ({{.HostIP}}:30461).
const emcoCLM = "http://10.10.10.6:30461"

func kvURL(provider, cluster, kv, key string) string {
	return "$(" + emcoCLM + "/v2/cluster-providers/" + provider + "/clusters/" + cluster + "/kv-pairs/" + kv + "?key=" + key + ")$"
}

// emcoKVPairs stores clusters.yaml's kv-pairs of provider1+cluster1 as the API does.
func emcoKVPairs(t *testing.T, st memStore) {
	coll := "/cluster-providers/provider1/clusters/cluster1/kv-pairs"
	st.put(t, coll, model.KindClusterKV, "istioingressgatewaykvpairs", model.KVSpec{KV: []map[string]any{
		{"istioingressgatewayaddress": "192.168.121.26"}, {"istioingressgatewayport": "32001"}, {"istioingressgatewayinternalport": "15443"}}}, nil)
	st.put(t, coll, model.KindClusterKV, "databaseauthorizationkvpairs", model.KVSpec{KV: []map[string]any{
		{"user": "aGVsbG8="}, {"password": "MWYyZDFlMmU2N2Rm"}}}, nil)
}

// emcoFake is a context with EMCO's example app on provider1's cluster1 and cluster2.
func emcoFake(objects ...contract.Resource) *contracttest.Fake {
	f := fake(objects...)
	f.AppList = []contract.App{{Name: "web", Clusters: []string{"provider1+cluster1", "provider1+cluster2"}}}
	f.ClusterOf = map[string][]contract.Cluster{"provider1": {
		{Provider: "provider1", Name: "cluster1", Labels: []string{"edge"}}, {Provider: "provider1", Name: "cluster2", Labels: []string{"edge"}}}}
	return f
}

// emcoCustomization is clusterInfo as test-gac-patch-with-external-url.yaml gives it: not
// cluster-specific, yet naming a cluster for the URLs' placeholders.
func emcoCustomization(ops ...map[string]any) CustomizationSpec {
	return CustomizationSpec{ClusterSpecific: flagFalse, ClusterInfo: ClusterInfo{Scope: scopeLabel, ClusterProvider: "provider1",
		Cluster: "cluster1", ClusterLabel: "edge", Mode: modeAllow}, PatchType: patchJSON, PatchJSON: ops}
}

func runErr(st memStore, urls *fetcher, f *contracttest.Fake) error {
	return (&controller{store: st, urls: urls}).Run(context.Background(), f)
}

// EMCO's test-gac-patch-with-external-url.yaml: cm-istio and secret-db take values from
// the cluster's kv-pairs, named by clm's host, literally or through the placeholders.
// They are read from temco's store: no host is allowed, none is reached.
func TestEMCOExternalURLExampleReadsKVPairsFromTheStore(t *testing.T) {
	st := intent(t)
	emcoKVPairs(t, st)
	cm := st.resource(t, "cm-istio", newObject("ConfigMap", "cm-istio"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-istio\n")
	st.customize(t, cm, "cm-istio-customization", emcoCustomization(
		map[string]any{"op": "add", "path": "/data/istioingressgatewayaddress", "value": kvURL("provider1", "cluster1", "istioingressgatewaykvpairs", "istioingressgatewayaddress")},
		map[string]any{"op": "add", "path": "/data/istioingressgatewayport", "value": kvURL("{clusterProvider}", "{cluster}", "istioingressgatewaykvpairs", "istioingressgatewayport")},
		map[string]any{"op": "add", "path": "/data/dns", "value": "https://example.dns.com"},
	), file("info.json", `{"a":1}`))
	secret := st.resource(t, "secret-db", newObject("Secret", "secret-db"),
		"apiVersion: v1\nkind: Secret\nmetadata:\n  annotations:\n    kubernetes.io/service-account.name: m3db-operator\n  name: secret-db\ntype: kubernetes.io/service-account-token\n")
	sc := emcoCustomization(
		map[string]any{"op": "add", "path": "/data/user", "value": kvURL("provider1", "cluster1", "databaseauthorizationkvpairs", "user")},
		map[string]any{"op": "add", "path": "/data/password", "value": kvURL("{clusterProvider}", "{cluster}", "databaseauthorizationkvpairs", "password")},
	)
	sc.SecretOptions.DataKeyOptions = []KeyOption{{FileName: "data-userexpiration.yaml", KeyName: "expiration"}}
	st.customize(t, secret, "secret-db-customization", sc, file("data-userexpiration.yaml", "expiration: 30d\n"))
	f := emcoFake()
	require.NoError(t, runErr(st, nil, f))

	require.Len(t, f.Edits, 2)
	assert.Nil(t, f.Edits[0].Clusters, "one value per customization, on all its clusters, as in EMCO")
	assert.Equal(t, map[string]any{"info.json": `{"a":1}`, "istioingressgatewayaddress": "192.168.121.26",
		"istioingressgatewayport": "32001", "dns": "https://example.dns.com"}, manifest(t, f.Edits[0])["data"])
	assert.Equal(t, map[string]any{"expiration": base64.StdEncoding.EncodeToString([]byte("expiration: 30d\n")),
		"user": "aGVsbG8=", "password": "MWYyZDFlMmU2N2Rm"}, manifest(t, f.Edits[1])["data"])
}

// A JSON patch of the app's own object takes the value too; the value keeps its JSON
// type (a number stays a number, as clm's {"value": ...} answer carries it).
func TestPatchOfAnExistingObjectWithAKVPairValue(t *testing.T) {
	st := intent(t)
	st.put(t, "/cluster-providers/provider1/clusters/cluster2/kv-pairs", model.KindClusterKV, "sizes",
		model.KVSpec{KV: []map[string]any{{"replicas": 4}, {"replicas": 9}}}, nil)
	res := st.resource(t, "scale", existing("Deployment", "web"), "")
	c := emcoCustomization(map[string]any{"op": "replace", "path": "/spec/replicas",
		"value": "$(http://emco-clm:9061/v2/cluster-providers/{clusterProvider}/clusters/{cluster}/kv-pairs/sizes?key=replicas)$"})
	c.ClusterSpecific, c.ClusterInfo.Scope, c.ClusterInfo.Cluster = flagTrue, scopeName, "cluster2"
	st.customize(t, res, "c", c)
	f := emcoFake(contract.Resource{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(deployment)})
	require.NoError(t, runErr(st, nil, f))

	require.Len(t, f.Edits, 1)
	assert.Equal(t, []string{"provider1+cluster2"}, f.Edits[0].Clusters)
	assert.JSONEq(t, `[{"op":"replace","path":"/spec/replicas","value":4}]`, string(f.Edits[0].Data), "the first entry holding the key")
}

// Nothing is looked up for a patch no cluster needs: the object is on none of them.
func TestNoLookupWhereNoClusterHasTheObject(t *testing.T) {
	st := intent(t)
	res := st.resource(t, "scale", existing("Deployment", "db"), "")
	st.customize(t, res, "c", emcoCustomization(map[string]any{"op": "replace", "path": "/spec/replicas", "value": "$(http://127.0.0.1:1/x)$"}))
	f := emcoFake(contract.Resource{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Manifest: json.RawMessage(deployment)})
	require.NoError(t, runErr(st, nil, f))
	assert.Empty(t, f.Edits)
}

func TestKVPairLookupRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{"a missing kv-pairs resource", kvURL("provider1", "cluster1", "nosuchkv", "k"),
			[]string{"customization c:", "patchJson[0]", "host 10.10.10.6:30461", `cluster provider1+cluster1 has no kv-pairs "nosuchkv"`}},
		{"a missing key", kvURL("{clusterProvider}", "{cluster}", "istioingressgatewaykvpairs", "nosuchkey"),
			[]string{`kv-pairs "istioingressgatewaykvpairs" of cluster provider1+cluster1 has no key "nosuchkey"`}},
		{"a cluster the deployment is not on", kvURL("provider1", "cluster9", "istioingressgatewaykvpairs", "istioingressgatewayport"),
			[]string{"cluster provider1+cluster9 is not a cluster of this deployment"}},
		{"no ?key=", "$(" + emcoCLM + "/v2/cluster-providers/provider1/clusters/cluster1/kv-pairs/istioingressgatewaykvpairs)$",
			[]string{"patchJson[0].value", "without ?key="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := intent(t)
			emcoKVPairs(t, st)
			res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
			st.customize(t, res, "c", emcoCustomization(map[string]any{"op": "add", "path": "/data/x", "value": tc.value}))
			f := emcoFake()
			err := runErr(st, nil, f)
			var r *contract.Refusal
			require.True(t, errors.As(err, &r), "a refusal, not a retried error: %v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Empty(t, f.Edits)
		})
	}
}

// valueServer answers {"value": ...} at /value and counts its requests.
type valueServer struct {
	*httptest.Server
	hits atomic.Int32
}

func newValueServer(t *testing.T, h http.HandlerFunc) *valueServer {
	s := &valueServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *valueServer) hostPort() string { u, _ := url.Parse(s.URL); return u.Host }

// fetchInto runs a new ConfigMap whose data.x is $(URL)$, fetching with urls.
func fetchInto(t *testing.T, urls URLs, rawURL string) (*contracttest.Fake, error) {
	st := intent(t)
	res := st.resource(t, "cm", newObject("ConfigMap", "cm"), "")
	st.customize(t, res, "c", emcoCustomization(map[string]any{"op": "add", "path": "/data/x", "value": "$(" + rawURL + ")$"}), file("k", "v"))
	f := emcoFake()
	return f, runErr(st, newFetcher(urls), f)
}

func TestFetchFromAnAllowedHost(t *testing.T) {
	var auth atomic.Value
	srv := newValueServer(t, func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"value": "from-` + r.URL.Query().Get("cluster") + `"}`))
	})
	u := "http://" + srv.hostPort() + "/value?cluster={cluster}"
	for _, allow := range []string{srv.hostPort(), "127.0.0.1"} {
		f, err := fetchInto(t, URLs{Allow: egress.MustParse(strings.Join([]string{allow}, ","))}, u)
		require.NoError(t, err, "allowed as %s", allow)
		assert.Equal(t, map[string]any{"k": "v", "x": "from-cluster1"}, manifest(t, f.Edits[0])["data"], "the placeholder is the customization's cluster")
	}
	// EMCO sends a URL's userinfo as basic authentication: so does temco.
	_, err := fetchInto(t, URLs{Allow: egress.MustParse(strings.Join([]string{srv.hostPort()}, ","))}, "http://gac:pw@"+srv.hostPort()+"/value")
	require.NoError(t, err)
	assert.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("gac:pw")), auth.Load())
	assert.EqualValues(t, 3, srv.hits.Load())
}

func TestFetchRefusals(t *testing.T) {
	srv := newValueServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/value", http.StatusFound)
		case "/big":
			body := `{"value": "` + strings.Repeat("x", DefaultURLMaxBytes) + `"}`
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write([]byte(body))
		case "/big-chunked":
			w.(http.Flusher).Flush() // no Content-Length
			_, _ = w.Write([]byte(`{"value": "` + strings.Repeat("x", DefaultURLMaxBytes) + `"}`))
		case "/missing":
			http.NotFound(w, r)
		case "/novalue":
			_, _ = w.Write([]byte(`{"val": 1}`))
		case "/list":
			_, _ = w.Write([]byte(`[1]`))
		default:
			_, _ = w.Write([]byte(`{"value": "v"}`))
		}
	})
	host := srv.hostPort()
	allowed := URLs{Allow: egress.MustParse(strings.Join([]string{host}, ","))}
	for _, tc := range []struct {
		name    string
		urls    URLs
		url     string
		want    string
		reached bool
	}{
		{"no host allowed", URLs{}, srv.URL + "/value", "not on the worker's --gac-url-allow list", false},
		{"another port of the host", URLs{Allow: egress.MustParse(strings.Join([]string{"127.0.0.1:1"}, ","))}, srv.URL + "/value", "not on the worker's --gac-url-allow list", false},
		{"another host", allowed, "http://localhost:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:] + "/value", "not on the worker's --gac-url-allow list", false},
		{"a redirect", allowed, srv.URL + "/redirect", "answered 302 Found, a redirect, which gac does not follow", true},
		{"an answer over 1 MiB", allowed, srv.URL + "/big", "bytes) is larger than 1048576 bytes", true},
		{"an answer over 1 MiB without length", allowed, srv.URL + "/big-chunked", "is larger than 1048576 bytes", true},
		{"404", allowed, srv.URL + "/missing", "answered 404 Not Found, not 200", true},
		{"no value", allowed, srv.URL + "/novalue", `its answer has no "value"`, true},
		{"not an object", allowed, srv.URL + "/list", "is not a JSON object", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.hits.Load()
			f, err := fetchInto(t, tc.urls, tc.url)
			var r *contract.Refusal
			require.True(t, errors.As(err, &r), "a refusal, not a retried error: %v", err)
			u, _ := url.Parse(tc.url)
			for _, w := range []string{"gac resource cm, customization c:", "patchJson[0].value (host " + u.Host + ")", tc.want} {
				assert.Contains(t, err.Error(), w)
			}
			assert.Empty(t, f.Edits)
			if reached := srv.hits.Load() > before; reached != tc.reached {
				t.Errorf("the server was reached: %v, want %v", reached, tc.reached)
			}
			if tc.name == "a redirect" {
				assert.EqualValues(t, 1, srv.hits.Load()-before, "the redirect is not followed")
			}
		})
	}
}

// A slow or failing host may recover: the error is retried with the controller, never
// naming the URL's credentials.
func TestTransientFetchFailuresAreRetried(t *testing.T) {
	srv := newValueServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	urls := URLs{Allow: egress.MustParse(strings.Join([]string{srv.hostPort(), "127.0.0.1:1"}, ",")), Timeout: 200 * time.Millisecond}
	for _, tc := range []struct{ name, url, want string }{
		{"a timeout", "http://user:s3cret@" + srv.hostPort() + "/slow", "did not answer within 200ms"},
		{"503", "http://user:s3cret@" + srv.hostPort() + "/down", "answered 503 Service Unavailable"},
		{"connection refused", "http://user:s3cret@127.0.0.1:1/x", "fetching it failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			f, err := fetchInto(t, urls, tc.url)
			require.Error(t, err)
			var r *contract.Refusal
			assert.False(t, errors.As(err, &r), "retried, not refused: %v", err)
			assert.Contains(t, err.Error(), "customization c:")
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.NotContains(t, err.Error(), "user")
			assert.Less(t, time.Since(start), 3*time.Second)
			assert.Empty(t, f.Edits)
		})
	}
}

func TestFetchesOnlyAllowedHosts(t *testing.T) {
	f := newFetcher(URLs{Allow: egress.MustParse(" Config.Example.com, 10.0.0.5:8080,,[FD00::1]:80, fd00::2 ,[fd00::3]")})
	for u, want := range map[string]bool{
		"http://config.example.com:1234/x": true, "https://CONFIG.example.com/x": true, "http://10.0.0.5:8080/": true,
		"http://10.0.0.5/": false, "http://[fd00::1]/": true, "https://[fd00::1]/": false, "http://[fd00::2]:9/": true,
		"http://example.com/": false, "http://config.example.com.evil/": false,
	} {
		pu, err := url.Parse(u)
		require.NoError(t, err)
		assert.Equal(t, want, f.allowed(pu), u)
	}
}

func TestWithURLsConfiguresGacOnly(t *testing.T) {
	other := controllers.Builtin{Name: "other"}
	all := []controllers.Builtin{other, Controller}
	got := WithURLs(all, URLs{Allow: egress.MustParse("h")})
	require.Len(t, got, 2)
	assert.Equal(t, "other", got[0].Name)
	c, ok := got[1].New(controllers.Deps{}).(*controller)
	require.True(t, ok)
	assert.True(t, c.urls.allowed(&url.URL{Scheme: "http", Host: "h"}))
	c, _ = all[1].New(controllers.Deps{}).(*controller)
	assert.False(t, c.urls.allowed(&url.URL{Scheme: "http", Host: "h"}), "the list given is unchanged")
}
