package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

// npsTrafficGroup is a deployment whose DIG names dtc with traffic group intent "tg",
// with nps registered as dtc's only sub-controller as EMCO's network_policy example does,
// and cluster1 alone labelled networkpolicy-supported. The clean-up terminates the DIG and
// removes the registrations and the label, so later tests find the stack as it was.
type npsTrafficGroup struct {
	*deployment
	clients []string // created under inbound intent "serverin", for clean-up
}

func (g *npsTrafficGroup) tg() string      { return g.dig() + "/traffic-group-intents/tg" }
func (g *npsTrafficGroup) inbound() string { return g.tg() + "/inbound-intents/serverin" }

func newNpsTrafficGroup(t *testing.T, protocol string) *npsTrafficGroup {
	t.Helper()
	g := &npsTrafficGroup{deployment: newDeployment(t,
		app{name: "nps-server", chart: webChart("nps-server"), placement: clusterLabel("edge")},
		app{name: "nps-client", chart: webChart("nps-client"), placement: clusterNamed("cluster2")},
		app{name: "nps-other", chart: webChart("nps-other"), placement: clusterNamed("cluster2")})}
	g.create()
	t.Cleanup(g.cleanUp)
	c, label := g.c, "/cluster-providers/"+provider+"/clusters/cluster1/labels"
	c.do("POST", label, map[string]string{"clusterLabel": "networkpolicy-supported"}).must(t, 201)
	c.do("POST", "/controllers", res("dtc-"+g.project, map[string]any{"host": "dtc", "port": 9018, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/dtc-controllers", res("nps-"+g.project, map[string]any{"host": "nps", "port": 9000, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", g.dig()+"/traffic-group-intents", res("tg", nil)).must(t, 201)
	c.do("POST", g.tg()+"/inbound-intents", res("serverin", map[string]any{"app": "nps-server", "appLabel": "app=nps-server",
		"serviceName": "nps-server", "port": 3333, "protocol": protocol, "serviceMesh": "none"})).must(t, 201)
	g.addClient("nps-client")
	c.do("POST", g.dig()+"/intents", res("dtc", map[string]any{"intent": map[string]string{"dtc-" + g.project: "tg"}})).must(t, 201)
	c.do("POST", g.dig()+"/approve", nil).must(t, 202)
	return g
}

// addClient lets an app (its pods, by label app=<name>) reach the server.
func (g *npsTrafficGroup) addClient(name string) {
	g.c.do("POST", g.inbound()+"/clients", res(name, map[string]any{"app": name, "appLabel": "app=" + name,
		"serviceName": name, "namespaces": []string{}, "cidrs": []string{"10.20.0.0/16"}})).must(g.t, 201)
	g.clients = append(g.clients, name)
}

func (g *npsTrafficGroup) cleanUp() {
	// A failed instance too; a refused instantiate left the DIG Approved, nothing to terminate.
	if s := g.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
		g.operate(lifecycle.OpTerminate)
		g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	}
	var paths []string
	for _, cl := range g.clients {
		paths = append(paths, g.inbound()+"/clients/"+cl)
	}
	paths = append(paths, g.inbound(), g.tg(), g.dig()+"/intents/dtc", "/dtc-controllers/nps-"+g.project, "/controllers/dtc-"+g.project,
		"/cluster-providers/"+provider+"/clusters/cluster1/labels/networkpolicy-supported")
	for _, p := range paths {
		if r := g.c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
			g.t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
		}
	}
}

// liveNetworkPolicy reads a NetworkPolicy in "default" of a cluster (nil when absent).
func liveNetworkPolicy(t *testing.T, cl *devstack.Cluster, name string) *networkingv1.NetworkPolicy {
	t.Helper()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	np, err := cs.NetworkingV1().NetworkPolicies("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return np
}

// npsSpec is what EMCO's nps makes of inbound intent serverin (app=nps-server, TCP 3333,
// externalSupport false) and its clients, without EMCO's two bugs: the port and its
// protocol are one entry (EMCO: two, opening every TCP port) and there is no ipBlock
// 0.0.0.0/0 (EMCO adds it without externalSupport, admitting every source). The clients'
// CIDRs stay out, as in EMCO, since externalSupport is false.
func npsSpec(clients ...string) networkingv1.NetworkPolicySpec {
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(3333)
	var from []networkingv1.NetworkPolicyPeer
	for _, c := range clients {
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": c}}})
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "nps-server"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: from, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}}},
	}
}

