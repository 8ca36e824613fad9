package e2e

import (
	"context"
	"encoding/json"
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
)

// The Istio kinds its writes, as the dev stack's CRDs serve them.
var (
	gvrGateway         = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "gateways"}
	gvrServiceEntry    = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "serviceentries"}
	gvrDestinationRule = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "destinationrules"}
	gvrAuthorization   = schema.GroupVersionResource{Group: "security.istio.io", Version: "v1beta1", Resource: "authorizationpolicies"}
	gvrNetworkPolicy   = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
)

// istioGateway is cluster2's Istio ingress gateway as EMCO's istio_traffic example
// describes it in the cluster's kv-pairs.
var istioGateway = []any{
	map[string]any{"istioIngressGatewayAddress": "172.18.0.12"},
	map[string]any{"istioIngressGatewayPort": "32001"},
	map[string]any{"istioIngressGatewayInternalPort": "15443"},
}

// meshTrafficGroup is a deployment of server app dtc-server on cluster2 and client apps
// dtc-client and dtc-client2 on cluster1 (admin cloud: namespace default), whose DIG
// names dtc with traffic group intent "tg"; its and nps are dtc's sub-controllers as in
// EMCO's examples, cluster2 is labelled networkpolicy-supported, and inbound intent
// "serverin" (TCP 80, serviceMesh istio) lets dtc-client reach the server. The clean-up
// terminates the DIG and removes the registrations, label and kv-pairs.
type meshTrafficGroup struct {
	*deployment
	clients, kvPairs []string // for clean-up
}

func (g *meshTrafficGroup) tg() string      { return g.dig() + "/traffic-group-intents/tg" }
func (g *meshTrafficGroup) inbound() string { return g.tg() + "/inbound-intents/serverin" }

func newMeshTrafficGroup(t *testing.T, kv map[string][]any) *meshTrafficGroup {
	t.Helper()
	g := &meshTrafficGroup{deployment: newDeployment(t,
		app{name: "dtc-server", chart: webChart("dtc-server"), placement: clusterNamed("cluster2")},
		app{name: "dtc-client", chart: webChart("dtc-client"), placement: clusterNamed("cluster1")},
		app{name: "dtc-client2", chart: webChart("dtc-client2"), placement: clusterNamed("cluster1")})}
	g.create()
	t.Cleanup(g.cleanUp)
	c := g.c
	for cluster, pairs := range kv {
		path := "/cluster-providers/" + provider + "/clusters/" + cluster + "/kv-pairs"
		c.do("POST", path, res("istio-gateway", map[string]any{"kv": pairs})).must(t, 201)
		g.kvPairs = append(g.kvPairs, path+"/istio-gateway")
	}
	c.do("POST", "/cluster-providers/"+provider+"/clusters/cluster2/labels", map[string]string{"clusterLabel": "networkpolicy-supported"}).must(t, 201)
	c.do("POST", "/controllers", res("dtc-"+g.project, map[string]any{"host": "dtc", "port": 9018, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/dtc-controllers", res("its-"+g.project, map[string]any{"host": "its", "port": 9000, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/dtc-controllers", res("nps-"+g.project, map[string]any{"host": "nps", "port": 9000, "type": "action", "priority": 2})).must(t, 201)
	c.do("POST", g.dig()+"/traffic-group-intents", res("tg", nil)).must(t, 201)
	c.do("POST", g.tg()+"/inbound-intents", res("serverin", map[string]any{"app": "dtc-server", "appLabel": "app=dtc-server",
		"serviceName": "dtc-server", "port": 80, "protocol": "TCP", "serviceMesh": "istio"})).must(t, 201)
	g.addClient("dtc-client", nil)
	c.do("POST", g.dig()+"/intents", res("dtc", map[string]any{"intent": map[string]string{"dtc-" + g.project: "tg"}})).must(t, 201)
	c.do("POST", g.dig()+"/approve", nil).must(t, 202)
	return g
}

// addClient lets an app reach the server, with an access point when one is given.
func (g *meshTrafficGroup) addClient(name string, accessPoint map[string]any) {
	g.c.do("POST", g.inbound()+"/clients", res(name, map[string]any{"app": name, "appLabel": "app=" + name,
		"serviceName": name, "namespaces": []string{}, "cidrs": []string{}})).must(g.t, 201)
	g.clients = append(g.clients, name)
	if accessPoint != nil {
		g.c.do("POST", g.inbound()+"/clients/"+name+"/access-points", res("ap", accessPoint)).must(g.t, 201)
	}
}

func (g *meshTrafficGroup) cleanUp() {
	// A failed instance too; a refused instantiate left the DIG Approved, nothing to terminate.
	if s := g.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
		g.operate(lifecycle.OpTerminate)
		g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	}
	var paths []string
	for _, cl := range g.clients {
		paths = append(paths, g.inbound()+"/clients/"+cl+"/access-points/ap", g.inbound()+"/clients/"+cl)
	}
	paths = append(paths, g.inbound(), g.tg(), g.dig()+"/intents/dtc", "/dtc-controllers/its-"+g.project, "/dtc-controllers/nps-"+g.project,
		"/controllers/dtc-"+g.project, "/cluster-providers/"+provider+"/clusters/cluster2/labels/networkpolicy-supported")
	for _, p := range append(paths, g.kvPairs...) {
		if r := g.c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
			g.t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
		}
	}
}

