// Package chart checks temco's Helm chart (deploy/temco): it lints, renders what each
// option promises, and refuses incomplete or mistyped values with a clear message. The
// e2e suite installs the rendered chart into a real cluster.
package chart

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/dev/testenv"
)

func chartDir(t *testing.T) string {
	t.Helper()
	dir, err := testenv.ChartDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func values(t *testing.T, file string) map[string]any {
	t.Helper()
	v, err := testenv.ValuesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rendered is a rendering indexed by "Kind/name".
type rendered map[string]*unstructured.Unstructured

func render(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	objs, err := testenv.RenderChart(chartDir(t), "temco", "platform", vals)
	if err != nil {
		t.Fatal(err)
	}
	out := rendered{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if ns := o.GetNamespace(); ns != "" && ns != "platform" { // an object in another namespace (the hub's Roles)
			key = o.GetKind() + "/" + ns + "/" + o.GetName()
		}
		out[key] = o
	}
	return out
}

func (r rendered) names() []string {
	var out []string
	for k := range r {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// container returns the only container of a Deployment.
func (r rendered) container(t *testing.T, deployment string) map[string]any {
	t.Helper()
	d, ok := r["Deployment/"+deployment]
	if !ok {
		t.Fatalf("no Deployment %s in %v", deployment, r.names())
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("Deployment %s has %d containers", deployment, len(cs))
	}
	return cs[0].(map[string]any)
}

// env returns a container's variables: value, or "secret:<name>/<key>".
func env(c map[string]any) map[string]string {
	out := map[string]string{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			out[e["name"].(string)] = v
		} else if ref, ok, _ := unstructured.NestedStringMap(e, "valueFrom", "secretKeyRef"); ok {
			out[e["name"].(string)] = "secret:" + ref["name"] + "/" + ref["key"]
		}
	}
	return out
}

func str(o map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedFieldNoCopy(o, path...)
	v, _ := s.(string)
	return v
}

func TestLint(t *testing.T) {
	kv, _ := chartutil.ParseKubeVersion(testenv.KubeVersion)
	for _, f := range []string{"minimal-values.yaml", "full-values.yaml"} {
		l := lint.AllWithKubeVersion(chartDir(t), values(t, f), "platform", kv)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", f, m)
			}
		}
	}
}

func TestMinimalInstall(t *testing.T) {
	r := render(t, values(t, "minimal-values.yaml"))
	want := []string{"CustomResourceDefinition/clusterproviders.temco.io", "CustomResourceDefinition/clusters.temco.io",
		"CustomResourceDefinition/compositeapps.temco.io", "CustomResourceDefinition/deploymentintentgroups.temco.io",
		"CustomResourceDefinition/logicalclouds.temco.io", "CustomResourceDefinition/projects.temco.io",
		"Deployment/temco-api", "Deployment/temco-worker", "PodDisruptionBudget/temco-api",
		"PodDisruptionBudget/temco-worker", "Secret/temco-encryption", "Secret/temco-mongodb", "Service/temco-api",
		"Service/temco-worker-metrics", "ServiceAccount/temco"}
	if got := r.names(); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	api, worker := r.container(t, "temco-api"), r.container(t, "temco-worker")
	if api["image"] != "ghcr.io/temco/temco:0.1.0" || api["args"].([]any)[0] != "api" || worker["args"].([]any)[0] != "worker" {
		t.Errorf("api image %v args %v, worker args %v", api["image"], api["args"], worker["args"])
	}
	for name, c := range map[string]map[string]any{"api": api, "worker": worker} {
		e := env(c)
		if e["TEMCO_MONGO_URI"] != "secret:temco-mongodb/uri" || e["TEMCO_KEY_FILE"] != "/etc/temco/keys/encryption.keys" ||
			e["TEMCO_TEMPORAL_ADDRESS"] != "temporal-frontend.temporal.svc:7233" || e["TEMCO_TASK_QUEUE"] != "temco" {
			t.Errorf("%s env %v", name, e)
		}
		if _, tls := e["TEMCO_TEMPORAL_TLS"]; tls {
			t.Errorf("%s: Temporal TLS on by default", name)
		}
		if hosts, set := e["TEMCO_ARTIFACT_HOSTS_ALLOW"]; set {
			t.Errorf("%s: artifact hosts %q allowed by default", name, hosts)
		}
		if e["TEMCO_ENCRYPT_PAYLOADS"] != "true" {
			t.Errorf("%s: payload encryption off by default", name)
		}
		if str(c, "livenessProbe", "httpGet", "path") != "/healthz" || str(c, "readinessProbe", "httpGet", "path") != "/readyz" ||
			str(c, "readinessProbe", "httpGet", "scheme") != "HTTP" {
			t.Errorf("%s probes %v %v", name, c["livenessProbe"], c["readinessProbe"])
		}
		if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
			t.Errorf("%s: root filesystem writable", name)
		}
	}
	// Authentication is on by default, verified by the issuer's JWKS; the worker serves no API.
	if e := env(api); e["TEMCO_AUTH_ISSUER"] != "https://login.example.com/realms/platform" || e["TEMCO_AUTH_AUDIENCE"] != "temco" ||
		e["TEMCO_AUTH_JWKS_URL"] == "" || e["TEMCO_AUTH_ROLES_CLAIM"] != "roles" || e["TEMCO_AUTH_ADMIN_ROLE"] != "admin" {
		t.Errorf("api authentication env %v", e)
	}
	if e := env(worker); e["TEMCO_AUTH_ISSUER"] != "" {
		t.Error("the worker is given authentication settings")
	}
	off := values(t, "minimal-values.yaml")
	off["api"] = map[string]any{"auth": map[string]any{"enabled": false}}
	if e := env(render(t, off).container(t, "temco-api")); e["TEMCO_AUTH_ISSUER"] != "" {
		t.Errorf("api.auth.enabled=false still sets %v", e)
	}
	// The connection string and keys live only in their Secrets.
	for _, k := range []string{"Deployment/temco-api", "Deployment/temco-worker"} {
		data, _ := r[k].MarshalJSON()
		if strings.Contains(string(data), "secret@mongodb") || strings.Contains(string(data), "AAAAAAAA") {
			t.Errorf("%s carries a secret value", k)
		}
	}
	if r["Secret/temco-encryption"].GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Error("uninstalling would delete the encryption keys")
	}
	// Pods roll when the chart's Secrets change.
	other := values(t, "minimal-values.yaml")
	other["mongodb"].(map[string]any)["uri"] = "mongodb://elsewhere:27017/"
	sum := func(r rendered) string {
		return r["Deployment/temco-api"].Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"].(map[string]any)["checksum/secrets"].(string)
	}
	if sum(r) == sum(render(t, other)) {
		t.Error("a new MongoDB URI does not change the pods' checksum")
	}
}

