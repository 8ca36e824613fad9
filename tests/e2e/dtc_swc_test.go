package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

var (
	cnfServices        = schema.GroupVersionResource{Group: "batch.sdewan.akraino.org", Version: "v1alpha1", Resource: "cnfservices"}
	sdewanApplications = schema.GroupVersionResource{Group: "batch.sdewan.akraino.org", Version: "v1alpha1", Resource: "sdewanapplications"}
)

// swcTrafficGroup is a deployment whose DIG names dtc with traffic group intent "tg",
// with swc registered as dtc's only sub-controller as EMCO's sdewan example does: server
// app swc-server on cluster1 (inbound intent "serverin", edgeCNF sdewan) and its client
// swc-client on cluster2. cluster1 gets the kv-pairs given. The clean-up terminates the
// DIG and removes the registrations and the kv-pairs, so later tests find the stack as it
// was.
type swcTrafficGroup struct {
	*deployment
	kvPairs string // the kv-pairs resource of cluster1, "" when none
}

func (g *swcTrafficGroup) tg() string      { return g.dig() + "/traffic-group-intents/tg" }
func (g *swcTrafficGroup) inbound() string { return g.tg() + "/inbound-intents/serverin" }

func newSwcTrafficGroup(t *testing.T, kv []map[string]any) *swcTrafficGroup {
	t.Helper()
	g := &swcTrafficGroup{deployment: newDeployment(t,
		app{name: "swc-server", chart: webChart("swc-server"), placement: clusterNamed("cluster1")},
		app{name: "swc-client", chart: webChart("swc-client"), placement: clusterNamed("cluster2")})}
	g.create()
	t.Cleanup(g.cleanUp)
	c := g.c
	if kv != nil {
		g.kvPairs = "/cluster-providers/" + provider + "/clusters/cluster1/kv-pairs/swc-" + g.project
		c.do("POST", "/cluster-providers/"+provider+"/clusters/cluster1/kv-pairs", res("swc-"+g.project, map[string]any{"kv": kv})).must(t, 201)
	}
	c.do("POST", "/controllers", res("dtc-"+g.project, map[string]any{"host": "dtc", "port": 9018, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/dtc-controllers", res("swc-"+g.project, map[string]any{"host": "swc", "port": 9000, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", g.dig()+"/traffic-group-intents", res("tg", nil)).must(t, 201)
	c.do("POST", g.tg()+"/inbound-intents", res("serverin", map[string]any{"app": "swc-server", "appLabel": "app=swc-server",
		"serviceName": "swc-server", "port": 80, "protocol": "TCP", "edgeCNF": "sdewan"})).must(t, 201)
	c.do("POST", g.inbound()+"/clients", res("client1", map[string]any{"app": "swc-client", "appLabel": "app=swc-client",
		"serviceName": "swc-client", "namespaces": []string{}, "cidrs": []string{}})).must(t, 201)
	c.do("POST", g.dig()+"/intents", res("dtc", map[string]any{"intent": map[string]string{"dtc-" + g.project: "tg"}})).must(t, 201)
	c.do("POST", g.dig()+"/approve", nil).must(t, 202)
	return g
}

func (g *swcTrafficGroup) cleanUp() {
	// A failed instance too; a refused instantiate left the DIG Approved, nothing to terminate.
	if s := g.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
		g.operate(lifecycle.OpTerminate)
		g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	}
	paths := []string{g.inbound() + "/clients/client1", g.inbound(), g.tg(), g.dig() + "/intents/dtc",
		"/dtc-controllers/swc-" + g.project, "/controllers/dtc-" + g.project}
	if g.kvPairs != "" {
		paths = append(paths, g.kvPairs)
	}
	for _, p := range paths {
		if r := g.c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
			g.t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
		}
	}
}

// sdewanObject reads an SD-EWAN object in "default" of a cluster (nil when absent).
func sdewanObject(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, name string) map[string]any {
	t.Helper()
	o, err := dynClient(t, cl).Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatalf("%s: read %s %s: %v", cl.Name, gvr.Resource, name, err)
	}
	return o.Object
}

var sdewanKV = []map[string]any{{"SdewanCnfPort": "12354"}, {"SdewanServicePort": "31333"}, {"SdewanServiceAllowedCidr": "192.168.22.22/24"}}

