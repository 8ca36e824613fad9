package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// istioTrafficFiles are EMCO's Istio traffic example (examples/dtc/istio_traffic) as its
// users run it, written anew: its files, in its order, with its names and bodies — its
// registered in /v2/dtc-controllers and dtc in /v2/controllers with an IP as host (and
// rsync, with no type), cluster1 labelled edge-cluster and cluster2 edge-cluster1 (both
// networkpolicy-supported), cluster2's ingress gateway in its kv-pairs, an admin (level
// 0) logical cloud over both, http-client placed on cluster1 and http-server on cluster2,
// both apps' profiles the server's (as EMCO's apps.yaml has it), inbound intent serverin
// (serviceMesh istio) with client http-client, and approve at the end of intents.yaml.
// The project and provider are placeholders (EMCO's files say proj1 and provider1): the
// clusters are the stack's cluster1 and cluster2, registered anew under a provider of
// the test's own. projects.yaml, instantiatelc.yaml and instantiate.yaml are those of
// the SD-EWAN example.
var istioTrafficFiles = map[string]string{
	"controllers.yaml": `#creating controller entries
version: emco/v2
resourceContext:
  anchor: dtc-controllers
metadata :
  name: its
spec:
  host: {{.HostIP}}
  port: {{.ItsPort}}
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
  port: {{.RsyncPort}}

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
  port: {{.DtcPort}}
  type: "action"
  priority: 1
`,
	"projects.yaml": sdewanFiles["projects.yaml"],
	"clusters.yaml": `#creating cluster provider
version: emco/v2
resourceContext:
  anchor: cluster-providers
metadata :
   name: {{.Provider}}
   description: test
   userData1: test1
   userData2: test2

---
#creating cluster
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters
metadata :
   name: cluster1
   description: test
   userData1: test1
   userData2: test2
file:
  {{.KubeConfig1}}

---
#creating cluster
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters
metadata :
   name: cluster2
   description: test
   userData1: test1
   userData2: test2
file:
  {{.KubeConfig2}}

---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/cluster1/labels
clusterLabel: edge-cluster

---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/cluster2/labels
clusterLabel: edge-cluster1

---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/cluster1/labels
clusterLabel: networkpolicy-supported

---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/cluster2/labels
clusterLabel: networkpolicy-supported

---
#Add label kvpair
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/cluster2/kv-pairs
metadata :
  name: istioingresskvpairs
spec:
  kv:
    - istioIngressGatewayAddress : "{{.Cluster2IstioIngressGatewayAddress}}"
    - istioIngressGatewayPort: "32001"
    - istioIngressGatewayInternalPort: "15443"
`,
	"logicalclouds.yaml": `#create default logical cloud with admin permissions
version: emco/v2
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
  cluster: cluster1
  loadbalancerIp: "0.0.0.0"

---
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/logical-clouds/{{.LogicalCloud}}/cluster-references
metadata:
  name: lc-cl-2
spec:
  clusterProvider: {{.Provider}}
  cluster: cluster2
  loadbalancerIp: "0.0.0.0"
`,
	"instantiatelc.yaml": sdewanFiles["instantiatelc.yaml"],
	"apps.yaml": strings.Replace(sdewanFiles["apps.yaml"], "file:\n  output/http-client-profile.tar.gz",
		"file:\n  output/http-server-profile.tar.gz", 1),
	"intents.yaml": `#create deployment intent group
version: emco/v2
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
      clusterLabel: edge-cluster1

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
  port: 30083
  protocol: TCP
  serviceMesh: istio

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
  serviceName: http-client-svc
  namespaces: []
  cidrs: []
---
#Approve
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntentGroup}}/approve
`,
	"instantiate.yaml": sdewanFiles["instantiate.yaml"],
}