func TestFullInstall(t *testing.T) {
	r := render(t, values(t, "full-values.yaml"))
	for _, k := range r.names() {
		if strings.HasPrefix(k, "Secret/") || k == "PodDisruptionBudget/temco-worker" {
			t.Errorf("unexpected %s", k)
		}
	}
	api, worker := r.container(t, "temco-api"), r.container(t, "temco-worker")
	e := env(api)
	for k, v := range map[string]string{
		"TEMCO_MONGO_URI": "secret:temco-mongodb/connection-string", "TEMCO_MONGO_DB": "temco_edge", "TEMCO_POLICY_ENGINE_ALLOW": "opa.example.com",
		"TEMCO_TEMPORAL_TLS": "true", "TEMCO_TEMPORAL_TLS_CA": "/etc/temco/temporal-ca/ca.crt",
		"TEMCO_TEMPORAL_TLS_CERT": "/etc/temco/temporal-client/tls.crt", "TEMCO_TEMPORAL_TLS_KEY": "/etc/temco/temporal-client/tls.key",
		"TEMCO_TEMPORAL_TLS_SERVER_NAME": "frontend.temporal.example.com", "TEMCO_TEMPORAL_NAMESPACE": "edge",
		"TEMCO_API_ADDR": ":8443", "TEMCO_API_TLS_CERT": "/etc/temco/api-tls/tls.crt", "GOMEMLIMIT": "400MiB",
		"TEMCO_AUTH_ISSUER": "https://login.example.com", "TEMCO_AUTH_AUDIENCE": "temco-edge",
		"TEMCO_AUTH_PUBLIC_KEY_FILE": "/etc/temco/auth/keys.pem", "TEMCO_AUTH_ROLES_CLAIM": "realm_access.roles",
		"TEMCO_AUTH_ADMIN_ROLE": "platform-admin", "TEMCO_CODEC_CORS_ORIGINS": "https://temporal-ui.example.com",
		"TEMCO_ARTIFACT_HOSTS_ALLOW": "registry.example.com,charts.example.com:8443",
		"TEMCO_API_HOSTS":            "temco-api,temco-api.platform,temco-api.platform.svc,temco-api.platform.svc.edge.local,temco.example.com",
		"TEMCO_API_ALLOWED_ORIGINS":  "https://portal.example.com",
	} {
		if e[k] != v {
			t.Errorf("api %s = %q, want %q", k, e[k], v)
		}
	}
	if _, jwks := e["TEMCO_AUTH_JWKS_URL"]; jwks {
		t.Error("both a JWKS URL and a public key file")
	}
	vols, _, _ := unstructured.NestedSlice(r["Deployment/temco-api"].Object, "spec", "template", "spec", "volumes")
	if !strings.Contains(fmt.Sprint(vols), "map[items:[map[key:signing.pem path:keys.pem]] secretName:temco-token-keys]") {
		t.Errorf("api volumes %v lack the token keys Secret", vols)
	}
	if str(api, "readinessProbe", "httpGet", "scheme") != "HTTPS" || str(api, "livenessProbe", "httpGet", "scheme") != "HTTPS" {
		t.Errorf("api probes over HTTP while it serves HTTPS: %v", api["readinessProbe"])
	}
	if we := env(worker); we["TEMCO_CLUSTERS_PER_BATCH"] != "100" || we["TEMCO_METRICS_ADDR"] != ":9100" || we["TEMCO_TEMPORAL_TLS_CERT"] == "" ||
		we["TEMCO_GAC_URL_ALLOW"] != "config.example.com,10.0.0.7:8080" || we["TEMCO_POLICY_ENGINE_ALLOW"] != "opa.example.com" ||
		we["TEMCO_ARTIFACT_HOSTS_ALLOW"] != "registry.example.com,charts.example.com:8443" ||
		we["TEMCO_WORKFLOW_TASK_QUEUES"] != "*=shared-hooks,edge=MIGRATION_TASK_Q" {
		t.Errorf("worker env %v", we)
	}
	var mounts []string
	for _, m := range worker["volumeMounts"].([]any) {
		mounts = append(mounts, m.(map[string]any)["mountPath"].(string))
	}
	slices.Sort(mounts)
	if want := []string{"/etc/temco/keys", "/etc/temco/mongodb-tls", "/etc/temco/temporal-ca", "/etc/temco/temporal-client", "/tmp"}; !slices.Equal(mounts, want) {
		t.Errorf("worker mounts %v, want %v", mounts, want)
	}
	sm, ok := r["ServiceMonitor/temco"]
	if !ok {
		t.Fatalf("no ServiceMonitor in %v", r.names())
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 2 || str(eps[0].(map[string]any), "scheme") != "https" || str(eps[1].(map[string]any), "port") != "metrics" ||
		sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %v", sm.Object)
	}
	if d := r["Deployment/temco-worker"]; str(d.Object, "spec", "template", "spec", "serviceAccountName") != "temco-edge" {
		t.Error("worker does not run as the named service account")
	}
}

func TestIncompleteOrMistypedValuesAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(map[string]any)
		want string
	}{
		"no MongoDB":        {func(v map[string]any) { delete(v, "mongodb") }, "mongodb.uri or mongodb.existingSecret is required"},
		"no keys":           {func(v map[string]any) { delete(v, "encryption") }, "encryption.existingSecret or encryption.keys is required"},
		"replicas a string": {func(v map[string]any) { v["worker"] = map[string]any{"replicas": "two"} }, "/worker/replicas': got string, want integer"},
		"misspelt key":      {func(v map[string]any) { v["workers"] = map[string]any{"replicas": 2} }, "workers"},
		"address sans port": {func(v map[string]any) { v["temporal"] = map[string]any{"address": "temporal"} }, "/temporal/address"},
		"not a MongoDB URI": {func(v map[string]any) { v["mongodb"] = map[string]any{"uri": "postgres://x"} }, "/mongodb/uri"},
		"hosts a string":    {func(v map[string]any) { v["artifactHostsAllow"] = "registry.example.com" }, "/artifactHostsAllow': got string, want array"},
		"auth half set":     {func(v map[string]any) { v["api"] = map[string]any{"auth": map[string]any{"issuer": "https://x"}} }, "api.auth needs issuer, audience and jwksUrl or publicKeySecret"},
		"hub sans token":    {func(v map[string]any) { v["hub"] = map[string]any{"enabled": true} }, "hub.tokenSecret is required while api.auth is on"},
		"hub port a string": {func(v map[string]any) { v["hub"] = map[string]any{"healthPort": "9017"} }, "/hub/healthPort': got string, want integer"},
		"hub misspelt key":  {func(v map[string]any) { v["hub"] = map[string]any{"tokensecret": "t"} }, "tokensecret"},
		"hub api not a URL": {func(v map[string]any) { v["hub"] = map[string]any{"api": "temco-api:9015"} }, "/hub/api"},
		"api host and port": {func(v map[string]any) { v["api"] = map[string]any{"hosts": []any{"temco.example.com:443"}} }, "/api/hosts/0"},
		"origin with path":  {func(v map[string]any) { v["api"] = map[string]any{"allowedOrigins": []any{"https://x/y"}} }, "/api/allowedOrigins/0"},
	} {
		v := values(t, "minimal-values.yaml")
		c.edit(v)
		_, err := testenv.RenderChart(chartDir(t), "temco", "platform", v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, c.want)
		}
	}
}