// meshObject reads a live object (nil when absent).
func meshObject(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, ns, name string) map[string]any {
	t.Helper()
	u, err := dynClient(t, cl).Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// meshObjects lists the names of the objects of a kind in ns that a deployment of ours
// put there (carrying the deployment-id label).
func meshObjects(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, ns string) []string {
	t.Helper()
	l, err := dynClient(t, cl).Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: lifecycle.DeploymentIDLabel})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	slices.Sort(out)
	return out
}

// specIs compares an object's spec with the JSON wanted, and says which app's
// deployment owns it.
func specIs(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, ns, name, owner, want string) {
	t.Helper()
	o := meshObject(t, cl, gvr, ns, name)
	if o == nil {
		t.Errorf("%s has no %s %s/%s", cl.Name, gvr.Resource, ns, name)
		return
	}
	var wantSpec any
	if err := json.Unmarshal([]byte(want), &wantSpec); err != nil {
		t.Fatal(err)
	}
	if got, w := pretty(o["spec"]), pretty(wantSpec); got != w {
		t.Errorf("%s: %s %s/%s spec\n got %s\nwant %s", cl.Name, gvr.Resource, ns, name, got, w)
	}
	labels, _ := o["metadata"].(map[string]any)["labels"].(map[string]any)
	if id, _ := labels[lifecycle.DeploymentIDLabel].(string); !strings.HasSuffix(id, "-"+owner) {
		t.Errorf("%s: %s %s/%s carries %s=%q, want it deployed with app %s", cl.Name, gvr.Resource, ns, name, lifecycle.DeploymentIDLabel, id, owner)
	}
}

// policyClients lists the app labels of the pods a NetworkPolicy admits.
func policyClients(np map[string]any) []string {
	var out []string
	rules, _ := np["spec"].(map[string]any)["ingress"].([]any)
	for _, r := range rules {
		from, _ := r.(map[string]any)["from"].([]any)
		for _, f := range from {
			if sel, ok := f.(map[string]any)["podSelector"].(map[string]any); ok {
				out = append(out, fmt.Sprint(sel["matchLabels"].(map[string]any)["app"]))
			}
		}
	}
	return out
}