// The server app runs on cluster1 and cluster2, its client on cluster2; only cluster1
// is labelled networkpolicy-supported. After instantiate, cluster1 has NetworkPolicy
// tg-serverin admitting the client's pods to the server's on TCP 3333, deployed with the
// server app; cluster2 has none. An update adding a second client admits both; terminate
// removes the policy.
func TestDTCNPSPolicyFollowsTheTrafficGroupThroughUpdateAndTerminate(t *testing.T) {
	g := newNpsTrafficGroup(t, "TCP")
	c1, c2 := stack.Clusters[0], stack.Clusters[1]

	acc := g.operate(lifecycle.OpInstantiate)
	s := g.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	np := liveNetworkPolicy(t, c1, "tg-serverin")
	if np == nil {
		t.Fatalf("cluster1 has no NetworkPolicy tg-serverin; status %s", pretty(s))
	}
	if want := npsSpec("nps-client"); !equality.Semantic.DeepEqual(np.Spec, want) {
		t.Errorf("NetworkPolicy tg-serverin on cluster1:\n got %s\nwant %s", pretty(np.Spec), pretty(want))
	}
	if id := np.Labels[lifecycle.DeploymentIDLabel]; id != acc.ContextID+"-nps-server" {
		t.Errorf("the NetworkPolicy carries %s=%q, want it deployed with app nps-server of instance %s", lifecycle.DeploymentIDLabel, id, acc.ContextID)
	}
	if liveNetworkPolicy(t, c2, "tg-serverin") != nil {
		t.Error("cluster2, not labelled networkpolicy-supported, has the NetworkPolicy")
	}

	g.addClient("nps-other")
	g.update("update", nil)
	if np = liveNetworkPolicy(t, c1, "tg-serverin"); np == nil {
		t.Fatal("after the update, cluster1 has no NetworkPolicy tg-serverin")
	}
	if want := npsSpec("nps-client", "nps-other"); !equality.Semantic.DeepEqual(np.Spec, want) {
		t.Errorf("after the update, NetworkPolicy tg-serverin:\n got %s\nwant %s", pretty(np.Spec), pretty(want))
	}

	g.operate(lifecycle.OpTerminate)
	g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	eventually(t, "NetworkPolicy gone from cluster1", time.Minute, func() error {
		if liveNetworkPolicy(t, c1, "tg-serverin") != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// An inbound intent with protocol HTTP, which a NetworkPolicy cannot carry: instantiate
// fails before anything is applied, and the DIG's status says which intent and why.
func TestDTCNPSRefusesAProtocolNetworkPolicyCannotCarry(t *testing.T) {
	g := newNpsTrafficGroup(t, "HTTP")
	acc := g.operate(lifecycle.OpInstantiate)
	s := g.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	want := `traffic group intent "tg", inbound intent "serverin": spec.protocol "HTTP": a NetworkPolicy carries TCP, UDP, SCTP only`
	if !strings.Contains(s.Error, want) {
		t.Errorf("status error %q does not say %q", s.Error, want)
	}
	if n := s.RsyncStatus[lifecycle.ResApplied]; n != 0 {
		t.Errorf("rsync-status %v, want nothing applied", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters {
		for _, a := range []string{"nps-server", "nps-client"} {
			if objs := objectsOf(t, cl, acc.ContextID, a); len(objs) > 0 {
				t.Errorf("%s has %v of %s, want nothing", cl.Name, objs, a)
			}
		}
		if liveNetworkPolicy(t, cl, "tg-serverin") != nil {
			t.Errorf("%s has NetworkPolicy tg-serverin", cl.Name)
		}
	}
	t.Log("refused:", s.Error)
}
