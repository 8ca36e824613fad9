package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// sdewanFiles are EMCO's SD-EWAN traffic example (examples/dtc/sdewan) as its users run
// it, written anew: its files, in its order, with its names and bodies — swc registered in
// /v2/dtc-controllers and dtc in /v2/controllers by name with an IP as host (and rsync,
// with no type), one cluster labelled edge-cluster with the SD-EWAN kv-pairs, an admin
// (level 0) logical cloud whose cluster reference carries loadbalancerIp, http-client and
// http-server both placed by that label (so on the same cluster), overrideValues
// image.repository, the DIG's intent "dtc: testdtc", and approve at the end of
// intents.yaml. The project, provider, cluster and kubeconfig are placeholders: the
// cluster is the stack's cluster1, registered anew under a provider of the test's own.
var sdewanFiles = map[string]string{
	"controllers.yaml": `#creating controller entries
version: emco/v2
resourceContext:
  anchor: dtc-controllers
metadata :
  name: swc
spec:
  host: {{.HostIP}}
  port: 30488
  type: "action"
  priority: 1
---
version: emco/v2
resourceContext:
  anchor: controllers
metadata :
  name: rsync
  description: test
  userData1: test1
  userData2: test2
spec:
  host: {{.HostIP}}
  port: 30431
---
version: emco/v2
resourceContext:
  anchor: controllers
metadata :
  name: dtc
  description: test
  userData1: test1
  userData2: test2
spec:
  host: {{.HostIP}}
  port: 30448
  type: "action"
  priority: 1
`,
	"projects.yaml": `version: emco/v2
resourceContext:
  anchor: projects
metadata :
   name: {{.ProjectName}}
   description: test
   userData1: test1
   userData2: test2
`,
	"clusters.yaml": `version: emco/v2
resourceContext:
  anchor: cluster-providers
metadata :
   name: {{.Provider}}
   description: test
   userData1: test1
   userData2: test2
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters
metadata :
   name: {{.Cluster}}
   description: test
   userData1: test1
   userData2: test2
file:
  {{.KubeConfig1}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/{{.Cluster}}/labels
clusterLabel: edge-cluster
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/{{.Cluster}}/labels
clusterLabel: networkpolicy-supported
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/{{.Cluster}}/kv-pairs
metadata :
  name: sdewankvpairs
spec:
  kv:
    - SdewanCnfPort: "12354"
    - SdewanServicePort: "31333"
    - SdewanServiceAllowedCidr: "192.168.22.22/24"
`,
	"logicalclouds.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds
metadata:
  name: {{.LogicalCloud}}
spec:
  level: "0"
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/cluster-references
metadata:
  name: lc-cl-1
spec:
  clusterProvider: {{.Provider}}
  cluster: {{.Cluster}}
  loadbalancerIp: "0.0.0.0"
`,
	"instantiatelc.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/instantiate
`,
	"apps.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps
metadata :
  name: {{.CompositeApp}}
  description: test
  userData1: test1
  userData2: test2
spec:
  compositeAppVersion: v1
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/apps
metadata :
  name: http-client
  description: "description for app"
  userData1: test1
  userData2: test2
file:
  output/http-client.tgz
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/apps
metadata :
  name: http-server
  description: "description for app"
  userData1: test1
  userData2: test2
file:
  output/http-server.tgz
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/composite-profiles
metadata :
  name: collection-composite-profile
  description: test
  userData1: test1
  userData2: test2
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/composite-profiles/collection-composite-profile/profiles
metadata :
  name: http-client-profile
  description: test
  userData1: test1
  userData2: test2
spec:
  app: http-client
file:
  output/http-client-profile.tar.gz
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/composite-profiles/collection-composite-profile/profiles
metadata :
  name: http-server-profile
  description: test
  userData1: test1
  userData2: test2
spec:
  app: http-server
file:
  output/http-server-profile.tar.gz
`,
	"intents.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups
metadata :
  name: {{.DeploymentIntentGroup}}
  description: "description"
  userData1: test1
  userData2: test2
spec:
  compositeProfile: collection-composite-profile
  version: r1
  logicalCloud: {{.LogicalCloud}}
  overrideValues:
  - app: http-server
    values:
      "image.repository": "{{.HttpServerImageRepository}}"
  - app: http-client
    values:
      "image.repository": "{{.HttpClientImageRepository}}"
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/intents
metadata :
  name: collection-deployment-intent
  description: "description"
  userData1: test1
  userData2: test2
spec:
  intent:
    genericPlacementIntent: collection-placement-intent
    dtc: testdtc
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/generic-placement-intents
metadata :
  name: collection-placement-intent
  description: "description for app"
  userData1: test1
  userData2: test2
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/generic-placement-intents/collection-placement-intent/app-intents
metadata:
  name: http-client-placement-intent
  description: description of placement_intent
  userData1: user data 1
  userData2: user data 2
spec:
  app: http-client
  intent:
    allOf:
    - clusterProvider: {{.Provider}}
      clusterLabel: edge-cluster
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/generic-placement-intents/collection-placement-intent/app-intents
metadata:
  name: http-server-placement-intent
  description: description of placement_intent
  userData1: user data 1
  userData2: user data 2
spec:
  app: http-server
  intent:
    allOf:
    - clusterProvider: {{.Provider}}
      clusterLabel: edge-cluster
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/traffic-group-intents
metadata:
  name: testdtc
  description: description of traffic intent
  userData1: user data 1
  userData2: user data 2
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/traffic-group-intents/testdtc/inbound-intents
metadata:
  name: serverin
  description: description of traffic intent
  userData1: user data 1
  userData2: user data 2
spec:
  app: http-server
  appLabel: app=http-server
  serviceName: http-service
  port: 3333
  protocol: TCP
  edgeCNF: sdewan
---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/traffic-group-intents/testdtc/inbound-intents/serverin/clients
metadata:
  name: client1
  description: description of traffic intent
  userData1: user data 1
  userData2: user data 2
spec:
  app: http-client
  appLabel: app=http-client
  serviceName: http-client
  namespaces: []
  cidrs: []
---
#Approve
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/approve
`,
	"instantiate.yaml": `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/instantiate
`,
}