// EMCO's sdewan example on two clusters: after instantiate, cluster1 (the server's) has
// CNFService swc-server.default.svc.cluster.local forwarding its kv-pairs' CNF port to the
// service port for the allowed CIDR, deployed with the server app; cluster2 (the
// client's) has SdewanApplication swc-server selecting the server's pods, deployed with
// the client app. Terminate removes both.
func TestDTCSWCPutsEMCOsSdewanObjectsOnTheServerAndClientClusters(t *testing.T) {
	g := newSwcTrafficGroup(t, sdewanKV)
	c1, c2 := stack.Clusters[0], stack.Clusters[1]
	const fqdn = "swc-server.default.svc.cluster.local"

	acc := g.operate(lifecycle.OpInstantiate)
	s := g.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	for _, o := range []struct {
		cl        *devstack.Cluster
		gvr       schema.GroupVersionResource
		name, app string
		spec      map[string]any
	}{
		{c1, cnfServices, fqdn, "swc-server", map[string]any{"fullname": fqdn, "port": "12354", "dport": "31333", "cidr": "192.168.22.22/24"}},
		{c2, sdewanApplications, "swc-server", "swc-client", map[string]any{"appNamespace": "default",
			"podSelector": map[string]any{"matchLabels": map[string]any{"app": "swc-server"}}, "servicePort": "31333", "cnfPort": "12354"}},
	} {
		obj := sdewanObject(t, o.cl, o.gvr, o.name)
		if obj == nil {
			t.Fatalf("%s has no %s %s; status %s", o.cl.Name, o.gvr.Resource, o.name, pretty(s))
		}
		if !equality.Semantic.DeepEqual(obj["spec"], o.spec) {
			t.Errorf("%s %s on %s: spec\n got %s\nwant %s", o.gvr.Resource, o.name, o.cl.Name, pretty(obj["spec"]), pretty(o.spec))
		}
		labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["sdewanPurpose"] != "base" {
			t.Errorf("%s %s on %s: labels %v, want sdewanPurpose=base", o.gvr.Resource, o.name, o.cl.Name, labels)
		}
		if id := labels[lifecycle.DeploymentIDLabel]; id != acc.ContextID+"-"+o.app {
			t.Errorf("%s %s carries %s=%v, want it deployed with app %s of instance %s", o.gvr.Resource, o.name,
				lifecycle.DeploymentIDLabel, id, o.app, acc.ContextID)
		}
	}
	if sdewanObject(t, c2, cnfServices, fqdn) != nil || sdewanObject(t, c1, sdewanApplications, "swc-server") != nil {
		t.Error("a CNFService on the client's cluster or a SdewanApplication on the server's")
	}

	g.operate(lifecycle.OpTerminate)
	g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	eventually(t, "the SD-EWAN objects gone", time.Minute, func() error {
		if sdewanObject(t, c1, cnfServices, fqdn) != nil || sdewanObject(t, c2, sdewanApplications, "swc-server") != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// The server's cluster lacks the kv-pair SdewanServiceAllowedCidr: instantiate fails
// before anything is applied, and the DIG's status names the intent, the cluster and the
// key.
func TestDTCSWCRefusesAServerClusterWithoutItsKvPairs(t *testing.T) {
	g := newSwcTrafficGroup(t, sdewanKV[:2])
	acc := g.operate(lifecycle.OpInstantiate)
	s := g.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	for _, part := range []string{`traffic group intent "tg", inbound intent "serverin"`, "cluster " + provider + "+cluster1",
		"lacks kv-pair SdewanServiceAllowedCidr"} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("status error %q does not say %s", s.Error, part)
		}
	}
	if n := s.RsyncStatus[lifecycle.ResApplied]; n != 0 {
		t.Errorf("rsync-status %v, want nothing applied", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters {
		for _, a := range []string{"swc-server", "swc-client"} {
			if objs := objectsOf(t, cl, acc.ContextID, a); len(objs) > 0 {
				t.Errorf("%s has %v of %s, want nothing", cl.Name, objs, a)
			}
		}
	}
	t.Log("refused:", s.Error)
}
