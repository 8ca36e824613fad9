package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// nodePortChart is webChart with a NodePort Service: the kube-apiserver gives it its node
// port when it is applied.
func nodePortChart(name string) []byte {
	return testenv.Chart(name, "", map[string]string{"all.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Chart.Name }}}}
  template:
    metadata: {labels: {app: {{ .Chart.Name }}}}
    spec:
      containers: [{name: main, image: registry.local/{{ .Chart.Name }}:1}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Chart.Name }}
spec:
  type: NodePort
  selector: {app: {{ .Chart.Name }}}
  ports: [{port: 3333, protocol: TCP}]
`})
}

// sdsTrafficGroup is a deployment whose DIG names dtc with traffic group intent "tg",
// with sds registered as dtc's only sub-controller as EMCO's service discovery example
// does: server app sds-server (a NodePort Service) on cluster1, inbound intent "serverin"
// for its Service, and client sds-client on cluster2. The clean-up terminates the DIG and
// removes the registrations.
type sdsTrafficGroup struct{ *deployment }

func (g *sdsTrafficGroup) tg() string      { return g.dig() + "/traffic-group-intents/tg" }
func (g *sdsTrafficGroup) inbound() string { return g.tg() + "/inbound-intents/serverin" }

func newSdsTrafficGroup(t *testing.T) *sdsTrafficGroup {
	t.Helper()
	g := &sdsTrafficGroup{newDeployment(t,
		app{name: "sds-server", chart: nodePortChart("sds-server"), placement: clusterNamed("cluster1")},
		app{name: "sds-client", chart: webChart("sds-client"), placement: clusterNamed("cluster2")})}
	g.create()
	t.Cleanup(g.cleanUp)
	c := g.c
	c.do("POST", "/controllers", res("dtc-"+g.project, map[string]any{"host": "dtc", "port": 9018, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/dtc-controllers", res("sds-"+g.project, map[string]any{"host": "sds", "port": 9000, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", g.dig()+"/traffic-group-intents", res("tg", nil)).must(t, 201)
	c.do("POST", g.tg()+"/inbound-intents", res("serverin", map[string]any{"app": "sds-server", "appLabel": "app=sds-server",
		"serviceName": "sds-server", "port": 3333, "protocol": "TCP"})).must(t, 201)
	c.do("POST", g.inbound()+"/clients", res("client1", map[string]any{"app": "sds-client", "appLabel": "app=sds-client",
		"serviceName": "sds-client", "namespaces": []string{}, "cidrs": []string{}})).must(t, 201)
	c.do("POST", g.dig()+"/intents", res("dtc", map[string]any{"intent": map[string]string{"dtc-" + g.project: "tg"}})).must(t, 201)
	c.do("POST", g.dig()+"/approve", nil).must(t, 202)
	return g
}

func (g *sdsTrafficGroup) cleanUp() {
	if s := g.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
		g.operate(lifecycle.OpTerminate)
		g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	}
	for _, p := range []string{g.inbound() + "/clients/client1", g.inbound(), g.tg(), g.dig() + "/intents/dtc",
		"/dtc-controllers/sds-" + g.project, "/controllers/dtc-" + g.project} {
		if r := g.c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
			g.t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
		}
	}
}

// discoveryEntry reads the Service and Endpoints named name in "default" of a cluster (nil
// when absent).
func discoveryEntry(cl *devstack.Cluster, name string) (*corev1.Service, *corev1.Endpoints, error) {
	cs, err := cl.Clientset()
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	svc, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc = nil
	} else if err != nil {
		return nil, nil, err
	}
	eps, err := cs.CoreV1().Endpoints("default").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		eps = nil
	} else if err != nil {
		return nil, nil, err
	}
	return svc, eps, nil
}

// checkEntry fails unless cl holds sds's headless Service sds-server with Endpoints at the
// server's node address and node port.
func checkEntry(cl *devstack.Cluster, ip string, nodePort int32) func() error {
	return func() error {
		svc, eps, err := discoveryEntry(cl, "sds-server")
		if err != nil {
			return err
		}
		if svc == nil || eps == nil {
			return fmt.Errorf("%s has Service %v, Endpoints %v", cl.Name, svc != nil, eps != nil)
		}
		switch {
		case svc.Labels["app.kubernetes.io/managed-by"] != "temco-sds":
			return fmt.Errorf("Service sds-server on %s is not sds's: labels %v", cl.Name, svc.Labels)
		case svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Type != corev1.ServiceTypeClusterIP ||
			svc.Spec.SessionAffinity != corev1.ServiceAffinityNone || len(svc.Spec.Ports) != 1:
			return fmt.Errorf("Service sds-server on %s is not EMCO's headless Service: %s", cl.Name, pretty(svc.Spec))
		case svc.Spec.Ports[0].Name != "3333" || svc.Spec.Ports[0].Port != 3333 || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP ||
			svc.Spec.Ports[0].TargetPort.IntValue() != 3333:
			return fmt.Errorf("Service sds-server on %s: port %s", cl.Name, pretty(svc.Spec.Ports[0]))
		case len(eps.Subsets) != 1 || len(eps.Subsets[0].Addresses) != 1 || len(eps.Subsets[0].Ports) != 1:
			return fmt.Errorf("Endpoints sds-server on %s: %s", cl.Name, pretty(eps.Subsets))
		case eps.Subsets[0].Addresses[0].IP != ip || eps.Subsets[0].Ports[0].Port != nodePort || eps.Subsets[0].Ports[0].Name != "3333":
			return fmt.Errorf("Endpoints sds-server on %s: %s, want %s:%d", cl.Name, pretty(eps.Subsets), ip, nodePort)
		}
		return nil
	}
}

func noEntry(cl *devstack.Cluster) func() error {
	return func() error {
		if svc, eps, err := discoveryEntry(cl, "sds-server"); err != nil {
			return err
		} else if svc != nil || eps != nil {
			return fmt.Errorf("%s still has Service %v, Endpoints %v", cl.Name, svc != nil, eps != nil)
		}
		return nil
	}
}

// EMCO's service discovery example on the local clusters: once instantiated, cluster2
// (the client's) resolves sds-server through a headless Service whose Endpoints are
// cluster1's node address at the node port the kube-apiserver gave the server's NodePort
// Service; cluster1 keeps the server's own Service. An update moving the client to
// cluster3 moves the entry there; terminate removes it.
func TestDTCSDSPointsTheClientsClusterAtTheServersNodePort(t *testing.T) {
	g := newSdsTrafficGroup(t)
	c1, c2, c3 := stack.Clusters[0], stack.Clusters[1], stack.Clusters[2]

	g.operate(lifecycle.OpInstantiate)
	g.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	server, _, err := discoveryEntry(c1, "sds-server")
	if err != nil {
		t.Fatal(err)
	}
	if server == nil || server.Spec.Type != corev1.ServiceTypeNodePort || server.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("cluster1 has no NodePort Service sds-server with its node port: %v", server)
	}
	nodePort := server.Spec.Ports[0].NodePort
	cs, err := c1.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("cluster1's nodes: %v %v", nodes, err)
	}
	var ip string
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	eventually(t, "cluster2's entry for sds-server", time.Minute, checkEntry(c2, ip, nodePort))
	if err := noEntry(c3)(); err != nil {
		t.Error("cluster3, which runs no client:", err)
	}
	t.Logf("cluster2 resolves sds-server at %s:%d", ip, nodePort)

	g.c.do("PUT", g.dig()+"/generic-placement-intents/gpi/app-intents/sds-client-placement", res("sds-client-placement",
		map[string]any{"app": "sds-client", "intent": clusterNamed("cluster3")})).must(t, 200)
	g.update("update", nil)
	eventually(t, "the entry moved to cluster3", time.Minute, checkEntry(c3, ip, nodePort))
	eventually(t, "the entry gone from cluster2", time.Minute, noEntry(c2))

	g.operate(lifecycle.OpTerminate)
	g.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	eventually(t, "the entry gone from cluster3", time.Minute, noEntry(c3))
}