// dtcExampleOrder is the order of the apply.sh of EMCO's dtc examples.
var dtcExampleOrder = []string{"controllers.yaml", "projects.yaml", "clusters.yaml", "logicalclouds.yaml", "instantiatelc.yaml",
	"apps.yaml", "intents.yaml", "instantiate.yaml"}

// dtcExample is one of EMCO's dtc examples in a folder of its own, laid out as its
// setup.sh leaves it: the files, values.yaml, and the charts and profiles under output/.
type dtcExample struct {
	t       *testing.T
	dir     string
	deleted bool
}

// newDTCExample writes the example's files into a temporary folder; the clean-up deletes
// them from temco unless the test did.
func newDTCExample(t *testing.T, files map[string][]byte) *dtcExample {
	t.Helper()
	e := &dtcExample{t: t, dir: t.TempDir()}
	if err := os.Mkdir(filepath.Join(e.dir, "output"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if !e.deleted {
			if out, err := e.delete(); err != nil {
				t.Logf("clean-up: temco delete: %v\n%s", err, out)
			}
		}
	})
	return e
}

// apply runs `temco apply` on each file in dtcExampleOrder, as apply.sh runs emcoctl, and
// awaits the instantiate.
func (e *dtcExample) apply() {
	e.t.Helper()
	for _, f := range dtcExampleOrder {
		args := []string{"apply", "-f", f, "-v", "values.yaml"}
		if f == "instantiate.yaml" {
			args = append(args, "--wait")
		}
		if out, err := temco(e.t, e.dir, args...); err != nil {
			e.t.Fatalf("temco apply -f %s: %v\n%s", f, err, out)
		}
	}
}

