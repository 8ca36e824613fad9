package sds

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/appctx"
)

const (
	c1 = "local+cluster1"
	c2 = "local+cluster2"
	c3 = "local+cluster3"
)

func inbound(name, server, service string, clients ...string) dtc.Inbound {
	isi := dtc.Inbound{Name: name, Spec: dtc.InboundSpec{App: server, AppLabel: "app=" + server, ServiceName: service, Port: 80, Protocol: "TCP"}}
	for _, c := range clients {
		isi.Clients = append(isi.Clients, dtc.Client{Name: c, Spec: dtc.ClientSpec{App: c, AppLabel: "app=" + c}})
	}
	return isi
}

func TestDiscoveries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inbound []dtc.Inbound
		placed  map[string][]string
		want    []discovery
	}{{
		name:    "a client away from the server gets the entry",
		inbound: []dtc.Inbound{inbound("serverin", "server", "web", "client")},
		placed:  map[string][]string{"server": {c1}, "client": {c2}},
		want:    []discovery{{Inbound: "serverin", Service: "web", Servers: []string{c1}, Targets: []string{c2}}},
	}, {
		name:    "clusters running the server get none; clients on one cluster share it",
		inbound: []dtc.Inbound{inbound("serverin", "server", "web", "a", "b")},
		placed:  map[string][]string{"server": {c2, c1}, "a": {c1, c3}, "b": {c3, c2}},
		want:    []discovery{{Inbound: "serverin", Service: "web", Servers: []string{c1, c2}, Targets: []string{c3}}},
	}, {
		name:    "clients beside the server only: nothing to do",
		inbound: []dtc.Inbound{inbound("serverin", "server", "web", "client")},
		placed:  map[string][]string{"server": {c1}, "client": {c1}},
	}, {
		name:    "a client without an app name is left out, as EMCO leaves it",
		inbound: []dtc.Inbound{inbound("serverin", "server", "web", "")},
		placed:  map[string][]string{"server": {c1}, "": {c2}},
	}, {
		name:    "a server placed nowhere: nothing to point at",
		inbound: []dtc.Inbound{inbound("serverin", "server", "web", "client")},
		placed:  map[string][]string{"server": nil, "client": {c2}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, discoveries(&dtc.TrafficGroup{Name: "tg", Inbound: tc.inbound}, tc.placed))
		})
	}
}

func node(name string, addrs ...corev1.NodeAddress) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

var (
	hostname = corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-a"}
	internal = corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.244.0.1"}
)

func service(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Type: typ, Ports: ports}}
}