// EMCO's Istio traffic example runs through temco's emcoctl-compatible client as its
// apply.sh runs it, on clusters that look like clusters with Istio installed (its CRDs
// and istio-system, which the example's README asks for; EMCO, as temco, creates no
// namespace): the server's cluster2 gets Gateway http-service-gateway, ServiceEntry
// http-service-se-server and DestinationRule http-service-se-server-dr in istio-system,
// the client's cluster1 the client ServiceEntries and DestinationRules in default, each
// listed Applied with its app in the DIG's status. Deleting the files in reverse
// (delete.sh) terminates the DIG, which removes them and leaves istio-system, Istio's.
func TestDTCITSRunsEMCOsIstioTrafficExample(t *testing.T) {
	d := newDeployment(t)
	c1, c2 := stack.Clusters[0], stack.Clusters[1]
	prov := "istio-provider"
	values := fmt.Sprintf("HostIP: 192.0.2.10\nRsyncPort: 30431\nDtcPort: 30448\nItsPort: 30440\nKubeConfig1: %s\nKubeConfig2: %s\n"+
		"Cluster2IstioIngressGatewayAddress: 192.168.121.15\nHttpServerImageRepository: registry.local/my-custom-httptest-server\n"+
		"HttpClientImageRepository: registry.local/my-custom-httptest-client\nProjectName: %s\nProvider: %s\nLogicalCloud: default\n"+
		"CompositeApp: collection-composite-app\nDeploymentIntentGroup: collection-deployment-intent-group\n",
		c1.Kubeconfig(), c2.Kubeconfig(), d.project, prov)
	files := map[string][]byte{"values.yaml": []byte(values),
		"output/http-server.tgz":            httpTestChart("http-server", true),
		"output/http-client.tgz":            httpTestChart("http-client", false),
		"output/http-server-profile.tar.gz": testenv.Profile("service:\n    type: NodePort\n"),
	}
	for name, data := range istioTrafficFiles {
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

	remote := "http-service.default." + prov + ".cluster2"
	specIs(t, c2, gvrGateway, "istio-system", "http-service-gateway", "http-server", `{"selector":{"istio":"ingressgateway"},
		"servers":[{"hosts":["`+remote+`"],"name":"tls","port":{"name":"tls","number":15443,"protocol":"TLS"},"tls":{"mode":"AUTO_PASSTHROUGH"}}]}`)
	specIs(t, c2, gvrServiceEntry, "istio-system", "http-service-se-server", "http-server", `{"hosts":["`+remote+`"],"exportTo":["."],
		"endpoints":[{"address":"http-service.default"}],"location":"MESH_INTERNAL","resolution":"DNS","ports":[{"name":"tcp","number":30083,"protocol":"TCP"}]}`)
	specIs(t, c2, gvrDestinationRule, "istio-system", "http-service-se-server-dr", "http-server", `{"host":"`+remote+`","trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}`)
	mesh := []struct {
		cl    *devstack.Cluster
		gvr   schema.GroupVersionResource
		ns    string
		names []string
		app   string
	}{
		{c2, gvrGateway, "istio-system", []string{"http-service-gateway"}, "http-server"},
		{c2, gvrServiceEntry, "istio-system", []string{"http-service-se-server"}, "http-server"},
		{c2, gvrDestinationRule, "istio-system", []string{"http-service-se-server-dr"}, "http-server"},
		{c1, gvrServiceEntry, "default", []string{"http-service-se-client0", "http-service-se-client1"}, "http-client"},
		{c1, gvrDestinationRule, "default", []string{"http-service-dr-client-svcname", "http-service-dr-client0"}, "http-client"},
	}
	for _, m := range mesh {
		if got := meshObjects(t, m.cl, m.gvr, m.ns); !slices.Equal(got, m.names) {
			t.Errorf("%s: %s in %s: %v, want %v", m.cl.Name, m.gvr.Resource, m.ns, got, m.names)
		}
		for _, name := range m.names {
			if got := listedAs(s, name); got != m.app+" on "+m.cl.Name+": "+lifecycle.ResApplied {
				t.Errorf("the DIG's status lists %s as %q, want %s on %s, %s", name, got, m.app, m.cl.Name, lifecycle.ResApplied)
			}
		}
	}

	if out, err := ex.delete(); err != nil {
		t.Fatalf("temco delete: %v\n%s", err, out)
	}
	eventually(t, "the mesh objects gone", time.Minute, func() error {
		var left []string
		for _, m := range mesh {
			for _, n := range meshObjects(t, m.cl, m.gvr, m.ns) {
				left = append(left, m.cl.Name+" "+m.gvr.Resource+" "+m.ns+"/"+n)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
	for _, cl := range []*devstack.Cluster{c1, c2} {
		if !namespaceExists(t, cl, "istio-system") {
			t.Errorf("%s: istio-system is gone with the deployment; it is Istio's", cl.Name)
		}
	}
	for _, p := range []string{dig, "/projects/" + d.project, "/cluster-providers/" + prov, "/dtc-controllers/its",
		"/controllers/dtc", "/controllers/rsync"} {
		d.c.do("GET", p, nil).must(t, 404)
	}
}

// listedAs says how the DIG's status lists the named resource: "<app> on <cluster>:
// <rsyncStatus>", or "" when it does not.
func listedAs(s status, name string) string {
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				if r.Name == name {
					return a.Name + " on " + c.Cluster + ": " + r.RsyncStatus
				}
			}
		}
	}
	return ""
}

// namespaceExists reports whether the cluster has the namespace.
func namespaceExists(t *testing.T, cl *devstack.Cluster, name string) bool {
	t.Helper()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	return true
}