// The api of an install answers to the names it is called by — its Service's, the hub's
// api, api.hosts — and to the pod's IP address (the probes, Prometheus), and refuses
// another name (DNS rebinding): TEMCO_API_HOSTS as the chart sets it, read as temco api
// reads it.
func TestAPIServesTheNamesItIsCalledBy(t *testing.T) {
	hub := func(file string, hubValues map[string]any) map[string]any {
		v := values(t, file)
		h, _ := v["hub"].(map[string]any)
		if h == nil {
			h = map[string]any{}
		}
		h["enabled"], h["tokenSecret"] = true, "temco-hub-token"
		for k, x := range hubValues {
			h[k] = x
		}
		v["hub"] = h
		return v
	}
	for name, tc := range map[string]struct {
		values map[string]any
		names  []string // besides the hub's TEMCO_API
	}{
		"minimal":   {hub("minimal-values.yaml", nil), []string{"temco-api:9015", "temco-api.platform.svc.cluster.local:9015"}},
		"full":      {hub("full-values.yaml", nil), []string{"temco.example.com", "temco-api.platform.svc.edge.local:443"}},
		"given api": {hub("minimal-values.yaml", map[string]any{"api": "https://temco.internal.example:8443/"}), []string{"temco-api.platform"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			hosts, err := api.ParseHosts(strings.Split(env(r.container(t, "temco-api"))["TEMCO_API_HOSTS"], ","))
			if err != nil {
				t.Fatal(err)
			}
			h := (&api.Server{Log: slog.New(slog.DiscardHandler), Hosts: hosts}).Handler()
			hubAPI, err := url.Parse(env(r.container(t, "temco-hub"))["TEMCO_API"])
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{hubAPI.Host: 200, "10.244.1.7:9015": 200, "temco.attacker.test": 421}
			for _, n := range tc.names {
				want[n] = 200
			}
			for host, code := range want {
				req := httptest.NewRequest("GET", "/healthz", nil)
				req.Host = host
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != code {
					t.Errorf("Host %s: %d, want %d (TEMCO_API_HOSTS %q)", host, rec.Code, code, hosts)
				}
			}
		})
	}
}