// EMCO's istio_traffic and network_policy examples in one: server app dtc-server on
// cluster2, client dtc-client on cluster1. After instantiate, cluster1 has the client's
// ServiceEntries (the VIP 240.0.0.2, cluster2's gateway as endpoint) and DestinationRules,
// and cluster2 the server's gateway passthrough in istio-system and nps's NetworkPolicy.
// An update adding client dtc-client2 on cluster1 with an access point adds the server's
// AuthorizationPolicy and admits the second client in the NetworkPolicy, and leaves the
// client entries with the first client. Terminate removes everything.
func TestDTC(t *testing.T) {
	g := newMeshTrafficGroup(t, map[string][]any{"cluster2": istioGateway})
	c1, c2 := stack.Clusters[0], stack.Clusters[1]

	acc := g.operate(lifecycle.OpInstantiate)
	s := g.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	recordHistory(t, acc.WorkflowID, "Instantiate-dtc-subcontrollers")
	if meshObject(t, c1, gvrServiceEntry, "default", "dtc-server-se-client0") == nil {
		t.Fatalf("cluster1 has no ServiceEntry dtc-server-se-client0; status %s", pretty(s))
	}
	remote := "dtc-server.default.local.cluster2"
	specIs(t, c1, gvrServiceEntry, "default", "dtc-server-se-client0", "dtc-client", `{"hosts":["`+remote+`"],"addresses":["240.0.0.2"],
		"endpoints":[{"address":"172.18.0.12","ports":{"tcp":32001}}],"location":"MESH_INTERNAL","resolution":"DNS",
		"ports":[{"name":"tcp","number":80,"protocol":"TCP"}]}`)
	specIs(t, c1, gvrServiceEntry, "default", "dtc-server-se-client1", "dtc-client", `{"hosts":["dtc-server"],"addresses":["240.0.0.2"],
		"endpoints":[{"address":"172.18.0.12","ports":{"tcp":32001}}],"location":"MESH_INTERNAL","resolution":"DNS",
		"ports":[{"name":"tcp","number":80,"protocol":"TCP"}]}`)
	specIs(t, c1, gvrDestinationRule, "default", "dtc-server-dr-client0", "dtc-client", `{"host":"`+remote+`","trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}`)
	specIs(t, c1, gvrDestinationRule, "default", "dtc-server-dr-client-svcname", "dtc-client", `{"host":"dtc-server","trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}`)
	specIs(t, c2, gvrGateway, "istio-system", "dtc-server-gateway", "dtc-server", `{"selector":{"istio":"ingressgateway"},
		"servers":[{"hosts":["`+remote+`"],"name":"tls","port":{"name":"tls","number":15443,"protocol":"TLS"},"tls":{"mode":"AUTO_PASSTHROUGH"}}]}`)
	specIs(t, c2, gvrServiceEntry, "istio-system", "dtc-server-se-server", "dtc-server", `{"hosts":["`+remote+`"],"exportTo":["."],
		"endpoints":[{"address":"dtc-server.default"}],"location":"MESH_INTERNAL","resolution":"DNS","ports":[{"name":"tcp","number":80,"protocol":"TCP"}]}`)
	specIs(t, c2, gvrDestinationRule, "istio-system", "dtc-server-se-server-dr", "dtc-server", `{"host":"`+remote+`","trafficPolicy":{"tls":{"mode":"ISTIO_MUTUAL"}}}`)
	// Nothing else of the mesh anywhere: the server's side has no client entries, the
	// client's no gateway, and no access point means no AuthorizationPolicy.
	for _, tc := range []struct {
		cl   *devstack.Cluster
		gvr  schema.GroupVersionResource
		ns   string
		want []string
	}{
		{c1, gvrServiceEntry, "default", []string{"dtc-server-se-client0", "dtc-server-se-client1"}},
		{c1, gvrDestinationRule, "default", []string{"dtc-server-dr-client-svcname", "dtc-server-dr-client0"}},
		{c1, gvrGateway, "istio-system", nil}, {c1, gvrServiceEntry, "istio-system", nil},
		{c2, gvrServiceEntry, "default", nil}, {c2, gvrDestinationRule, "default", nil},
		{c2, gvrGateway, "istio-system", []string{"dtc-server-gateway"}},
		{c2, gvrAuthorization, "default", nil},
	} {
		if got := meshObjects(t, tc.cl, tc.gvr, tc.ns); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %s in %s: %v, want %v", tc.cl.Name, tc.gvr.Resource, tc.ns, got, tc.want)
		}
	}
	np := meshObject(t, c2, gvrNetworkPolicy, "default", "tg-serverin")
	if np == nil || !slices.Equal(policyClients(np), []string{"dtc-client"}) {
		t.Errorf("cluster2: NetworkPolicy tg-serverin admits %v, want dtc-client", np)
	}

	g.addClient("dtc-client2", map[string]any{"action": "ALLOW", "url": []string{"/status/*"}, "access": []string{"GET"}})
	g.update("update", nil)
	specIs(t, c2, gvrAuthorization, "default", "dtc-server", "dtc-server", `{"action":"ALLOW","selector":{"matchLabels":{"app":"dtc-server"}},
		"rules":[{"to":[{"operation":{"hosts":["dtc-server.default","dtc-server.default.svc.cluster.local","dtc-server"],
		"methods":["GET"],"paths":["/status/*"]}}]}]}`)
	specIs(t, c1, gvrServiceEntry, "default", "dtc-server-se-client0", "dtc-client", `{"hosts":["`+remote+`"],"addresses":["240.0.0.2"],
		"endpoints":[{"address":"172.18.0.12","ports":{"tcp":32001}}],"location":"MESH_INTERNAL","resolution":"DNS",
		"ports":[{"name":"tcp","number":80,"protocol":"TCP"}]}`)
	if np = meshObject(t, c2, gvrNetworkPolicy, "default", "tg-serverin"); np == nil || !slices.Equal(policyClients(np), []string{"dtc-client", "dtc-client2"}) {
		t.Errorf("after the update, cluster2: NetworkPolicy tg-serverin admits %v, want dtc-client and dtc-client2", np)
	}

	term := g.operate(lifecycle.OpTerminate)
	g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	recordHistory(t, term.WorkflowID, "Terminate-dtc-subcontroller-hooks")
	eventually(t, "the mesh objects and the NetworkPolicy gone", time.Minute, func() error {
		var left []string
		for _, cl := range []*devstack.Cluster{c1, c2} {
			for _, gvr := range []schema.GroupVersionResource{gvrGateway, gvrServiceEntry, gvrDestinationRule, gvrAuthorization, gvrNetworkPolicy} {
				for _, ns := range []string{"default", "istio-system"} {
					for _, n := range meshObjects(t, cl, gvr, ns) {
						left = append(left, cl.Name+" "+gvr.Resource+" "+ns+"/"+n)
					}
				}
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
}

// Cluster2, where the server runs, has no kv-pairs saying where its ingress gateway is:
// the client on cluster1 could not reach it. Instantiate fails before anything is
// applied, and the DIG's status says which kv-pair of which cluster is missing.
func TestDTCIstioRefusesAClientThatCannotReachTheServersGateway(t *testing.T) {
	g := newMeshTrafficGroup(t, nil)
	acc := g.operate(lifecycle.OpInstantiate)
	s := g.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	for _, part := range []string{`inbound intent "serverin"`, `client "dtc-client" on local+cluster1`,
		"kv-pair istioIngressGatewayAddress of cluster local+cluster2", "POST /v2/cluster-providers/local/clusters/cluster2/kv-pairs"} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("status error %q does not say %s", s.Error, part)
		}
	}
	if n := s.RsyncStatus[lifecycle.ResApplied]; n != 0 {
		t.Errorf("rsync-status %v, want nothing applied", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters[:2] {
		for _, a := range []string{"dtc-server", "dtc-client"} {
			if objs := objectsOf(t, cl, acc.ContextID, a); len(objs) > 0 {
				t.Errorf("%s has %v of %s, want nothing", cl.Name, objs, a)
			}
		}
		if got := meshObjects(t, cl, gvrServiceEntry, "default"); len(got) > 0 {
			t.Errorf("%s has ServiceEntries %v", cl.Name, got)
		}
	}
	t.Log("refused:", s.Error)
}