func TestAddressOf(t *testing.T) {
	http := corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}
	lb := service(corev1.ServiceTypeLoadBalancer, http)
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example"}, {IP: "192.0.2.7"}}
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		nodes []corev1.Node
		want  address
		err   string
	}{{
		name: "NodePort: the first node's InternalIP at the node port", svc: service(corev1.ServiceTypeNodePort, http),
		nodes: []corev1.Node{node("z", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}), node("a", hostname, internal)},
		want:  address{Cluster: c1, IP: "10.244.0.1", Ports: []corev1.ServicePort{http}, Reach: []int32{30080}},
	}, {
		name: "NodePort on a node without an InternalIP: its first address", svc: service(corev1.ServiceTypeNodePort, http),
		nodes: []corev1.Node{node("a", hostname)},
		want:  address{Cluster: c1, IP: "node-a", Ports: []corev1.ServicePort{http}, Reach: []int32{30080}},
	}, {
		name: "LoadBalancer: the first ingress IP at the Service's port", svc: lb,
		want: address{Cluster: c1, IP: "192.0.2.7", Ports: []corev1.ServicePort{http}, Reach: []int32{80}},
	}, {
		name: "LoadBalancer without an IP yet", svc: service(corev1.ServiceTypeLoadBalancer, http), err: "no LoadBalancer ingress IP yet",
	}, {
		name: "ClusterIP cannot be reached from another cluster", svc: service("", http), err: "of type ClusterIP, neither NodePort nor LoadBalancer",
	}, {
		name: "a NodePort cluster without nodes", svc: service(corev1.ServiceTypeNodePort, http), err: "no node",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := addressOf(c1, tc.svc, tc.nodes)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The entry is EMCO's headless Service and Endpoints, labelled to be found again.
func TestEntryFor(t *testing.T) {
	o := owner{Instance: "ctx1", DIG: "/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig"}
	d := discovery{Inbound: "serverin", Service: "web", Servers: []string{c1, c2}, Targets: []string{c3}}
	ports := []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}}
	e := entryFor(o, d, "ns1", []address{
		{Cluster: c1, IP: "10.244.0.1", Ports: ports, Reach: []int32{30080}},
		{Cluster: c2, IP: "10.244.0.2", Ports: ports, Reach: []int32{30081}},
	})
	meta := `"name":"web","namespace":"ns1","labels":{"app.kubernetes.io/managed-by":"temco-sds","sds.temco.io/instance":"ctx1"},
		"annotations":{"sds.temco.io/deployment-intent-group":"/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig","sds.temco.io/inbound-intent":"serverin"}`
	for _, tc := range []struct {
		obj  any
		want string
	}{{e.Service, `{"kind":"Service","apiVersion":"v1","metadata":{` + meta + `},
		"spec":{"ports":[{"name":"80","protocol":"TCP","port":80,"targetPort":80}],"clusterIP":"None","type":"ClusterIP","sessionAffinity":"None"}}`,
	}, {e.Endpoints, `{"kind":"Endpoints","apiVersion":"v1","metadata":{` + meta + `},"subsets":[
		{"addresses":[{"ip":"10.244.0.1"}],"ports":[{"name":"80","port":30080,"protocol":"TCP"}]},
		{"addresses":[{"ip":"10.244.0.2"}],"ports":[{"name":"80","port":30081,"protocol":"TCP"}]}]}`,
	}} {
		got, err := json.Marshal(tc.obj)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(got))
	}
}

// fakeSources serves a traffic group and fake clusters.
type fakeSources struct {
	group    *dtc.TrafficGroup
	clusters map[string]*fake.Clientset
	previous []string // clusters of the replaced context
}

func (f *fakeSources) Group(context.Context, contract.Input) (*dtc.TrafficGroup, error) {
	return f.group, nil
}
func (f *fakeSources) Context(_ context.Context, id string) (*appctx.Context, error) {
	return &appctx.Context{ID: id, Instance: "ctx1", Namespace: "default"}, nil
}
func (f *fakeSources) Clusters(context.Context, string) ([]string, error) { return f.previous, nil }
func (f *fakeSources) Client(_ context.Context, cluster string) (kubernetes.Interface, error) {
	return f.clusters[cluster], nil
}

func newCluster(objs ...runtime.Object) *fake.Clientset {
	n := node("kwok-node", internal)
	return fake.NewClientset(append(objs, &n)...)
}

func entries(t *testing.T, cs *fake.Clientset) (svcs, eps []string) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: managedByLabel + "=" + managedBy}
	s, err := cs.CoreV1().Services("").List(context.Background(), sel)
	require.NoError(t, err)
	for _, x := range s.Items {
		svcs = append(svcs, x.Namespace+"/"+x.Name)
	}
	e, err := cs.CoreV1().Endpoints("").List(context.Background(), sel)
	require.NoError(t, err)
	for _, x := range e.Items {
		eps = append(eps, x.Namespace+"/"+x.Name)
	}
	return svcs, eps
}