// Every variable the chart sets is one temco reads: a renamed flag breaks this test, not
// a production install.
func TestChartSetsOnlyVariablesTemcoReads(t *testing.T) {
	root, _ := testenv.RepoRoot()
	var src strings.Builder
	files, _ := filepath.Glob(filepath.Join(root, "cmd", "temco", "*.go"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		src.Write(data)
	}
	r := render(t, values(t, "full-values.yaml"))
	for _, d := range []string{"temco-api", "temco-worker", "temco-hub"} {
		for name := range env(r.container(t, d)) {
			if regexp.MustCompile(`^TEMCO_`).MatchString(name) && !strings.Contains(src.String(), `"`+name+`"`) {
				t.Errorf("%s sets %s, which temco does not read", d, name)
			}
		}
	}
}

// allows reports whether a Role's or ClusterRole's rules grant verb on group/resource.
func allows(role *unstructured.Unstructured, group, resource, verb string) bool {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		r := r.(map[string]any)
		has := func(key, want string) bool {
			for _, v := range r[key].([]any) {
				if v == want {
					return true
				}
			}
			return false
		}
		if has("apiGroups", group) && has("resources", resource) && has("verbs", verb) {
			return true
		}
	}
	return false
}

func TestHub(t *testing.T) {
	for _, k := range render(t, values(t, "minimal-values.yaml")).names() {
		if strings.Contains(k, "hub") {
			t.Errorf("the hub is off by default, yet %s renders", k)
		}
	}
	v := values(t, "minimal-values.yaml")
	v["hub"] = map[string]any{"enabled": true, "tokenSecret": "temco-hub-token"}
	r := render(t, v)
	for _, k := range []string{"ServiceAccount/temco-hub", "ClusterRole/platform-temco-hub", "ClusterRoleBinding/platform-temco-hub",
		"Role/temco-hub", "RoleBinding/temco-hub", "Deployment/temco-hub", "PodDisruptionBudget/temco-hub"} {
		if _, ok := r[k]; !ok {
			t.Errorf("no %s in %v", k, r.names())
		}
	}
	hub := r.container(t, "temco-hub")
	if args := fmt.Sprint(hub["args"]); args != "[hub]" {
		t.Errorf("hub args %s", args)
	}
	e := env(hub)
	for k, want := range map[string]string{
		"TEMCO_API": "http://temco-api.platform.svc:9015", "TEMCO_TOKEN": "secret:temco-hub-token/token",
		"TEMCO_HUB_NAMESPACE": "platform", "TEMCO_HUB_HEALTH_ADDR": ":9017",
	} {
		if e[k] != want {
			t.Errorf("hub %s = %q, want %q", k, e[k], want)
		}
	}
	// Neither MongoDB, Temporal nor the keys: the hub reaches temco through its API only.
	for _, k := range []string{"TEMCO_MONGO_URI", "TEMCO_KEY_FILE", "TEMCO_TEMPORAL_ADDRESS", "KUBECONFIG", "SSL_CERT_FILE"} {
		if _, set := e[k]; set {
			t.Errorf("hub sets %s", k)
		}
	}
	if data, _ := r["Deployment/temco-hub"].MarshalJSON(); strings.Contains(string(data), "temco-encryption") || strings.Contains(string(data), "temco-mongodb") {
		t.Error("the hub mounts or reads the chart's Secrets")
	}
	if str(hub, "livenessProbe", "httpGet", "path") != "/healthz" || str(hub, "readinessProbe", "httpGet", "path") != "/readyz" ||
		str(hub, "readinessProbe", "httpGet", "port") != "health" || str(hub, "readinessProbe", "httpGet", "scheme") != "HTTP" {
		t.Errorf("hub probes %v %v", hub["livenessProbe"], hub["readinessProbe"])
	}
	if ro, _, _ := unstructured.NestedBool(hub, "securityContext", "readOnlyRootFilesystem"); !ro {
		t.Error("hub: root filesystem writable")
	}
	// Its own ServiceAccount, its token mounted: it talks to the cluster it runs in.
	pod, _, _ := unstructured.NestedMap(r["Deployment/temco-hub"].Object, "spec", "template", "spec")
	if pod["serviceAccountName"] != "temco-hub" || pod["automountServiceAccountToken"] != true {
		t.Errorf("hub pod runs as %v, automount %v", pod["serviceAccountName"], pod["automountServiceAccountToken"])
	}
	if sa := r["ServiceAccount/temco-hub"]; sa.Object["automountServiceAccountToken"] != true {
		t.Error("the hub's ServiceAccount does not mount its token")
	}
	if api := r["Deployment/temco-api"]; str(api.Object, "spec", "template", "spec", "serviceAccountName") != "temco" {
		t.Error("the api runs as the hub's ServiceAccount")
	}
	cr := r["ClusterRole/platform-temco-hub"]
	for _, kind := range []string{"clusterproviders", "clusters", "projects", "logicalclouds", "compositeapps", "deploymentintentgroups"} {
		for _, verb := range []string{"get", "list", "watch", "update", "patch"} {
			if !allows(cr, "temco.io", kind, verb) {
				t.Errorf("ClusterRole does not allow %s %s", verb, kind)
			}
		}
		if !allows(cr, "temco.io", kind+"/status", "update") || !allows(cr, "temco.io", kind+"/finalizers", "update") {
			t.Errorf("ClusterRole does not allow updating %s' status and finalizers", kind)
		}
		if allows(cr, "temco.io", kind, "delete") || allows(cr, "temco.io", kind, "create") {
			t.Errorf("ClusterRole allows creating or deleting %s", kind)
		}
	}
	if !allows(cr, "", "configmaps", "list") || !allows(cr, "", "configmaps", "watch") || allows(cr, "", "configmaps", "update") {
		t.Errorf("ClusterRole's configmaps rules %v", cr.Object["rules"])
	}
	// Secrets only in the release namespace and the tenant namespaces it is given.
	if allows(cr, "", "secrets", "get") || allows(cr, "", "secrets", "list") {
		t.Errorf("ClusterRole reads every Secret of the cluster: %v", cr.Object["rules"])
	}
	if sr := r["Role/temco-hub-secrets"]; sr == nil || !allows(sr, "", "secrets", "list") || !allows(sr, "", "secrets", "watch") || allows(sr, "", "secrets", "update") {
		t.Errorf("Role/temco-hub-secrets in the release namespace: %v", sr)
	}
	if e["TEMCO_HUB_SECRET_NAMESPACES"] != "platform" {
		t.Errorf("hub TEMCO_HUB_SECRET_NAMESPACES = %q", e["TEMCO_HUB_SECRET_NAMESPACES"])
	}
	v["hub"] = map[string]any{"enabled": true, "tokenSecret": "temco-hub-token", "tenantNamespaces": []any{"team-a", "platform", "team-b"}}
	tenants := render(t, v)
	for _, ns := range []string{"team-a", "team-b"} {
		role, binding := tenants["Role/"+ns+"/temco-hub-secrets"], tenants["RoleBinding/"+ns+"/temco-hub-secrets"]
		if role == nil || !allows(role, "", "secrets", "watch") || binding == nil {
			t.Errorf("no Role and RoleBinding reading Secrets in %s: %v", ns, tenants.names())
			continue
		}
		if subj, _, _ := unstructured.NestedSlice(binding.Object, "subjects"); fmt.Sprint(subj) != "[map[kind:ServiceAccount name:temco-hub namespace:platform]]" {
			t.Errorf("RoleBinding in %s: subjects %v", ns, subj)
		}
	}
	if got := env(tenants.container(t, "temco-hub"))["TEMCO_HUB_SECRET_NAMESPACES"]; got != "platform,team-a,team-b" {
		t.Errorf("hub TEMCO_HUB_SECRET_NAMESPACES = %q", got)
	}
	if !allows(cr, "events.k8s.io", "events", "create") || !allows(cr, "", "events", "patch") {
		t.Error("ClusterRole does not allow recording events")
	}
	if allows(cr, "coordination.k8s.io", "leases", "update") || !allows(r["Role/temco-hub"], "coordination.k8s.io", "leases", "update") ||
		!allows(r["Role/temco-hub"], "coordination.k8s.io", "leases", "create") {
		t.Error("leases are not granted in the release namespace only")
	}
	for _, b := range []string{"ClusterRoleBinding/platform-temco-hub", "RoleBinding/temco-hub"} {
		subj, _, _ := unstructured.NestedSlice(r[b].Object, "subjects")
		if fmt.Sprint(subj) != "[map[kind:ServiceAccount name:temco-hub namespace:platform]]" {
			t.Errorf("%s subjects %v", b, subj)
		}
	}
	// Without authentication, no token is needed; a given api is used as it is.
	v["api"] = map[string]any{"auth": map[string]any{"enabled": false}}
	v["hub"] = map[string]any{"enabled": true, "api": "https://temco.example.com"}
	e = env(render(t, v).container(t, "temco-hub"))
	if _, set := e["TEMCO_TOKEN"]; set || e["TEMCO_API"] != "https://temco.example.com" {
		t.Errorf("hub env %v", e)
	}
	// Every option: the api over HTTPS on its Service port, verified with the given CA.
	full := render(t, values(t, "full-values.yaml"))
	hub = full.container(t, "temco-hub")
	e = env(hub)
	for k, want := range map[string]string{
		"TEMCO_API": "https://temco-api.platform.svc:443", "TEMCO_TOKEN": "secret:temco-hub-token/jwt",
		"TEMCO_HUB_HEALTH_ADDR": ":9200", "SSL_CERT_FILE": "/etc/temco/api-ca/ca.crt", "GOMEMLIMIT": "900MiB",
	} {
		if e[k] != want {
			t.Errorf("full hub %s = %q, want %q", k, e[k], want)
		}
	}
	d := full["Deployment/temco-hub"]
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if !strings.Contains(fmt.Sprint(vols), "secretName:temco-api-ca") {
		t.Errorf("hub volumes %v lack the api's CA", vols)
	}
	if str(d.Object, "spec", "template", "spec", "nodeSelector", "kubernetes.io/os") != "linux" ||
		str(d.Object, "spec", "template", "spec", "serviceAccountName") != "temco-hub" {
		t.Errorf("hub pod %v", d.Object["spec"])
	}
	if n, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); fmt.Sprint(n) != "3" {
		t.Errorf("hub replicas %v", n)
	}
	if _, ok := full["PodDisruptionBudget/temco-hub"]; !ok {
		t.Error("no hub PodDisruptionBudget")
	}
}