// delete runs the files backwards in one delete: terminate the DIG (awaited), its
// intents, the apps, terminate the cloud, the cloud, the clusters, the project, the
// registrations.
func (e *dtcExample) delete() (string, error) {
	args := []string{"delete"}
	for _, f := range dtcExampleOrder {
		args = append(args, "-f", f)
	}
	e.deleted = true
	return temco(e.t, e.dir, append(args, "-v", "values.yaml")...)
}

// httpTestChart stands for EMCO's http-server and http-client charts: a Deployment whose
// pods carry app=<name> and whose image is image.repository, and for the server its
// Service http-service (service.name) of the type the profile gives.
func httpTestChart(name string, service bool) []byte {
	tpl := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Chart.Name }}}}
  template:
    metadata: {labels: {app: {{ .Chart.Name }}}}
    spec:
      containers: [{name: main, image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"}]
`
	values := "image:\n  repository: registry.local/unset\n  tag: \"1.1\"\n"
	if service {
		tpl += `---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Values.service.name }}
spec:
  type: {{ .Values.service.type }}
  selector: {app: {{ .Chart.Name }}}
  ports: [{port: 3333, targetPort: 3333, protocol: TCP}]
`
		values += "service:\n  name: http-service\n  type: ClusterIP\n"
	}
	return testenv.Chart(name, values, map[string]string{"all.yaml": tpl})
}

// EMCO's SD-EWAN example runs through temco's emcoctl-compatible client as its apply.sh
// runs it: on the one edge-cluster, where server and client both run, the server app gets
// CNFService http-service.default.svc.cluster.local and the client app SdewanApplication
// http-service (EMCO's swc names them so: the example's README, listing http-client and
// http-service-se, is out of date), with the kv-pairs' ports and CIDR and the server's pod
// selector. Deleting the files in reverse (delete.sh) terminates the DIG and removes them.
func TestDTCSWCRunsEMCOsSdewanExample(t *testing.T) {
	d := newDeployment(t)
	cl := stack.Clusters[0]
	const (
		serverImage = "registry.local/my-custom-httptest-server"
		clientImage = "registry.local/my-custom-httptest-client"
		fqdn        = "http-service.default.svc.cluster.local"
	)
	prov := "sdewan-provider"
	values := fmt.Sprintf("HostIP: 192.0.2.10\nKubeConfig1: %s\nHttpServerImageRepository: %s\nHttpClientImageRepository: %s\n"+
		"ProjectName: %s\nProvider: %s\nCluster: %s\nLogicalCloud: default\nCompositeApp: collection-composite-app\n"+
		"DeploymentIntentGroup: collection-deployment-intent-group\n", cl.Kubeconfig(), serverImage, clientImage, d.project, prov, cl.Name)
	files := map[string][]byte{"values.yaml": []byte(values),
		"output/http-server.tgz":            httpTestChart("http-server", true),
		"output/http-client.tgz":            httpTestChart("http-client", false),
		"output/http-server-profile.tar.gz": testenv.Profile("service:\n    type: NodePort\n"),
		"output/http-client-profile.tar.gz": testenv.Profile("service:\n    type: ClusterIP\n"),
	}
	for name, data := range sdewanFiles {
		files[name] = []byte(data)
	}
	ex := newDTCExample(t, files)
	ex.apply()
	dig := "/projects/" + d.project + "/composite-apps/collection-composite-app/v1/deployment-intent-groups/collection-deployment-intent-group"
	var s status
	d.c.do("GET", dig+"/status", nil).must(t, 200).json(t, &s)
	if s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("the DIG is %s: %s", s.Status, s.Error)
	}

	// The apps themselves, with the DIG's overrideValues.
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	for app, image := range map[string]string{"http-server": serverImage, "http-client": clientImage} {
		dep, err := cs.AppsV1().Deployments("default").Get(context.Background(), "r1-"+app, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: Deployment r1-%s: %v", cl.Name, app, err)
		}
		if got := dep.Spec.Template.Spec.Containers[0].Image; got != image+":1.1" {
			t.Errorf("r1-%s runs %s, want the overrideValues' %s:1.1", app, got, image)
		}
	}

	for _, o := range []struct {
		kind, name, app string
		spec            map[string]any
	}{
		{"CNFService", fqdn, "http-server", map[string]any{"fullname": fqdn, "port": "12354", "dport": "31333", "cidr": "192.168.22.22/24"}},
		{"SdewanApplication", "http-service", "http-client", map[string]any{"appNamespace": "default",
			"podSelector": map[string]any{"matchLabels": map[string]any{"app": "http-server"}}, "servicePort": "31333", "cnfPort": "12354"}},
	} {
		gvr := cnfServices
		if o.kind == "SdewanApplication" {
			gvr = sdewanApplications
		}
		obj := sdewanObject(t, cl, gvr, o.name)
		if obj == nil {
			t.Errorf("%s has no %s %s in default; status %s", cl.Name, o.kind, o.name, d.c.do("GET", dig+"/status", nil).body)
			continue
		}
		if !equality.Semantic.DeepEqual(obj["spec"], o.spec) {
			t.Errorf("%s %s: spec\n got %s\nwant %s", o.kind, o.name, pretty(obj["spec"]), pretty(o.spec))
		}
		labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["sdewanPurpose"] != "base" {
			t.Errorf("%s %s: labels %v, want sdewanPurpose=base", o.kind, o.name, labels)
		}
		if id := labels[lifecycle.DeploymentIDLabel]; id != s.Instance+"-"+o.app {
			t.Errorf("%s %s carries %s=%v, want it deployed with app %s of instance %s", o.kind, o.name,
				lifecycle.DeploymentIDLabel, id, o.app, s.Instance)
		}
		// The DIG's status lists it with its app on the cluster, applied.
		found := false
		for _, a := range s.Apps {
			for _, c := range a.Clusters {
				for _, r := range c.Resources {
					if r.GVK.Kind == o.kind && r.Name == o.name {
						found = true
						if a.Name != o.app || c.Cluster != cl.Name || r.RsyncStatus != lifecycle.ResApplied {
							t.Errorf("status lists %s %s with app %s on %s, %s; want app %s on %s, %s", o.kind, o.name, a.Name,
								c.Cluster, r.RsyncStatus, o.app, cl.Name, lifecycle.ResApplied)
						}
					}
				}
			}
		}
		if !found {
			t.Errorf("the DIG's status does not list %s %s: %s", o.kind, o.name, pretty(s.Apps))
		}
	}
	// The names of the example's README are not what EMCO's swc makes.
	if sdewanObject(t, cl, sdewanApplications, "http-client") != nil || sdewanObject(t, cl, cnfServices, "http-service-se") != nil {
		t.Error("SdewanApplication http-client or CNFService http-service-se: EMCO's swc makes neither")
	}

	out, err := ex.delete()
	if err != nil {
		t.Fatalf("temco delete: %v\n%s", err, out)
	}
	if first, _, _ := strings.Cut(out, "\n"); !strings.HasSuffix(first, ": POST /v2"+dig+"/terminate 202") {
		t.Errorf("delete must begin by terminating the DIG:\n%s", out)
	}
	eventually(t, "the SD-EWAN objects gone", time.Minute, func() error {
		if sdewanObject(t, cl, cnfServices, fqdn) != nil || sdewanObject(t, cl, sdewanApplications, "http-service") != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	for _, p := range []string{dig, "/projects/" + d.project, "/cluster-providers/" + prov, "/dtc-controllers/swc",
		"/controllers/dtc", "/controllers/rsync"} {
		d.c.do("GET", p, nil).must(t, 404)
	}
}