// Finished puts the entry on the client's cluster, an update that moves the client
// moves it, and Terminate removes it.
func TestFinishedConvergesAndTerminateRemoves(t *testing.T) {
	server := service(corev1.ServiceTypeNodePort, corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080})
	src := &fakeSources{group: &dtc.TrafficGroup{Name: "tg", Inbound: []dtc.Inbound{inbound("serverin", "server", "web", "client")}},
		clusters: map[string]*fake.Clientset{c1: newCluster(server), c2: newCluster(), c3: newCluster()}}
	ctrl := &controller{src: src}
	view := func(op, prev, clientOn string) *contracttest.Fake {
		return &contracttest.Fake{In: contract.Input{Operation: op, Hook: contract.HookFinished, ContextID: "ctx", PreviousContextID: prev},
			AppList: []contract.App{{Name: "server", Clusters: []string{c1}}, {Name: "client", Clusters: []string{clientOn}}}}
	}
	ctx := context.Background()

	require.NoError(t, ctrl.Finished(ctx, view(contract.OpInstantiate, "", c2)))
	svcs, eps := entries(t, src.clusters[c2])
	assert.Equal(t, []string{"default/web"}, svcs)
	assert.Equal(t, []string{"default/web"}, eps)
	got, err := src.clusters[c2].CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "10.244.0.1", got.Subsets[0].Addresses[0].IP)
	assert.Equal(t, int32(30080), got.Subsets[0].Ports[0].Port)
	for _, cl := range []string{c1, c3} {
		svcs, _ := entries(t, src.clusters[cl])
		assert.Empty(t, svcs, cl)
	}

	// The client moves to cluster3: the update's Finished sweeps cluster2, which only the
	// replaced context had.
	src.previous = []string{c1, c2}
	require.NoError(t, ctrl.Finished(ctx, view(contract.OpUpdate, "ctx0", c3)))
	svcs, eps = entries(t, src.clusters[c2])
	assert.Empty(t, svcs)
	assert.Empty(t, eps)
	svcs, _ = entries(t, src.clusters[c3])
	assert.Equal(t, []string{"default/web"}, svcs)

	src.previous = nil
	v := view(contract.OpTerminate, "", c3)
	v.In.Hook = contract.HookTerminate
	require.NoError(t, ctrl.Terminate(ctx, v))
	svcs, eps = entries(t, src.clusters[c3])
	assert.Empty(t, svcs)
	assert.Empty(t, eps)
	_, err = src.clusters[c1].CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	assert.NoError(t, err, "the server's own Service stays")
}

// A server whose Service cannot be reached from other clusters: Finished says why and
// leaves an entry it made before in place.
func TestFinishedKeepsEntriesWhoseServerCannotBeRead(t *testing.T) {
	src := &fakeSources{group: &dtc.TrafficGroup{Name: "tg", Inbound: []dtc.Inbound{inbound("serverin", "server", "web", "client")}},
		clusters: map[string]*fake.Clientset{c1: newCluster(service("", corev1.ServicePort{Port: 80})), c2: newCluster()}}
	ctrl := &controller{src: src}
	o := owner{Instance: "ctx1"}
	old := entryFor(o, discovery{Service: "web"}, "default", []address{{IP: "10.244.0.1", Ports: []corev1.ServicePort{{Port: 80}}, Reach: []int32{30080}}})
	_, err := src.clusters[c2].CoreV1().Services("default").Apply(context.Background(), old.Service, metav1.ApplyOptions{FieldManager: FieldManager})
	require.NoError(t, err)
	v := &contracttest.Fake{In: contract.Input{Operation: contract.OpUpdate, Hook: contract.HookFinished, ContextID: "ctx"},
		AppList: []contract.App{{Name: "server", Clusters: []string{c1}}, {Name: "client", Clusters: []string{c2}}}}
	err = ctrl.Finished(context.Background(), v)
	assert.ErrorContains(t, err, `inbound intent "serverin": Service default/web on local+cluster1 is of type ClusterIP`)
	svcs, _ := entries(t, src.clusters[c2])
	assert.Equal(t, []string{"default/web"}, svcs)
}

// Run refuses apps the composite app does not have, before anything is applied.
func TestRunRefusesUnknownApps(t *testing.T) {
	for _, tc := range []struct {
		isi  dtc.Inbound
		want string
	}{
		{inbound("serverin", "nosuch", "web", "client"), `inbound intent "serverin": server app "nosuch"`},
		{inbound("serverin", "server", "web", "nosuch"), `client "nosuch": app "nosuch"`},
	} {
		ctrl := &controller{src: &fakeSources{group: &dtc.TrafficGroup{Name: "tg", Inbound: []dtc.Inbound{tc.isi}}}}
		v := &contracttest.Fake{In: contract.Input{Operation: contract.OpInstantiate},
			AppList: []contract.App{{Name: "server", Clusters: []string{c1}}, {Name: "client", Clusters: []string{c2}}}}
		err := ctrl.Run(context.Background(), v)
		var r *contract.Refusal
		require.ErrorAs(t, err, &r)
		assert.Contains(t, err.Error(), tc.want)
		assert.Empty(t, v.Edits)
	}
}
